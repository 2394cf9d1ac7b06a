//===- SearchHeadLowering.cpp - output projections fused with the search -===//
//
// tfm.linear_argmax (greedy's choice) and tfm.linear_topk (beam search's
// candidates): as loops (the linear loop kernel one row at a time, then
// the scan), or with library calls as runtime kernels that compute the
// logits a cache-sized block at a time and scan them there.
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
// Greedy search's choice fused into the output projection
//===----------------------------------------------------------------------===//

/// Emits the scan of one row of logits ([1, 1, V]) into tokens[row]: the
/// ids in order, skipping `never` and eos unless allow[row] is non-zero;
/// the first allowed id is taken, a later one only when strictly greater,
/// and a choice whose value is NaN or infinite becomes kNotFiniteChoice
/// (ArgmaxScan.h in the runtime does the same).
static void callArgmaxScanKernel(ConversionPatternRewriter &rewriter,
                                 Operation *op, Value logits, Value never,
                                 Value eos, Value allow, Value tokens,
                                 Value row) {
  callKernel(
      rewriter, op, "argmax_scan", {logits, never, eos, allow, tokens, row},
      [&](KernelBuilder &k, ValueRange a) {
        Value values = a[0], neverIds = a[1], eosId = a[2], allowed = a[3],
              out = a[4], r = a[5];
        OpBuilder &ob = k.builder();
        Location loc = k.location();
        Type i32 = ob.getI32Type();
        Value zero = k.index(0);
        Value eosAllowed = ob.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::ne, k.load(allowed, {r}),
            ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(0)));
        Value none = ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(-1));
        Value falseValue =
            ob.create<arith::ConstantOp>(loc, ob.getBoolAttr(false));
        SmallVector<Value> found = k.reduce(
            zero, k.dim(values, 2), {none, k.f32(0.0)},
            [&](Value n, ValueRange best) {
              Value id = ob.create<arith::IndexCastOp>(loc, i32, n);
              Value isNever =
                  k.reduce(zero, k.dim(neverIds, 0), {falseValue},
                           [&](Value j, ValueRange any) {
                             Value hit = ob.create<arith::CmpIOp>(
                                 loc, arith::CmpIPredicate::eq,
                                 k.load(neverIds, {j}), id);
                             return SmallVector<Value>{
                                 ob.create<arith::OrIOp>(loc, any[0], hit)};
                           })[0];
              Value isEos = ob.create<arith::CmpIOp>(
                  loc, arith::CmpIPredicate::eq, n, eosId);
              Value eosBarred = ob.create<arith::AndIOp>(
                  loc, isEos,
                  ob.create<arith::XOrIOp>(
                      loc, eosAllowed,
                      ob.create<arith::ConstantOp>(loc, ob.getBoolAttr(true))));
              Value barred = ob.create<arith::OrIOp>(loc, isNever, eosBarred);
              Value v = k.load(values, {zero, zero, n});
              Value nothingYet = ob.create<arith::CmpIOp>(
                  loc, arith::CmpIPredicate::slt, best[0],
                  ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(0)));
              // Ordered: a NaN is never greater, nor is anything than NaN.
              Value greater = ob.create<arith::CmpFOp>(
                  loc, arith::CmpFPredicate::OGT, v, best[1]);
              Value take = ob.create<arith::AndIOp>(
                  loc,
                  ob.create<arith::XOrIOp>(
                      loc, barred,
                      ob.create<arith::ConstantOp>(loc, ob.getBoolAttr(true))),
                  ob.create<arith::OrIOp>(loc, nothingYet, greater));
              return SmallVector<Value>{
                  ob.create<arith::SelectOp>(loc, take, id, best[0]),
                  ob.create<arith::SelectOp>(loc, take, v, best[1])};
            });
        // A choice whose value is NaN or infinite (not |v| < inf) is
        // handed over as kNotFiniteChoice.
        Value finite = ob.create<arith::CmpFOp>(
            loc, arith::CmpFPredicate::OLT,
            ob.create<math::AbsFOp>(loc, found[1]),
            k.f32(std::numeric_limits<float>::infinity()));
        Value chose = ob.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::sge, found[0],
            ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(0)));
        Value notFinite = ob.create<arith::AndIOp>(
            loc, chose,
            ob.create<arith::XOrIOp>(
                loc, finite,
                ob.create<arith::ConstantOp>(loc, ob.getBoolAttr(true))));
        k.store(ob.create<arith::SelectOp>(
                    loc, notFinite,
                    ob.create<arith::ConstantOp>(
                        loc, ob.getI32IntegerAttr(kNotFiniteChoice)),
                    found[0]),
                out, {r});
      });
}

/// A head as loops: row by row, the row's logits by the loop kernel
/// tfm.linear uses (the same values; an i8 weight with its `scale`) into a
/// buffer of one row that stays in cache, then `scan(logits, row)`.
static void headRowsAsLoops(ConversionPatternRewriter &rewriter, Operation *op,
                            Value x, Value w, Value scale, Value bias,
                            function_ref<void(Value logits, Value row)> scan) {
  KernelBuilder k(rewriter, op->getLoc());
  auto f32 = rewriter.getF32Type();
  int64_t d = cast<MemRefType>(x.getType()).getDimSize(2);
  int64_t vocab = cast<MemRefType>(w.getType()).getDimSize(0);
  Value row = k.alloc(MemRefType::get({1, 1, d}, f32), {});
  Value logits = k.alloc(MemRefType::get({1, 1, vocab}, f32), {});
  Value zero = k.index(0);
  k.loop(zero, k.dim(x, 0), [&](Value r) {
    k.loop(zero, k.index(d), [&](Value i) {
      k.store(k.load(x, {r, zero, i}), row, {zero, zero, i});
    });
    callLinearKernel(rewriter, op, Activation::none, row, w, scale, bias,
                     logits);
    scan(logits, r);
  });
}

/// tfm.linear_argmax as loops: the compiled scan of each row.
static void lowerLinearArgmaxAsLoops(ConversionPatternRewriter &rewriter,
                                     LinearArgmaxOp op, Value x, Value w,
                                     Value scale, Value bias, Value never,
                                     Value eos, Value allow, Value tokens) {
  headRowsAsLoops(rewriter, op, x, w, scale, bias, [&](Value logits, Value r) {
    callArgmaxScanKernel(rewriter, op, logits, never, eos, allow, tokens, r);
  });
}

//===----------------------------------------------------------------------===//
// Beam search's candidates fused into the output projection
//===----------------------------------------------------------------------===//

/// The [rows, count] results of a tfm.linear_topk.
static std::pair<Value, Value> allocCandidates(KernelBuilder &k, Value x,
                                               Value count) {
  int64_t dyn = ShapedType::kDynamic;
  OpBuilder &b = k.builder();
  Value values =
      k.alloc(MemRefType::get({dyn, dyn}, b.getF32Type()), {k.dim(x, 0), count});
  Value ids =
      k.alloc(MemRefType::get({dyn, dyn}, b.getI32Type()), {k.dim(x, 0), count});
  return {values, ids};
}


/// tfm.linear_topk as loops: each row's logits to the runtime's candidate
/// scan (TopKScan, which beam search over tfm.linear's logits uses too: the
/// same bits).
static void lowerLinearTopkAsLoops(ConversionPatternRewriter &rewriter,
                                   LinearTopkOp op, Value x, Value w,
                                   Value scale, Value bias, Value never,
                                   Value eos, Value allow, Value values,
                                   Value ids) {
  Location loc = op.getLoc();
  Value eos64 =
      rewriter.create<arith::IndexCastOp>(loc, rewriter.getI64Type(), eos);
  auto dynamic = [&](Value v) { return dynamicMemRef(rewriter, loc, v); };
  headRowsAsLoops(
      rewriter, op, x, w, scale, bias, [&](Value logits, Value r) {
        Value r64 =
            rewriter.create<arith::IndexCastOp>(loc, rewriter.getI64Type(), r);
        callLibraryKernel(rewriter, op, kTopkScanKernel,
                          {dynamic(logits), dynamic(never), eos64,
                           dynamic(allow), r64, dynamic(values), dynamic(ids)});
      });
}

//===----------------------------------------------------------------------===//
// The two heads as patterns
//===----------------------------------------------------------------------===//

/// What differs between the heads: their results, their loops, their
/// library kernels.
struct ArgmaxHead {
  using Op = LinearArgmaxOp;
  static constexpr const char *kernels[4] = {
      kLinearArgmaxKernel, kLinearArgmaxF16Kernel, kLinearArgmaxBF16Kernel,
      kLinearArgmaxI8Kernel};
  static Value scale(Op::Adaptor a) { return a.getScale(); }
  static SmallVector<Value> allocResults(KernelBuilder &k, Op,
                                         Op::Adaptor adaptor) {
    Value x = adaptor.getInput();
    return {k.alloc(MemRefType::get({ShapedType::kDynamic},
                                    k.builder().getI32Type()),
                    {k.dim(x, 0)})};
  }
  static void loops(ConversionPatternRewriter &rewriter, Op op,
                    Op::Adaptor a, ValueRange results) {
    lowerLinearArgmaxAsLoops(rewriter, op, a.getInput(), a.getWeight(),
                             a.getScale(), a.getBias(), a.getNever(),
                             a.getEos(), a.getAllowEos(), results[0]);
  }
};

struct TopkHead {
  using Op = LinearTopkOp;
  static constexpr const char *kernels[4] = {
      kLinearTopkKernel, kLinearTopkF16Kernel, kLinearTopkBF16Kernel,
      kLinearTopkI8Kernel};
  static Value scale(Op::Adaptor a) { return a.getScale(); }
  static SmallVector<Value> allocResults(KernelBuilder &k, Op,
                                         Op::Adaptor adaptor) {
    auto [values, ids] = allocCandidates(k, adaptor.getInput(),
                                         adaptor.getCount());
    return {values, ids};
  }
  static void loops(ConversionPatternRewriter &rewriter, Op op,
                    Op::Adaptor a, ValueRange results) {
    lowerLinearTopkAsLoops(rewriter, op, a.getInput(), a.getWeight(),
                           a.getScale(), a.getBias(), a.getNever(), a.getEos(),
                           a.getAllowEos(), results[0], results[1]);
  }
};

/// A head as loops (--kernels loops).
template <typename Head>
struct HeadLowering : public OpConversionPattern<typename Head::Op> {
  using Op = typename Head::Op;
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    SmallVector<Value> results = Head::allocResults(k, op, adaptor);
    Head::loops(rewriter, op, adaptor, results);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// A head as a call of its runtime kernel, `tfm_rt_linear_argmax(x, w, b,
/// never, eos, allow, tokens)` or `tfm_rt_linear_topk(..., values, ids)`
/// (_f16, _bf16 for such weights), whose logits are those of
/// tfm_rt_linear; below `minRows` rows its loops, as for tfm.linear.
template <typename Head>
struct HeadToLibraryCall : public OpConversionPattern<typename Head::Op> {
  using Op = typename Head::Op;
  HeadToLibraryCall(TypeConverter &converter, MLIRContext *ctx,
                    int64_t minRows)
      : OpConversionPattern<Op>(converter, ctx, /*benefit=*/2),
        minRows(minRows) {}
  int64_t minRows;

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value x = adaptor.getInput();
    SmallVector<Value> results = Head::allocResults(k, op, adaptor);
    OpBuilder::InsertionGuard guard(rewriter);
    branchOnFewRows(rewriter, k, k.dim(x, 0), minRows,
                    [&] { Head::loops(rewriter, op, adaptor, results); });
    auto dynamic = [&](Value v) {
      return dynamicMemRef(rewriter, op.getLoc(), v);
    };
    Type element = op.getWeight().getType().getElementType();
    const char *kernel = Head::kernels[element.isF16()        ? 1
                                       : element.isBF16()     ? 2
                                       : element.isInteger(8) ? 3
                                                              : 0];
    Value eos = rewriter.create<arith::IndexCastOp>(
        op.getLoc(), rewriter.getI64Type(), adaptor.getEos());
    // An i8 weight's scale follows it, as for tfm_rt_linear_i8.
    SmallVector<Value> args{dynamic(x), dynamic(adaptor.getWeight())};
    if (Value scale = Head::scale(adaptor))
      args.push_back(dynamic(scale));
    args.append({dynamic(adaptor.getBias()), dynamic(adaptor.getNever()), eos,
                 dynamic(adaptor.getAllowEos())});
    for (Value r : results)
      args.push_back(dynamic(r));
    callLibraryKernel(rewriter, op, kernel, args);
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::tfm::loops::populateSearchHeadLowerings(
    TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<HeadLowering<ArgmaxHead>, HeadLowering<TopkHead>>(
      converter, patterns.getContext());
}

void mlir::tfm::loops::populateSearchHeadLibraryCallLowerings(
    TypeConverter &converter, RewritePatternSet &patterns, int64_t minRows) {
  patterns.add<HeadToLibraryCall<ArgmaxHead>, HeadToLibraryCall<TopkHead>>(
      converter, patterns.getContext(), minRows);
}
