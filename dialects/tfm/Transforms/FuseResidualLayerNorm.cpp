//===- FuseResidualLayerNorm.cpp - layer_norm(add) -> add_layer_norm ------===//
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMFUSERESIDUALLAYERNORM
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct FuseResidualLayerNorm : public OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    auto add = op.getInput().getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse())
      return failure();
    rewriter.replaceOpWithNewOp<AddLayerNormOp>(
        op, op.getType(), add.getLhs(), add.getRhs(), op.getWeight(),
        op.getBias(), op.getEpsilonAttr());
    rewriter.eraseOp(add);
    return success();
  }
};

struct TfmFuseResidualLayerNormPass
    : public tfm::impl::TfmFuseResidualLayerNormBase<
          TfmFuseResidualLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseResidualLayerNormPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::tfm::populateFuseResidualLayerNormPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseResidualLayerNorm>(patterns.getContext());
}
