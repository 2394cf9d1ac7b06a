//===- SafeTensorsWriter.h - write a safetensors file -----------*- C++ -*-===//
#ifndef FRONTENDS_MODEL_SAFETENSORSWRITER_H
#define FRONTENDS_MODEL_SAFETENSORSWRITER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::frontend {

/// One tensor to write: little-endian bytes of `dtype` ("F32", "F16",
/// "BF16", "I8") with `shape`.
struct TensorBytes {
  std::string name, dtype;
  std::vector<int64_t> shape;
  llvm::ArrayRef<char> bytes;
};

/// Writes the tensors in order (header padded to 8 bytes, data aligned),
/// through a temporary file renamed into place.
llvm::Error writeSafeTensors(llvm::StringRef path,
                             llvm::ArrayRef<TensorBytes> tensors);

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_SAFETENSORSWRITER_H
