//===- EmbeddingLowering.cpp - token embeddings, positions ----------------===//
//
// tfm.embedding (a row gather, scaled) and tfm.positional_encoding (the
// table row of each position added).
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TfmToLoops/OpLowering.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::loops;

namespace {

//===----------------------------------------------------------------------===//
// Embedding and positions
//===----------------------------------------------------------------------===//

struct EmbeddingLowering : public TfmLowering<EmbeddingOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getIds());
    float scale = op.getScale().convertToFloat();
    std::string base = "embedding";
    if (scale != 1.0f)
      base += "_scaled";
    // The scale is a kernel argument only when it is not 1.
    SmallVector<Value> args{adaptor.getIds(), adaptor.getTable(), out};
    callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
      Value ids = a[0], table = a[1], result = a[2];
      Value zero = k.index(0);
      Value lastRow = k.addIndex(k.dim(table, 0), k.index(-1));
      Value scaleValue = k.f32(scale);
      k.forEachRow(ids, [&](Value b, Value t) {
        Value row = k.clampedIndex(k.load(ids, {b, t}), zero, lastRow);
        k.loop(zero, k.dim(table, 1), [&](Value d) {
          Value v = k.load(table, {row, d});
          k.store(scale == 1.0f ? v : k.mul(v, scaleValue), result, {b, t, d});
        });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct PositionalEncodingLowering : public TfmLowering<PositionalEncodingOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(PositionalEncodingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    Value offset = adaptor.getOffset() ? adaptor.getOffset() : caller.index(0);
    SmallVector<Value> args{adaptor.getInput(), adaptor.getTable(), offset,
                            out};
    callKernel(rewriter, op, "positional_encoding", args,
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], table = a[1], first = a[2], result = a[3];
                 Value zero = k.index(0);
                 Value lastRow = k.addIndex(k.dim(table, 0), k.index(-1));
                 k.forEachRow(in, [&](Value b, Value t) {
                   Value pos = k.minIndex(k.addIndex(first, t), lastRow);
                   k.loop(zero, k.dim(in, 2), [&](Value d) {
                     k.store(
                         k.add(k.load(in, {b, t, d}), k.load(table, {pos, d})),
                         result, {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::tfm::loops::populateEmbeddingLowerings(TypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, PositionalEncodingLowering>(
      converter, patterns.getContext());
}
