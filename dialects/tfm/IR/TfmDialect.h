//===- TfmDialect.h - the tfm dialect ---------------------------*- C++ -*-===//
#ifndef DIALECTS_TFM_IR_TFMDIALECT_H
#define DIALECTS_TFM_IR_TFMDIALECT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dialect.h"

#include "dialects/tfm/IR/TfmDialect.h.inc"
#include "dialects/tfm/IR/TfmEnums.h.inc"

namespace mlir::tfm {

/// Function-argument attributes the passes and the runtime agree on: a
/// weight tensor's name ("a|b" for a merged projection's packed parts),
/// and on the per-row scales of an int8 weight (tfm-quantize) the name of
/// that weight.
inline constexpr llvm::StringLiteral kWeightArgAttr = "tfm.weight";
inline constexpr llvm::StringLiteral kWeightScaleArgAttr = "tfm.weight_scale";
/// Names of what the runtime binds per call: inputs, KV caches (runtime-owned
/// memrefs) and function results.
inline constexpr llvm::StringLiteral kInputArgAttr = "tfm.input";
inline constexpr llvm::StringLiteral kCacheArgAttr = "tfm.cache";
inline constexpr llvm::StringLiteral kOutputResultAttr = "tfm.output";

} // namespace mlir::tfm

#endif // DIALECTS_TFM_IR_TFMDIALECT_H
