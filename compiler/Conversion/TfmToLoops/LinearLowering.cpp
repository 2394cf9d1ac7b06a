//===- LinearLowering.cpp - dense layers ----------------------------------===//
//
// tfm.linear as vectorisable row loops (float32, float16 and int8 weights)
// or, with library calls, as a call of the runtime's tfm_rt_linear.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/TfmToLoops/OpLowering.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::loops;

namespace {

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

/// An i32 constant of the bits `v`.
static Value i32Constant(KernelBuilder &k, uint32_t v) {
  return k.builder().create<arith::ConstantOp>(
      k.location(), k.builder().getI32IntegerAttr(static_cast<int32_t>(v)));
}

/// The float32 `bits` (i32) of a bfloat16 value, a subnormal one (exponent
/// bits zero) replaced by a zero of its sign, as vdpbf16ps reads operands.
static Value flushSubnormal(KernelBuilder &k, Value bits) {
  OpBuilder &b = k.builder();
  Location loc = k.location();
  auto bitsOf = [&](uint32_t v) { return i32Constant(k, v); };
  Value subnormal = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::eq,
      b.create<arith::AndIOp>(loc, bits, bitsOf(0x7f800000)), bitsOf(0));
  return b.create<arith::SelectOp>(
      loc, subnormal, b.create<arith::AndIOp>(loc, bits, bitsOf(0x80000000)),
      bits);
}

static Value applyActivation(KernelBuilder &k, Activation act, Value v) {
  switch (act) {
  case Activation::none:
    return v;
  case Activation::relu:
    return k.max(v, k.f32(0.0));
  case Activation::gelu: {
    // Exact form: 0.5 * x * (1 + erf(x / sqrt(2))).
    Value erf = k.builder().create<math::ErfOp>(
        k.location(), k.mul(v, k.f32(0.70710678118654752440)));
    return k.mul(k.mul(k.f32(0.5), v), k.add(k.f32(1.0), erf));
  }
  case Activation::silu: {
    // x * sigmoid(x) = x / (1 + exp(-x)).
    Value e = k.builder().create<math::ExpOp>(k.location(),
                                              k.sub(k.f32(0.0), v));
    return k.div(v, k.add(k.f32(1.0), e));
  }
  }
  llvm_unreachable("unknown activation");
}

/// A float32 `x` as a bfloat16 layer multiplies it (the runtime's
/// BFloat16Operands.h): rounded to bfloat16 (to nearest, ties to even; a
/// NaN stays a NaN) and widened back, a result below bfloat16's normal
/// range a zero of its sign. Integer operations on the bits, so that no
/// floating-point mode or fast-math flag can change them.
static Value bfloat16Operand(KernelBuilder &k, Value x) {
  OpBuilder &b = k.builder();
  Location loc = k.location();
  auto bitsOf = [&](uint32_t v) { return i32Constant(k, v); };
  Value bits = b.create<arith::BitcastOp>(loc, b.getI32Type(), x);
  Value lastKept = b.create<arith::AndIOp>(
      loc, b.create<arith::ShRUIOp>(loc, bits, bitsOf(16)), bitsOf(1));
  Value rounded = b.create<arith::AddIOp>(
      loc, bits, b.create<arith::AddIOp>(loc, bitsOf(0x7fff), lastKept));
  Value nan = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ugt,
      b.create<arith::AndIOp>(loc, bits, bitsOf(0x7fffffff)),
      bitsOf(0x7f800000));
  Value quiet = b.create<arith::OrIOp>(loc, bits, bitsOf(0x400000));
  Value kept = b.create<arith::AndIOp>(
      loc, b.create<arith::SelectOp>(loc, nan, quiet, rounded),
      bitsOf(0xffff0000));
  return b.create<arith::BitcastOp>(loc, b.getF32Type(),
                                    flushSubnormal(k, kept));
}

} // namespace

/// Calls the loop kernel of a linear layer: out = act(x · wᵀ + bias). An
/// f16 weight is widened to float32 as it is loaded (F16C on the host); a
/// bf16 one multiplies each row of x rounded to bfloat16 (bfloat16Operand,
/// into a stack row), its own subnormals read as zeros, accumulated in
/// float32.
void mlir::tfm::loops::callFloatLinearKernel(ConversionPatternRewriter &rewriter,
                                  Operation *op, Activation act, Value x,
                                  Value w, Value bias, Value out) {
  std::string base = ("linear_" + stringifyActivation(act)).str();
  callKernel(rewriter, op, base, {x, w, bias, out},
             [&](KernelBuilder &k, ValueRange a) {
               Value in = a[0], weight = a[1], b = a[2], result = a[3];
               Value zero = k.index(0);
               Value inFeatures = k.dim(weight, 1);
               bool brain =
                   cast<MemRefType>(weight.getType()).getElementType().isBF16();
               auto loadWeight = [&](Value n, Value i) -> Value {
                 OpBuilder &ob = k.builder();
                 Location loc = k.location();
                 Value v = k.load(weight, {n, i});
                 if (brain) {
                   // Widened on the bits (the upper half of a float32),
                   // a subnormal as a zero.
                   Value bits = ob.create<arith::ShLIOp>(
                       loc,
                       ob.create<arith::ExtUIOp>(loc, ob.getI32Type(),
                                                 ob.create<arith::BitcastOp>(
                                                     loc, ob.getI16Type(), v)),
                       ob.create<arith::ConstantOp>(loc,
                                                    ob.getI32IntegerAttr(16)));
                   return ob.create<arith::BitcastOp>(loc, ob.getF32Type(),
                                                      flushSubnormal(k, bits));
                 }
                 if (!v.getType().isF32())
                   v = ob.create<arith::ExtFOp>(loc, ob.getF32Type(), v);
                 return v;
               };
               // A bf16 layer's row, rounded once into a stack row.
               Value rounded;
               if (brain)
                 rounded = k.builder().create<memref::AllocaOp>(
                     k.location(),
                     MemRefType::get(
                         {cast<MemRefType>(weight.getType()).getDimSize(1)},
                         k.builder().getF32Type()),
                     k.builder().getI64IntegerAttr(64));
               auto loadInput = [&](Value r, Value t, Value i) -> Value {
                 return brain ? k.load(rounded, {i}) : k.load(in, {r, t, i});
               };
               k.forEachRow(in, [&](Value r, Value t) {
                 if (brain)
                   k.loop(zero, inFeatures, [&](Value i) {
                     k.store(bfloat16Operand(k, k.load(in, {r, t, i})), rounded,
                             {i});
                   });
                 k.loop(zero, k.dim(weight, 0), [&](Value n) {
                   Value dot = k.reduce(
                       zero, inFeatures, {k.f32(0.0)},
                       [&](Value i, ValueRange acc) {
                         Value p = k.mul(loadInput(r, t, i), loadWeight(n, i));
                         return SmallVector<Value>{k.add(acc[0], p)};
                       })[0];
                   Value v = k.add(dot, k.load(b, {n}));
                   k.store(applyActivation(k, act, v), result, {r, t, n});
                 });
               });
             });
}

namespace {

/// Calls the loop kernel of an int8 linear layer. Each input row is
/// quantized symmetrically to [-kActivationLevels, kActivationLevels]
/// (scale = max|x| / levels, round half to even) into a stack row, the dot
/// products with the i8 weight rows accumulate in int32 (sign-extended
/// multiplies, which LLVM turns into vpmaddwd), and
/// out = act(acc · (x scale · w scale[n]) + bias[n]). The runtime's library
/// kernel (tfm_rt_linear_i8) quantizes the same way, so both paths compute
/// the same integers.
static void callQuantizedLinearKernel(ConversionPatternRewriter &rewriter,
                                      Operation *op, Activation act, Value x,
                                      Value w, Value scale, Value bias,
                                      Value out) {
  std::string base = ("linear_q_" + stringifyActivation(act)).str();
  int64_t inFeatures = cast<MemRefType>(w.getType()).getDimSize(1);
  callKernel(
      rewriter, op, base, {x, w, scale, bias, out},
      [&](KernelBuilder &k, ValueRange a) {
        Value in = a[0], weight = a[1], wScale = a[2], b = a[3],
              result = a[4];
        OpBuilder &ob = k.builder();
        Location loc = k.location();
        Type i8 = ob.getI8Type(), i32 = ob.getI32Type();
        Value zero = k.index(0);
        Value width = k.dim(weight, 1);
        Value levels = k.f32(kActivationLevels);
        Value row = ob.create<memref::AllocaOp>(
            loc, MemRefType::get({inFeatures}, i8), ob.getI64IntegerAttr(64));
        k.forEachRow(in, [&](Value r, Value t) {
          Value amax = k.reduce(zero, width, {k.f32(0.0)},
                                [&](Value i, ValueRange acc) {
                                  Value v = ob.create<math::AbsFOp>(
                                      loc, k.load(in, {r, t, i}));
                                  return SmallVector<Value>{k.max(acc[0], v)};
                                })[0];
          // levels / max|x| where it is a finite number, else 0 (all codes
          // 0): as the runtime's quantizationFactor (Quantize.h).
          Value factor = k.div(levels, amax);
          Value any = ob.create<arith::AndIOp>(
              loc,
              ob.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, amax,
                                       k.f32(0.0)),
              ob.create<arith::CmpFOp>(
                  loc, arith::CmpFPredicate::OLT, factor,
                  k.f32(std::numeric_limits<float>::infinity())));
          Value inv =
              ob.create<arith::SelectOp>(loc, any, factor, k.f32(0.0));
          // A row with a NaN or an infinity (max|x| is then one: maximumf
          // keeps NaN): codes 0 and scale NaN, so its outputs are NaN, as
          // the runtime's nonFiniteRowScale() (Quantize.h).
          Value finite = ob.create<arith::CmpFOp>(
              loc, arith::CmpFPredicate::OLT, amax,
              k.f32(std::numeric_limits<float>::infinity()));
          Value xScale = ob.create<arith::SelectOp>(
              loc, finite, k.div(amax, levels),
              k.f32(std::numeric_limits<float>::quiet_NaN()));
          k.loop(zero, width, [&](Value i) {
            Value v = ob.create<math::RoundEvenOp>(
                loc, k.mul(k.load(in, {r, t, i}), inv));
            // x · 0 is NaN where x is not finite: code 0 there rather than
            // a NaN converted to an integer (poison).
            Value number =
                ob.create<arith::CmpFOp>(loc, arith::CmpFPredicate::ORD, v, v);
            v = ob.create<arith::SelectOp>(loc, number, v, k.f32(0.0));
            k.store(ob.create<arith::FPToSIOp>(loc, i8, v), row, {i});
          });
          k.loop(zero, k.dim(weight, 0), [&](Value n) {
            Value zeroI32 =
                ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(0));
            Value acc =
                k.reduce(zero, width, {zeroI32}, [&](Value i, ValueRange s) {
                  Value xq =
                      ob.create<arith::ExtSIOp>(loc, i32, k.load(row, {i}));
                  Value wq = ob.create<arith::ExtSIOp>(
                      loc, i32, k.load(weight, {n, i}));
                  Value p = ob.create<arith::MulIOp>(loc, xq, wq);
                  return SmallVector<Value>{
                      ob.create<arith::AddIOp>(loc, s[0], p)};
                })[0];
            Value dequantize = k.mul(xScale, k.load(wScale, {n}));
            Value accF = ob.create<arith::SIToFPOp>(loc, ob.getF32Type(), acc);
            Value v = k.add(k.mul(accF, dequantize), k.load(b, {n}));
            k.store(applyActivation(k, act, v), result, {r, t, n});
          });
        });
      });
}

/// The loop kernel for any weight type of tfm.linear.
static void linearKernel(ConversionPatternRewriter &rewriter, Operation *op,
                         Activation act, Value x, Value w, Value scale,
                         Value bias, Value out) {
  if (scale)
    callQuantizedLinearKernel(rewriter, op, act, x, w, scale, bias, out);
  else
    callFloatLinearKernel(rewriter, op, act, x, w, bias, out);
}

struct LinearLowering : public TfmLowering<LinearOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    linearKernel(rewriter, op, op.getActivation(), adaptor.getInput(),
                 adaptor.getWeight(), adaptor.getScale(), adaptor.getBias(),
                 out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

/// Below `minRows` rows, a layer runs its loop kernel (`loops`, emitted in
/// the then-branch of an scf.if on the row count) rather than the library
/// call the caller emits next: the insertion point is left in the
/// else-branch (the caller holds an InsertionGuard). Nothing is emitted
/// when minRows <= 1.
void mlir::tfm::loops::branchOnFewRows(ConversionPatternRewriter &rewriter,
                            KernelBuilder &k, Value rows, int64_t minRows,
                            function_ref<void()> loops) {
  if (minRows <= 1)
    return;
  Location loc = k.location();
  Value few = rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                             rows, k.index(minRows));
  auto choice = rewriter.create<scf::IfOp>(loc, few, /*withElseRegion=*/true);
  rewriter.setInsertionPoint(choice.thenBlock()->getTerminator());
  loops();
  rewriter.setInsertionPoint(choice.elseBlock()->getTerminator());
}


/// `v` as a memref of `v`'s rank with every extent dynamic.
Value mlir::tfm::loops::dynamicMemRef(ConversionPatternRewriter &rewriter, Location loc,
                           Value v) {
  auto type = cast<MemRefType>(v.getType());
  SmallVector<int64_t> shape(type.getRank(), ShapedType::kDynamic);
  return rewriter.create<memref::CastOp>(
      loc, MemRefType::get(shape, type.getElementType()), v);
}


/// Calls the runtime's library kernel `kernel` (C interface), declaring it
/// on first use.
void mlir::tfm::loops::callLibraryKernel(ConversionPatternRewriter &rewriter,
                              Operation *op, StringRef kernel,
                              ValueRange args) {
  auto module = op->getParentOfType<ModuleOp>();
  auto callee = module.lookupSymbol<func::FuncOp>(kernel);
  if (!callee) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    callee = rewriter.create<func::FuncOp>(
        op->getLoc(), kernel, rewriter.getFunctionType(args.getTypes(), {}));
    callee.setPrivate();
    callee->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
  }
  rewriter.create<func::CallOp>(op->getLoc(), callee, args);
}

namespace {

/// tfm.linear -> call @tfm_rt_linear(x, w, b, y, activation), operands
/// cast to fully dynamic memrefs so one declaration serves every shape.
/// Below `minRows` rows (batch x sequence) the layer is a matrix-vector
/// product bound by streaming the weights, where the loop kernel is faster
/// than the library call: both are emitted, chosen by the row count at run
/// time.
struct LinearToLibraryCall : public TfmLowering<LinearOp> {
  LinearToLibraryCall(TypeConverter &converter, MLIRContext *ctx,
                      int64_t minRows)
      : TfmLowering(converter, ctx, /*benefit=*/2), minRows(minRows) {}
  int64_t minRows;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value out = allocRows(k, resultType(op), adaptor.getInput());
    OpBuilder::InsertionGuard guard(rewriter);
    Value rows = k.mulIndex(k.dim(adaptor.getInput(), 0),
                            k.dim(adaptor.getInput(), 1));
    branchOnFewRows(rewriter, k, rows, minRows, [&] {
      linearKernel(rewriter, op, op.getActivation(), adaptor.getInput(),
                   adaptor.getWeight(), adaptor.getScale(), adaptor.getBias(),
                   out);
    });
    auto dynamic = [&](Value v) {
      return dynamicMemRef(rewriter, op.getLoc(), v);
    };
    // One runtime kernel per weight type: float32, f16 (widened per call),
    // i8 (+ the scale after the weight).
    Type element = op.getWeight().getType().getElementType();
    StringRef kernel = element.isF16()        ? kLinearF16Kernel
                       : element.isBF16()     ? kLinearBF16Kernel
                       : element.isInteger(8) ? kLinearI8Kernel
                                              : kLinearKernel;
    SmallVector<Value> args{dynamic(adaptor.getInput()),
                            dynamic(adaptor.getWeight())};
    if (adaptor.getScale())
      args.push_back(dynamic(adaptor.getScale()));
    args.append({dynamic(adaptor.getBias()), dynamic(out)});
    args.push_back(rewriter.create<arith::ConstantOp>(
        op.getLoc(),
        rewriter.getI32IntegerAttr(static_cast<int32_t>(op.getActivation()))));
    callLibraryKernel(rewriter, op, kernel, args);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::tfm::loops::populateLinearLowerings(TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<LinearLowering>(converter, patterns.getContext());
}

void mlir::tfm::loops::populateLinearLibraryCallLowerings(
    TypeConverter &converter, RewritePatternSet &patterns, int64_t minRows) {
  patterns.add<LinearToLibraryCall>(converter, patterns.getContext(), minRows);
}

void mlir::tfm::loops::callLinearKernel(ConversionPatternRewriter &rewriter,
                                        Operation *op, Activation act, Value x,
                                        Value w, Value scale, Value bias,
                                        Value out) {
  linearKernel(rewriter, op, act, x, w, scale, bias, out);
}
