//===- Npy.h - NumPy .npy (version 1.0) float32 arrays ----------*- C++ -*-===//
#ifndef RUNTIME_IO_NPY_H
#define RUNTIME_IO_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Writes a little-endian float32 C-order array.
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<float> values);

/// Reads a little-endian float32 C-order array written by NumPy or writeNpy.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

} // namespace tfmc::runtime

#endif // RUNTIME_IO_NPY_H
