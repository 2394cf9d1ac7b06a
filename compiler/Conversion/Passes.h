//===- Passes.h - tfm conversions -------------------------------*- C++ -*-===//
#ifndef COMPILER_CONVERSION_PASSES_H
#define COMPILER_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

/// Patterns lowering tfm ops (with converted memref operands) to loops.
void populateTfmToLoopsPatterns(TypeConverter &converter,
                                RewritePatternSet &patterns);
/// Patterns lowering tfm.linear to calls of the runtime's library kernel.
/// Layers with fewer than `minRows` rows use the loop kernel instead (a run
/// time choice).
void populateTfmToLibraryCallPatterns(TypeConverter &converter,
                                      RewritePatternSet &patterns,
                                      int64_t minRows = 1);

/// Name of the runtime's linear-layer kernel (C interface).
inline constexpr const char *kLinearKernel = "tfm_rt_linear";

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace mlir::tfm

#endif // COMPILER_CONVERSION_PASSES_H
