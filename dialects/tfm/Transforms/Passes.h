//===- Passes.h - tfm-to-tfm passes -----------------------------*- C++ -*-===//
#ifndef DIALECTS_TFM_TRANSFORMS_PASSES_H
#define DIALECTS_TFM_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tfm {

/// The module attribute tfm-instrument-profile writes its op table to.
constexpr llvm::StringLiteral kProfileTableAttr = "tfm.profile";

#define GEN_PASS_DECL
#include "dialects/tfm/Transforms/Passes.h.inc"

void populateLowerMultiHeadAttentionPatterns(RewritePatternSet &patterns);
void populateFuseResidualLayerNormPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "dialects/tfm/Transforms/Passes.h.inc"

} // namespace mlir::tfm

#endif // DIALECTS_TFM_TRANSFORMS_PASSES_H
