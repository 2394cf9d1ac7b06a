//===- KernelBuilder.h - compact scf/arith/memref construction --*- C++ -*-===//
//
// Helpers that keep the loop-nest lowerings of tfm ops readable.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_CONVERSION_TFMTOLOOPS_KERNELBUILDER_H
#define COMPILER_CONVERSION_TFMTOLOOPS_KERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tfm {

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc);

  Value index(int64_t v);
  Value f32(double v);
  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value max(Value x, Value y);
  Value exp(Value x);
  Value sqrt(Value x);
  Value addIndex(Value x, Value y);
  Value mulIndex(Value x, Value y);
  Value minIndex(Value x, Value y);
  Value maxIndex(Value x, Value y);
  /// Converts an i32 to index, clamped into [lo, hi].
  Value clampedIndex(Value i32, Value lo, Value hi);

  /// Vectors of f32 (explicit SIMD where the loop vectoriser cannot find
  /// the right shape, e.g. several independent dot products at once).
  /// vload/vstore move `width` contiguous elements of the innermost
  /// dimension; vload widens float16 elements to float32.
  Value vload(Value memref, ValueRange indices, int64_t width);
  void vstore(Value vector, Value memref, ValueRange indices);
  /// x * y + acc, element-wise.
  Value fma(Value x, Value y, Value acc);
  /// A vector of `width` copies of the scalar `x`.
  Value splat(Value x, int64_t width);
  /// The sum of the elements of `vector` (any order).
  Value sumElements(Value vector);

  Value load(Value memref, ValueRange indices);
  /// load, widening a float16 element to float32.
  Value loadWide(Value memref, ValueRange indices);
  /// Stores a float32 `value`, rounded to float16 when the memref holds
  /// float16.
  void storeNarrowing(Value value, Value memref, ValueRange indices);
  void store(Value value, Value memref, ValueRange indices);
  Value dim(Value memref, int64_t i);

  /// Allocates a buffer of `type`, taking each dynamic extent from `sizes`
  /// (one entry per dimension; static dimensions ignore theirs).
  Value alloc(MemRefType type, ArrayRef<Value> sizes);

  /// for (iv = lb; iv < ub; iv += step) body(iv); `step` defaults to 1.
  void loop(Value lb, Value ub, function_ref<void(Value)> body,
            Value step = Value());
  /// for b < dim(like, 0), t < dim(like, 1): body(b, t): every row of a
  /// [batch, sequence, features] buffer.
  void forEachRow(Value like, function_ref<void(Value, Value)> body);
  /// Loop with loop-carried values; `body(iv, carried)` returns the next
  /// values. Returns the final values. `step` defaults to 1.
  SmallVector<Value>
  reduce(Value lb, Value ub, ValueRange init,
         function_ref<SmallVector<Value>(Value, ValueRange)> body,
         Value step = Value());

  OpBuilder &builder() { return b; }
  Location location() const { return loc; }

private:
  OpBuilder &b;
  Location loc;
  arith::FastMathFlagsAttr fastMath;
};

} // namespace mlir::tfm

#endif // COMPILER_CONVERSION_TFMTOLOOPS_KERNELBUILDER_H
