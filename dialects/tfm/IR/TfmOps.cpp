//===- TfmOps.cpp - tfm operation verifiers and interfaces ----------------===//
#include "dialects/tfm/IR/TfmOps.h"

#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tfm;

/// Two extents agree when either is dynamic or both are equal.
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static int64_t dim(Value v, unsigned i) {
  return cast<ShapedType>(v.getType()).getDimSize(i);
}

static int64_t lastDim(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getDimSize(type.getRank() - 1);
}

/// Checks that a [out, in] weight and [out] bias fit an input with `in`
/// features; `what` names the weight in diagnostics.
static LogicalResult verifyDense(Operation *op, StringRef what, Value weight,
                                 Value bias, int64_t in, int64_t out) {
  if (!compatible(dim(weight, 1), in))
    return op->emitOpError() << what << " weight has " << dim(weight, 1)
                             << " input features, expected " << in;
  if (!compatible(dim(weight, 0), out))
    return op->emitOpError() << what << " weight has " << dim(weight, 0)
                             << " output features, expected " << out;
  if (!compatible(dim(bias, 0), dim(weight, 0)))
    return op->emitOpError() << what << " bias has " << dim(bias, 0)
                             << " elements, expected " << dim(weight, 0);
  return success();
}

static LogicalResult verifyHeads(Operation *op, int64_t numHeads,
                                 int64_t dModel) {
  if (ShapedType::isDynamic(dModel))
    return op->emitOpError("model dimension must be static");
  if (dModel % numHeads != 0)
    return op->emitOpError()
           << "heads (" << numHeads << ") must divide the model dimension ("
           << dModel << ")";
  return success();
}

static LogicalResult verifyLengths(Operation *op, MaskKind kind, Value lengths,
                                   Value query) {
  if (kind == MaskKind::padding && !lengths)
    return op->emitOpError("padding mask requires key_lengths");
  if (kind == MaskKind::none && lengths)
    return op->emitOpError("key_lengths given but the mask kind is none");
  if (lengths && !compatible(dim(lengths, 0), dim(query, 0)))
    return op->emitOpError() << "key_lengths has " << dim(lengths, 0)
                             << " rows, expected " << dim(query, 0);
  return success();
}

static void
addReads(Value v,
         SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
             &effects,
         OpOperand &operand) {
  if (isa<MemRefType>(v.getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (!compatible(dim(getResult(), 0), dim(getIds(), 0)) ||
      !compatible(dim(getResult(), 1), dim(getIds(), 1)))
    return emitOpError("result rows must match the ids shape");
  if (!compatible(dim(getResult(), 2), dim(getTable(), 1)))
    return emitOpError() << "result width " << dim(getResult(), 2)
                         << " does not match the table width "
                         << dim(getTable(), 1);
  return success();
}

//===----------------------------------------------------------------------===//
// PositionalEncodingOp
//===----------------------------------------------------------------------===//

LogicalResult PositionalEncodingOp::verify() {
  if (!compatible(dim(getTable(), 1), dim(getInput(), 2)))
    return emitOpError() << "table width " << dim(getTable(), 1)
                         << " does not match the input width "
                         << dim(getInput(), 2);
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

/// An i8 weight has a `scale` operand of one float32 per output row;
/// other weights none.
static LogicalResult verifyScale(Operation *op, Value weight, Value scale) {
  Type element = cast<ShapedType>(weight.getType()).getElementType();
  bool quantized = element.isInteger(8);
  if (quantized && !scale)
    return op->emitOpError("an i8 weight needs a 'scale' operand (one float32 "
                           "per output row)");
  if (!quantized && scale)
    return op->emitOpError()
           << "a 'scale' operand is only for i8 weights, not " << element;
  if (scale && !compatible(dim(scale, 0), dim(weight, 0)))
    return op->emitOpError() << "scale has " << dim(scale, 0)
                             << " elements, expected one per output row ("
                             << dim(weight, 0) << ")";
  return success();
}

LogicalResult LinearOp::verify() {
  if (!compatible(dim(getResult(), 0), dim(getInput(), 0)) ||
      !compatible(dim(getResult(), 1), dim(getInput(), 1)))
    return emitOpError("result rows must match the input rows");
  if (failed(verifyDense(*this, "linear", getWeight(), getBias(),
                         lastDim(getInput()), lastDim(getResult()))))
    return failure();
  return verifyScale(*this, getWeight(), getScale());
}

LogicalResult LinearArgmaxOp::verify() {
  if (!compatible(dim(getInput(), 1), 1))
    return emitOpError("the input must hold one position per row");
  if (!compatible(dim(getResult(), 0), dim(getInput(), 0)) ||
      !compatible(dim(getAllowEos(), 0), dim(getInput(), 0)))
    return emitOpError("the result and allow_eos must have one entry per "
                       "input row");
  if (failed(verifyDense(*this, "linear_argmax", getWeight(), getBias(),
                         lastDim(getInput()), dim(getWeight(), 0))))
    return failure();
  return verifyScale(*this, getWeight(), getScale());
}

LogicalResult LinearTopkOp::verify() {
  if (!compatible(dim(getInput(), 1), 1))
    return emitOpError("the input must hold one position per row");
  if (!compatible(dim(getValues(), 0), dim(getInput(), 0)) ||
      !compatible(dim(getIds(), 0), dim(getInput(), 0)) ||
      !compatible(dim(getAllowEos(), 0), dim(getInput(), 0)))
    return emitOpError("values, ids and allow_eos must have one row per "
                       "input row");
  if (!compatible(dim(getValues(), 1), dim(getIds(), 1)))
    return emitOpError("values and ids must hold as many candidates");
  if (failed(verifyDense(*this, "linear_topk", getWeight(), getBias(),
                         lastDim(getInput()), dim(getWeight(), 0))))
    return failure();
  return verifyScale(*this, getWeight(), getScale());
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  if (!compatible(dim(getResult(), 0), dim(getInput(), 0)) ||
      !compatible(dim(getResult(), 1), dim(getInput(), 1)))
    return emitOpError("result rows must match the input rows");
  int64_t in = lastDim(getInput()), out = lastDim(getResult());
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
    return emitOpError("feature extents must be static");
  if (static_cast<int64_t>(getOffset()) + out > in)
    return emitOpError() << "features [" << getOffset() << ", "
                         << getOffset() + out << ") are outside the input's "
                         << in;
  return success();
}

LogicalResult NarrowOp::verify() {
  auto in = cast<ShapedType>(getInput().getType());
  auto out = cast<ShapedType>(getResult().getType());
  for (int64_t i = 0; i < 3; ++i)
    if (!compatible(in.getDimSize(i), out.getDimSize(i)))
      return emitOpError("result shape must match the input shape");
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormOp / AddLayerNormOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyNorm(Operation *op, Value input, Value weight,
                                double epsilon) {
  if (!compatible(dim(weight, 0), lastDim(input)))
    return op->emitOpError() << "weight has " << dim(weight, 0)
                             << " elements, expected " << lastDim(input);
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return op->emitOpError("epsilon must be positive and finite");
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(),
                    getEpsilon().convertToDouble());
}

LogicalResult AddLayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getWeight(),
                    getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// MultiHeadAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult MultiHeadAttentionOp::verify() {
  int64_t d = lastDim(getQuery());
  if (failed(verifyHeads(*this, getNumHeads(), d)))
    return failure();
  if (!compatible(lastDim(getKeyValue()), d))
    return emitOpError() << "key_value width " << lastDim(getKeyValue())
                         << " does not match the query width " << d;
  if (!compatible(dim(getKeyValue(), 0), dim(getQuery(), 0)))
    return emitOpError("query and key_value batch sizes differ");
  if (failed(verifyDense(*this, "query", getQueryWeight(), getQueryBias(), d,
                         d)) ||
      failed(verifyDense(*this, "key", getKeyWeight(), getKeyBias(), d, d)) ||
      failed(verifyDense(*this, "value", getValueWeight(), getValueBias(), d,
                         d)) ||
      failed(verifyDense(*this, "output", getOutputWeight(), getOutputBias(), d,
                         d)))
    return failure();
  if (failed(verifyLengths(*this, getMaskKind(), getKeyLengths(), getQuery())))
    return failure();
  bool anyCache = getKeyCache() || getValueCache() || getCachePosition();
  bool allCache = getKeyCache() && getValueCache() && getCachePosition();
  if (anyCache && !allCache)
    return emitOpError("a cache needs both caches and a position");
  if (allCache) {
    if (getKeyCache().getType() != getValueCache().getType())
      return emitOpError("key and value caches must have the same type");
    if (!compatible(lastDim(getKeyCache()), d))
      return emitOpError() << "cache width " << lastDim(getKeyCache())
                           << " does not match the model width " << d;
  }
  return success();
}

void MultiHeadAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand *operand :
       {getKeyCacheMutable().empty() ? nullptr : &getKeyCacheMutable()[0],
        getValueCacheMutable().empty() ? nullptr
                                       : &getValueCacheMutable()[0]}) {
    if (!operand)
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), operand,
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), operand,
                         SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  int64_t d = lastDim(getQuery());
  if (failed(verifyHeads(*this, getNumHeads(), d)))
    return failure();
  for (Value kv : {getKey(), getValue()}) {
    if (!compatible(lastDim(kv), d))
      return emitOpError() << "key/value width " << lastDim(kv)
                           << " does not match the query width " << d;
    // With key_rows, keys/values have their own rows (one per source).
    if (!getKeyRows() && !compatible(dim(kv, 0), dim(getQuery(), 0)))
      return emitOpError("query and key/value batch sizes differ");
  }
  if (getKeyRows() && !compatible(dim(getKeyRows(), 0), dim(getQuery(), 0)))
    return emitOpError() << "key_rows has " << dim(getKeyRows(), 0)
                         << " rows, expected " << dim(getQuery(), 0);
  if (getKeyRows() && !compatible(dim(getKey(), 0), dim(getValue(), 0)))
    return emitOpError("keys and values have different row counts");
  if (!compatible(dim(getKey(), 1), dim(getValue(), 1)))
    return emitOpError("keys and values have different lengths");
  if (cast<ShapedType>(getKey().getType()).getElementType() !=
      cast<ShapedType>(getValue().getType()).getElementType())
    return emitOpError("keys and values must have the same element type");
  if (failed(verifyLengths(*this, getMaskKind(), getKeyLengths(), getQuery())))
    return failure();
  if (getQueryOffset() && getMaskKind() != MaskKind::causal)
    return emitOpError("query_offset only applies to a causal mask");
  return success();
}

void AttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addReads(getKey(), effects, getKeyMutable());
  addReads(getValue(), effects, getValueMutable());
}

//===----------------------------------------------------------------------===//
// CacheWriteOp
//===----------------------------------------------------------------------===//

LogicalResult CacheWriteOp::verify() {
  if (!compatible(lastDim(getValue()), lastDim(getCache())))
    return emitOpError() << "value width " << lastDim(getValue())
                         << " does not match the cache width "
                         << lastDim(getCache());
  if (!compatible(dim(getValue(), 0), dim(getCache(), 0)))
    return emitOpError("value and cache batch sizes differ");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/tfm/IR/TfmOps.cpp.inc"

int64_t mlir::tfm::mergedProjectionCount(LinearOp linear) {
  return llvm::count_if(linear->getUsers(),
                        [](Operation *user) { return isa<SliceOp>(user); });
}

std::string mlir::tfm::modelNameOf(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}
