//===- KernelBuilder.cpp - compact scf/arith/memref construction ----------===//
#include "compiler/Conversion/TfmToLoops/KernelBuilder.h"

using namespace mlir;
using namespace mlir::tfm;

KernelBuilder::KernelBuilder(OpBuilder &b, Location loc)
    : b(b), loc(loc),
      // Reassociation lets LLVM vectorise reductions; contraction gives FMAs.
      fastMath(arith::FastMathFlagsAttr::get(
          b.getContext(),
          arith::FastMathFlags::reassoc | arith::FastMathFlags::contract)) {}

Value KernelBuilder::index(int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

Value KernelBuilder::f32(double v) {
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(float(v)));
}

Value KernelBuilder::add(Value x, Value y) {
  return b.create<arith::AddFOp>(loc, x, y, fastMath);
}
Value KernelBuilder::sub(Value x, Value y) {
  return b.create<arith::SubFOp>(loc, x, y, fastMath);
}
Value KernelBuilder::mul(Value x, Value y) {
  return b.create<arith::MulFOp>(loc, x, y, fastMath);
}
Value KernelBuilder::div(Value x, Value y) {
  return b.create<arith::DivFOp>(loc, x, y, fastMath);
}
Value KernelBuilder::max(Value x, Value y) {
  return b.create<arith::MaximumFOp>(loc, x, y);
}
Value KernelBuilder::exp(Value x) { return b.create<math::ExpOp>(loc, x); }
Value KernelBuilder::sqrt(Value x) { return b.create<math::SqrtOp>(loc, x); }

Value KernelBuilder::addIndex(Value x, Value y) {
  return b.createOrFold<arith::AddIOp>(loc, x, y);
}
Value KernelBuilder::mulIndex(Value x, Value y) {
  return b.createOrFold<arith::MulIOp>(loc, x, y);
}
Value KernelBuilder::minIndex(Value x, Value y) {
  return b.createOrFold<arith::MinSIOp>(loc, x, y);
}
Value KernelBuilder::maxIndex(Value x, Value y) {
  return b.createOrFold<arith::MaxSIOp>(loc, x, y);
}

Value KernelBuilder::clampedIndex(Value i32, Value lo, Value hi) {
  Value i = b.create<arith::IndexCastOp>(loc, b.getIndexType(), i32);
  return minIndex(maxIndex(i, lo), hi);
}

Value KernelBuilder::vload(Value memref, ValueRange indices, int64_t width) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  Value v = b.create<vector::LoadOp>(loc, VectorType::get({width}, element),
                                     memref, indices);
  if (element.isF16() || element.isBF16())
    v = b.create<arith::ExtFOp>(loc, VectorType::get({width}, b.getF32Type()),
                                v);
  return v;
}

void KernelBuilder::vstore(Value vector, Value memref, ValueRange indices) {
  b.create<vector::StoreOp>(loc, vector, memref, indices);
}

Value KernelBuilder::fma(Value x, Value y, Value acc) {
  return b.create<vector::FMAOp>(loc, x, y, acc);
}

Value KernelBuilder::splat(Value x, int64_t width) {
  return b.create<vector::SplatOp>(
      loc, VectorType::get({width}, x.getType()), x);
}

Value KernelBuilder::sumElements(Value vector) {
  return b.create<vector::ReductionOp>(loc, vector::CombiningKind::ADD, vector,
                                       Value(), fastMath.getValue());
}

Value KernelBuilder::load(Value memref, ValueRange indices) {
  return b.create<memref::LoadOp>(loc, memref, indices);
}

Value KernelBuilder::loadWide(Value memref, ValueRange indices) {
  Value v = load(memref, indices);
  if (v.getType().isF16() || v.getType().isBF16())
    v = b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
  return v;
}

void KernelBuilder::storeNarrowing(Value value, Value memref,
                                   ValueRange indices) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  if (element.isF16())
    value = b.create<arith::TruncFOp>(loc, element, value);
  store(value, memref, indices);
}

void KernelBuilder::store(Value value, Value memref, ValueRange indices) {
  b.create<memref::StoreOp>(loc, value, memref, indices);
}

Value KernelBuilder::dim(Value memref, int64_t i) {
  return b.createOrFold<memref::DimOp>(loc, memref, i);
}

Value KernelBuilder::alloc(MemRefType type, ArrayRef<Value> sizes) {
  SmallVector<Value> dynamic;
  for (auto [i, extent] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(extent))
      dynamic.push_back(sizes[i]);
  // 64-byte alignment: whole cache lines and aligned AVX-512 rows.
  return b.create<memref::AllocOp>(loc, type, dynamic, b.getI64IntegerAttr(64));
}

void KernelBuilder::loop(Value lb, Value ub, function_ref<void(Value)> body,
                         Value step) {
  auto forOp = b.create<scf::ForOp>(loc, lb, ub, step ? step : index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  body(forOp.getInductionVar());
}

void KernelBuilder::forEachRow(Value like,
                               function_ref<void(Value, Value)> body) {
  Value zero = index(0);
  loop(zero, dim(like, 0), [&](Value b) {
    loop(zero, dim(like, 1), [&](Value t) { body(b, t); });
  });
}

SmallVector<Value> KernelBuilder::reduce(
    Value lb, Value ub, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body, Value step) {
  auto forOp = b.create<scf::ForOp>(loc, lb, ub, step ? step : index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    SmallVector<Value> next =
        body(forOp.getInductionVar(), forOp.getRegionIterArgs());
    b.create<scf::YieldOp>(loc, next);
  }
  return SmallVector<Value>(forOp.getResults().begin(),
                            forOp.getResults().end());
}
