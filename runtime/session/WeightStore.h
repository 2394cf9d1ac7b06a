//===- WeightStore.h - weights in the form compiled code takes ---*- C++ -*-===//
//
// Compiled functions take their weights as arguments named after tensors
// (ArgSpec). Float32 weights are the model's views (memory-mapped, zero
// copy); a merged projection "a|b|c" is its parts' rows concatenated;
// float16 and int8 arguments (tfm-quantize) are converted once here:
// int8 per output row (runtime/kernels/Quantize.h), or taken as stored when
// the weights file holds pre-quantized I8 tensors. Built before any call,
// then read-only: every call frame of every thread binds the same data.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_WEIGHTSTORE_H
#define RUNTIME_SESSION_WEIGHTSTORE_H

#include "frontends/model/Model.h"
#include "frontends/model/PageMemory.h"
#include "runtime/session/CompiledModel.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tfmc::runtime {

class WeightStore {
public:
  explicit WeightStore(const frontend::Model &model) : model(model) {}
  ~WeightStore();
  WeightStore(const WeightStore &) = delete;
  WeightStore &operator=(const WeightStore &) = delete;

  /// Builds what the weight arguments of `fn` need (once per name). Fails
  /// when a weight does not fit float16.
  llvm::Error prepare(const CompiledFunction &fn);
  /// The data of weight (or weight-scale) argument `arg`; prepared first.
  const void *data(const ArgSpec &arg) const;
  /// Bytes held in converted or packed copies (not the mapped file).
  int64_t ownedBytes() const;
  /// Whether any prepared argument binds `data` itself (a view's float32
  /// data read in place by compiled code or kernels). Views it does not
  /// bind were only read while preparing (merged, halved, quantized).
  bool binds(const void *data) const { return bound.count(data) != 0; }
  /// Refuses further prepare() calls: the model's float32 copies that no
  /// argument binds may be freed after this.
  void seal() { sealed = true; }

private:
  struct Int8Weight {
    const int8_t *values = nullptr;
    const float *scales = nullptr;
    pages::Vector<int8_t> ownedValues;
    std::vector<float> ownedScales;
  };
  /// float32 rows of "a|b|c" concatenated (a plain name: the view's data).
  std::vector<const frontend::TensorView *> parts(llvm::StringRef name) const;

  const frontend::Model &model;
  std::map<std::string, pages::Vector<float>> packed;
  std::map<std::string, pages::Vector<uint16_t>> halves;
  /// bfloat16 weights (compute type bfloat16), rounded at load.
  std::map<std::string, pages::Vector<uint16_t>> bfloats;
  std::map<std::string, Int8Weight> int8;
  /// Every weight and weight-scale address handed out (released from the
  /// kernels' caches, which hold packed copies of the weights).
  std::set<const void *> bound;
  bool sealed = false;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_WEIGHTSTORE_H
