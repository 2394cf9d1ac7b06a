#!/usr/bin/env bash
# Installs every Debian 12 package tfmc needs (only the missing ones), then
# configures and builds into build/. Safe to re-run.
#   scripts/setup.sh                 # toolchain + libraries, then build
#   scripts/setup.sh --reference     # also PyTorch/NumPy/SentencePiece/pytest
#                                    # for the reference (tfmc.reference), the converters
#                                    # and its tests, and training scripts
#   TFMC_SKIP_PACKAGES=1 scripts/setup.sh
#                                    # not Debian 12: you installed the
#                                    # equivalents yourself; just build
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*"; }

reference=0
for arg in "$@"; do
  case $arg in
    --reference) reference=1 ;;
    *) echo "setup: error: unknown argument '$arg' (only --reference)" >&2; exit 2 ;;
  esac
done

# Debian 12 package -> what it provides (printed on other systems).
packages=(
  "llvm-19-dev|LLVM 19 (LLVMConfig.cmake, ORC JIT)"
  "libmlir-19-dev|MLIR 19 libraries and headers (libMLIR.so)"
  "mlir-19-tools|mlir-tblgen, mlir-pdll (MLIR's CMake config checks for them)"
  "libdnnl-dev|oneDNN 2.x (2.6 on Debian 12), optional at build time"
  "libfmt-dev|fmt"
  "libgtest-dev|GoogleTest"
  "nlohmann-json3-dev|nlohmann-json"
  "libsentencepiece-dev|SentencePiece library and headers"
  "sentencepiece|SentencePiece command-line tools"
  "cmake|CMake >= 3.20"
  "ninja-build|Ninja"
  "clang-14|clang 14 (or any C++17 compiler)"
  "lld-14|lld 14 (optional, faster links)"
  "g++|g++ (C++ runtime and headers)"
  "python3|Python 3 (lit test runner)"
  "python3-dev|Python 3 headers (the tfmc Python module)"
  "pybind11-dev|pybind11 (the tfmc Python module)"
  "libcpp-httplib-dev|cpp-httplib (tfmc serve)"
  "graphviz|Graphviz dot (tfmc compile --emit=graph as SVG)"
)
# OpenBLAS: Debian's torch calls the generic libblas.so.3, and the reference
# BLAS behind it makes training matmuls ~20x slower.
if ((reference)); then
  packages+=(
    "python3-torch|PyTorch (reference oracle, training)"
    "python3-numpy|NumPy"
    "python3-sentencepiece|SentencePiece for Python"
    "libopenblas0-openmp|OpenBLAS (fast BLAS for PyTorch)"
    "python3-pytest|pytest (importer and Python module tests)"
    "python3-dask|Dask (python3 -m tfmc.dask and its tests)"
    "python3-distributed|Dask distributed (local clusters in the tests)"
  )
fi

# --- 1. packages --------------------------------------------------------------
os_id="" os_version=""
if [[ -r /etc/os-release ]]; then
  os_id=$(. /etc/os-release && echo "${ID:-}")
  os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
fi
if [[ "${TFMC_SKIP_PACKAGES:-0}" == 1 ]]; then
  say "[1/3] packages: skipped (TFMC_SKIP_PACKAGES=1)"
elif [[ "$os_id" != debian || "$os_version" != 12 ]] || ! command -v dpkg-query >/dev/null; then
  {
    echo "setup: error: this script installs Debian 12 packages, but this system is" \
         "'${os_id:-unknown} ${os_version:-?}'. tfmc needs (Debian 12 names):"
    for entry in "${packages[@]}"; do
      printf '  %-24s %s\n' "${entry%%|*}" "${entry#*|}"
    done
    echo "Install the equivalents, then run: TFMC_SKIP_PACKAGES=1 scripts/setup.sh"
  } >&2
  exit 1
else
  missing=()
  for entry in "${packages[@]}"; do
    p=${entry%%|*}
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]})); then
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    say "[1/3] packages: installing ${missing[*]}"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "[1/3] packages: all ${#packages[@]} present"
  fi
fi

# --- 2./3. configure and build -------------------------------------------------
scripts/build.sh

say "done; tools are in ${BUILD_DIR:-build}/bin. Next:"
echo "  echo \"我们明天去公园吧。\" | ${BUILD_DIR:-build}/bin/tfmc translate examples/zh-en/model.json"
echo "  scripts/test.sh            # build and run all tests"
