//===- LowerMultiHeadAttention.cpp - MHA -> projections + attention core --===//
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMLOWERMULTIHEADATTENTION
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct LowerMultiHeadAttention : public OpRewritePattern<MultiHeadAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // The parts are named after the attention and their weights
    // (`N.query_linear`, as the model file's `N.query_linear.weight`), so
    // that a profile's rows and the IR's locations tell them apart.
    auto part = [&](llvm::StringRef what) -> Location {
      if (auto name = dyn_cast<NameLoc>(loc))
        return NameLoc::get(
            rewriter.getStringAttr(name.getName().strref() + "." + what));
      return loc;
    };
    auto project = [&](Value input, Value weight, Value bias,
                       llvm::StringRef what) -> Value {
      auto inType = cast<RankedTensorType>(input.getType());
      auto type = RankedTensorType::get(
          {inType.getDimSize(0), inType.getDimSize(1),
           cast<ShapedType>(weight.getType()).getDimSize(0)},
          inType.getElementType());
      return rewriter.create<LinearOp>(part(what), type, Activation::none,
                                       input, weight, bias);
    };
    Value query = project(op.getQuery(), op.getQueryWeight(), op.getQueryBias(),
                          "query_linear");
    Value key = project(op.getKeyValue(), op.getKeyWeight(), op.getKeyBias(),
                        "key_linear");
    Value value = project(op.getKeyValue(), op.getValueWeight(),
                          op.getValueBias(), "value_linear");

    Value queryOffset, kvLength;
    if (Value position = op.getCachePosition()) {
      rewriter.create<CacheWriteOp>(part("key_cache"), key, op.getKeyCache(),
                                    position);
      rewriter.create<CacheWriteOp>(part("value_cache"), value,
                                    op.getValueCache(), position);
      Value newSteps = rewriter.create<tensor::DimOp>(loc, op.getKeyValue(), 1);
      kvLength = rewriter.create<arith::AddIOp>(loc, position, newSteps);
      if (op.getMaskKind() == MaskKind::causal)
        queryOffset = position;
      key = op.getKeyCache();
      value = op.getValueCache();
    }

    int64_t dModel = cast<ShapedType>(op.getQuery().getType()).getDimSize(2);
    int64_t headDim = dModel / op.getNumHeads();
    auto scale = static_cast<float>(1.0 / std::sqrt(double(headDim)));
    Value attended = rewriter.create<AttentionOp>(
        loc, query.getType(), op.getMaskKindAttr(), query, key, value,
        op.getNumHeadsAttr(), rewriter.getF32FloatAttr(scale),
        op.getKeyLengths(), /*key_rows=*/Value(), queryOffset, kvLength);
    rewriter.replaceOp(op, project(attended, op.getOutputWeight(),
                                   op.getOutputBias(), "output_linear"));
    return success();
  }
};

struct TfmLowerMultiHeadAttentionPass
    : public tfm::impl::TfmLowerMultiHeadAttentionBase<
          TfmLowerMultiHeadAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLowerMultiHeadAttentionPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::tfm::populateLowerMultiHeadAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerMultiHeadAttention>(patterns.getContext());
}
