//===- WeightStore.cpp - weights in the form compiled code takes ----------===//
#include "runtime/session/WeightStore.h"

#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace tfmc;
using namespace tfmc::runtime;

WeightStore::~WeightStore() {
  // Library kernels keep packed or reordered copies keyed by the addresses
  // of the weights they were given.
  for (const void *weight : bound)
    releaseKernelWeights(weight);
}

std::vector<const frontend::TensorView *>
WeightStore::parts(llvm::StringRef name) const {
  llvm::SmallVector<llvm::StringRef> names;
  name.split(names, '|');
  std::vector<const frontend::TensorView *> views;
  for (llvm::StringRef n : names)
    views.push_back(&model.weight(n));
  return views;
}

llvm::Error WeightStore::prepare(const CompiledFunction &fn) {
  if (sealed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "function '%s' prepared after the "
                                   "session released unbound weights",
                                   fn.name.c_str());
  for (const ArgSpec &arg : fn.args) {
    if (arg.kind != ArgSpec::Kind::Weight)
      continue;
    std::vector<const frontend::TensorView *> views = parts(arg.name);
    // Copies are sized once: a growing vector would fault its pages in
    // again at every doubling.
    int64_t elements = 0;
    for (const frontend::TensorView *v : views)
      elements += v->numElements();
    switch (arg.element) {
    case ArgSpec::Element::F32:
      if (views.size() > 1 && !packed.count(arg.name)) {
        pages::Vector<float> &data = packed[arg.name];
        data.reserve(elements);
        for (const frontend::TensorView *v : views)
          data.insert(data.end(), v->data, v->data + v->numElements());
      }
      break;
    case ArgSpec::Element::F16: {
      if (halves.count(arg.name))
        break;
      pages::Vector<uint16_t> data(elements);
      uint16_t *to = data.data();
      for (const frontend::TensorView *v : views) {
        const int64_t count = v->numElements();
        for (int64_t i = 0; i < count; ++i)
          if (std::fabs(v->data[i]) > tfmc::kHalfMax)
            return llvm::createStringError(
                llvm::inconvertibleErrorCode(),
                llvm::formatv("{0}: tensor '{1}': element {2} ({3}) is "
                              "beyond float16's range (±65504); use "
                              "--compute-type float32 or int8",
                              model.weights->path(), v->name, i, v->data[i])
                    .str());
        roundToHalves(v->data, count, to);
        to += count;
      }
      halves[arg.name] = std::move(data);
      break;
    }
    case ArgSpec::Element::BF16: {
      // The float32 range: nothing to refuse, every value rounds.
      if (bfloats.count(arg.name))
        break;
      pages::Vector<uint16_t> data(elements);
      uint16_t *to = data.data();
      for (const frontend::TensorView *v : views) {
        const int64_t count = v->numElements();
        for (int64_t i = 0; i < count; ++i)
          to[i] = tfmc::floatToBFloat16(v->data[i]);
        to += count;
      }
      bfloats[arg.name] = std::move(data);
      break;
    }
    case ArgSpec::Element::I8: {
      if (int8.count(arg.name))
        break;
      Int8Weight &w = int8[arg.name];
      if (views.size() == 1 && views[0]->int8) {
        // Pre-quantized in the file: used as stored.
        w.values = views[0]->int8;
        w.scales = views[0]->int8Scales;
        break;
      }
      w.ownedValues.reserve(elements);
      for (const frontend::TensorView *v : views) {
        int64_t rows = v->shape[0], cols = v->shape[1];
        if (v->int8) {
          w.ownedValues.insert(w.ownedValues.end(), v->int8,
                               v->int8 + rows * cols);
          w.ownedScales.insert(w.ownedScales.end(), v->int8Scales,
                               v->int8Scales + rows);
          continue;
        }
        QuantizedMatrix q = quantizeRows(v->data, rows, cols);
        w.ownedValues.insert(w.ownedValues.end(), q.values.begin(),
                             q.values.end());
        w.ownedScales.insert(w.ownedScales.end(), q.scales.begin(),
                             q.scales.end());
      }
      w.values = w.ownedValues.data();
      w.scales = w.ownedScales.data();
      break;
    }
    default:
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "weight argument '%s' has an element "
                                     "type the runtime cannot bind",
                                     arg.name.c_str());
    }
  }
  for (const ArgSpec &arg : fn.args)
    if (arg.kind == ArgSpec::Kind::WeightScale && !int8.count(arg.name))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "scale argument for '%s' without its "
                                     "int8 weight",
                                     arg.name.c_str());
  for (const ArgSpec &arg : fn.args)
    if (arg.kind == ArgSpec::Kind::Weight ||
        arg.kind == ArgSpec::Kind::WeightScale)
      bound.insert(data(arg));
  return llvm::Error::success();
}

const void *WeightStore::data(const ArgSpec &arg) const {
  if (arg.kind == ArgSpec::Kind::WeightScale)
    return int8.at(arg.name).scales;
  switch (arg.element) {
  case ArgSpec::Element::F16:
    return halves.at(arg.name).data();
  case ArgSpec::Element::BF16:
    return bfloats.at(arg.name).data();
  case ArgSpec::Element::I8:
    return int8.at(arg.name).values;
  default:
    break;
  }
  auto it = packed.find(arg.name);
  if (it != packed.end())
    return it->second.data();
  return model.weight(arg.name).data;
}

int64_t WeightStore::ownedBytes() const {
  int64_t bytes = 0;
  for (const auto &p : packed)
    bytes += p.second.size() * sizeof(float);
  for (const auto &h : halves)
    bytes += h.second.size() * sizeof(uint16_t);
  for (const auto &h : bfloats)
    bytes += h.second.size() * sizeof(uint16_t);
  for (const auto &q : int8)
    bytes += q.second.ownedValues.size() +
             q.second.ownedScales.size() * sizeof(float);
  return bytes;
}
