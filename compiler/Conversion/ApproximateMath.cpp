//===- ApproximateMath.cpp - vectorisable exp and erf ---------------------===//
#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMAPPROXIMATEMATH
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct TfmApproximateMathPass
    : public tfm::impl::TfmApproximateMathBase<TfmApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
