# Finds oneDNN 2.x (Debian's libdnnl-dev) from its header and library and
# defines the imported target DNNL::dnnl.
#
# Why not `find_package(dnnl CONFIG)`: Debian builds libdnnl with the OpenCL
# GPU runtime, so its dnnl-config.cmake calls find_package(OpenCL REQUIRED)
# and fails unless the OpenCL headers (ocl-icd-opencl-dev, only a
# "Recommends" of libdnnl-dev) are installed. tfmc uses the CPU engine
# alone and needs none of that; finding the header and library directly
# keeps the dependency to what we use and checks what matters to us: the
# 2.x API (op descriptor -> primitive_desc), which 3.x removed.
#
# Sets OneDNN_FOUND, OneDNN_VERSION, OneDNN_INCLUDE_DIR, OneDNN_LIBRARY.

find_path(OneDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(OneDNN_LIBRARY NAMES dnnl)

if(OneDNN_INCLUDE_DIR AND EXISTS "${OneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${OneDNN_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _tfmc_dnnl_version_lines
       REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define DNNL_VERSION_${_part} +([0-9]+).*" "\\1"
           _tfmc_dnnl_${_part} "${_tfmc_dnnl_version_lines}")
  endforeach()
  set(OneDNN_VERSION "${_tfmc_dnnl_MAJOR}.${_tfmc_dnnl_MINOR}.${_tfmc_dnnl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OneDNN
  REQUIRED_VARS OneDNN_LIBRARY OneDNN_INCLUDE_DIR OneDNN_VERSION
  VERSION_VAR OneDNN_VERSION)

# The kernels are written against the 2.x API; 3.x removed it.
if(OneDNN_FOUND AND NOT OneDNN_VERSION VERSION_LESS 3)
  message(STATUS "oneDNN ${OneDNN_VERSION} found but tfmc needs the 2.x API: not used")
  set(OneDNN_FOUND FALSE)
endif()

if(OneDNN_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION "${OneDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OneDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(OneDNN_INCLUDE_DIR OneDNN_LIBRARY)
