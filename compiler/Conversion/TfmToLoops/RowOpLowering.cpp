//===- RowOpLowering.cpp - per-row ops ------------------------------------===//
//
// tfm.slice, tfm.narrow, tfm.add, tfm.layer_norm and tfm.add_layer_norm:
// one vectorisable loop over each row's features.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TfmToLoops/OpLowering.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::loops;

namespace {

//===----------------------------------------------------------------------===//
// Row ops: slices, narrowing, residual additions, layer norms
//===----------------------------------------------------------------------===//

struct SliceLowering : public TfmLowering<SliceOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    int64_t offset = op.getOffset();
    std::string base = "slice_at" + std::to_string(offset);
    callKernel(rewriter, op, base, {adaptor.getInput(), out},
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], result = a[1];
                 Value zero = k.index(0), first = k.index(offset);
                 k.forEachRow(in, [&](Value b, Value t) {
                   k.loop(zero, k.dim(result, 2), [&](Value d) {
                     k.store(k.load(in, {b, t, k.addIndex(first, d)}), result,
                             {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct NarrowLowering : public TfmLowering<NarrowOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(NarrowOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    callKernel(rewriter, op, "narrow", {adaptor.getInput(), out},
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], result = a[1];
                 Value zero = k.index(0);
                 k.forEachRow(in, [&](Value b, Value t) {
                   k.loop(zero, k.dim(result, 2), [&](Value d) {
                     k.storeNarrowing(k.load(in, {b, t, d}), result, {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct AddLowering : public TfmLowering<AddOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(AddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getLhs());
    SmallVector<Value> args{adaptor.getLhs(), adaptor.getRhs(), out};
    callKernel(rewriter, op, "add", args, [&](KernelBuilder &k, ValueRange a) {
      Value lhs = a[0], rhs = a[1], result = a[2];
      Value zero = k.index(0);
      k.forEachRow(lhs, [&](Value b, Value t) {
        k.loop(zero, k.dim(lhs, 2), [&](Value d) {
          k.store(k.add(k.load(lhs, {b, t, d}), k.load(rhs, {b, t, d})), result,
                  {b, t, d});
        });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Normalises row (b, t) of `out` in place (after `out` holds the input, or
/// input + residual).
static void normaliseRow(KernelBuilder &k, Value out, Value weight, Value bias,
                         double epsilon, Value b, Value t) {
  Value zero = k.index(0);
  Value width = k.dim(out, 2);
  Value widthF = k.builder().create<arith::UIToFPOp>(
      k.location(), k.builder().getF32Type(),
      k.builder().create<arith::IndexCastUIOp>(
          k.location(), k.builder().getI64Type(), width));
  Value sum = k.reduce(zero, width, {k.f32(0.0)}, [&](Value d, ValueRange acc) {
    return SmallVector<Value>{k.add(acc[0], k.load(out, {b, t, d}))};
  })[0];
  Value mean = k.div(sum, widthF);
  Value sq = k.reduce(zero, width, {k.f32(0.0)}, [&](Value d, ValueRange acc) {
    Value c = k.sub(k.load(out, {b, t, d}), mean);
    return SmallVector<Value>{k.add(acc[0], k.mul(c, c))};
  })[0];
  Value var = k.div(sq, widthF);
  Value rstd = k.div(k.f32(1.0), k.sqrt(k.add(var, k.f32(epsilon))));
  k.loop(zero, width, [&](Value d) {
    Value c = k.mul(k.sub(k.load(out, {b, t, d}), mean), rstd);
    k.store(k.add(k.mul(c, k.load(weight, {d})), k.load(bias, {d})), out,
            {b, t, d});
  });
}

/// Layer norm of `input` (+ `residual` when given) into `out`, row by row.
static void buildLayerNorm(ConversionPatternRewriter &rewriter, Operation *op,
                           Value input, Value residual, Value weight,
                           Value bias, double eps, Value out) {
  SmallVector<Value> args{input};
  if (residual)
    args.push_back(residual);
  args.append({weight, bias, out});
  // The epsilon is baked into the kernel: make it part of the name.
  std::string base = residual ? "add_layer_norm" : "layer_norm";
  base += "_eps" + std::to_string(eps);
  callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
    Value in = a[0];
    Value res = residual ? a[1] : Value();
    ValueRange rest = a.drop_front(residual ? 2 : 1);
    Value w = rest[0], beta = rest[1], result = rest[2];
    Value zero = k.index(0);
    k.forEachRow(in, [&](Value b, Value t) {
      k.loop(zero, k.dim(in, 2), [&](Value d) {
        Value v = k.load(in, {b, t, d});
        if (res)
          v = k.add(v, k.load(res, {b, t, d}));
        k.store(v, result, {b, t, d});
      });
      normaliseRow(k, result, w, beta, eps, b, t);
    });
  });
}

struct LayerNormLowering : public TfmLowering<LayerNormOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    buildLayerNorm(rewriter, op, adaptor.getInput(), Value(),
                   adaptor.getWeight(), adaptor.getBias(),
                   op.getEpsilon().convertToDouble(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct AddLayerNormLowering : public TfmLowering<AddLayerNormOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(AddLayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    buildLayerNorm(rewriter, op, adaptor.getInput(), adaptor.getResidual(),
                   adaptor.getWeight(), adaptor.getBias(),
                   op.getEpsilon().convertToDouble(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::tfm::loops::populateRowOpLowerings(TypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<SliceLowering, NarrowLowering, AddLowering, LayerNormLowering,
               AddLayerNormLowering>(converter, patterns.getContext());
}
