//===- SafeTensors.h - safetensors reader (mmap, zero-copy) -----*- C++ -*-===//
#ifndef FRONTENDS_MODEL_SAFETENSORS_H
#define FRONTENDS_MODEL_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tfmc::frontend {

/// A float32 view of one tensor. For F32 tensors `data` points into the
/// memory-mapped file (zero copy; the file must be 4-byte aligned there,
/// otherwise the tensor is copied); F16/BF16 tensors are converted on load
/// into storage owned by the SafeTensorsFile (or mapped from the weight
/// cache). An I8 matrix "W" is a
/// pre-quantized weight: its companion "W_scale" (F32, one per row) is
/// required, `data` holds the dequantized values and `int8`/`int8Scales`
/// the stored ones (so int8 inference needs no re-quantization).
struct TensorView {
  std::string name;
  std::string dtype; // as stored in the file: "F32", "F16", "BF16", "I8"
  std::vector<int64_t> shape;
  const float *data = nullptr;
  const int8_t *int8 = nullptr;
  const float *int8Scales = nullptr;
  int64_t numElements() const;
};

class SafeTensorsFile {
public:
  /// Opens and validates the file: header length within the file, valid JSON
  /// header, supported dtypes, shape × dtype size == byte span, offsets inside
  /// the data section, no overlapping spans. Errors name the file and tensor.
  /// With a `cacheDir`, the float32 copies of F16/BF16 tensors come from
  /// the weight cache there when it has them, and are stored there when it
  /// does not (WeightCache.h); its warnings go to `warnings` (stderr when
  /// null).
  static llvm::Expected<std::unique_ptr<SafeTensorsFile>>
  open(llvm::StringRef path, llvm::StringRef cacheDir = "",
       llvm::raw_ostream *warnings = nullptr);

  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile &) = delete;
  SafeTensorsFile &operator=(const SafeTensorsFile &) = delete;

  const std::string &path() const { return filePath; }
  /// Tensors in file-offset order.
  llvm::ArrayRef<TensorView> tensors() const { return views; }
  /// nullptr when absent.
  const TensorView *find(llvm::StringRef name) const;
  /// Frees the float32 copy made of tensor `name` at open (stored as F16,
  /// BF16, I8 or unaligned F32); its view's `data` becomes null, its
  /// `int8` values stay. Returns the bytes freed: 0 for a tensor read in
  /// place from the mapped file, absent, or already released.
  int64_t releaseFloatCopy(llvm::StringRef name);

private:
  SafeTensorsFile() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::string filePath;
  std::vector<TensorView> views;
};

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_SAFETENSORS_H
