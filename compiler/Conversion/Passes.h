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

/// Patterns lowering tfm ops (with converted memref operands) to loops;
/// attention's prefetches fill cache level `attentionPrefetchLevel` (1 or
/// 2).
void populateTfmToLoopsPatterns(TypeConverter &converter,
                                RewritePatternSet &patterns,
                                int64_t attentionPrefetchLevel = 1);
/// Patterns lowering tfm.linear to calls of the runtime's library kernel.
/// Layers with fewer than `minRows` rows use the loop kernel instead (a run
/// time choice).
void populateTfmToLibraryCallPatterns(TypeConverter &converter,
                                      RewritePatternSet &patterns,
                                      int64_t minRows = 1);

/// Name of the runtime's linear-layer kernel (C interface).
inline constexpr const char *kLinearKernel = "tfm_rt_linear";
inline constexpr const char *kLinearF16Kernel = "tfm_rt_linear_f16";
inline constexpr const char *kLinearI8Kernel = "tfm_rt_linear_i8";
inline constexpr const char *kLinearBF16Kernel = "tfm_rt_linear_bf16";
/// ... and of tfm.linear_argmax's (float32, float16, bfloat16 and int8
/// weights).
inline constexpr const char *kLinearArgmaxKernel = "tfm_rt_linear_argmax";
inline constexpr const char *kLinearArgmaxI8Kernel = "tfm_rt_linear_argmax_i8";
inline constexpr const char *kLinearArgmaxF16Kernel =
    "tfm_rt_linear_argmax_f16";
inline constexpr const char *kLinearArgmaxBF16Kernel =
    "tfm_rt_linear_argmax_bf16";
/// ... and of tfm.linear_topk's, and the candidate scan its loop kernels
/// call (in every build).
inline constexpr const char *kLinearTopkKernel = "tfm_rt_linear_topk";
inline constexpr const char *kLinearTopkF16Kernel = "tfm_rt_linear_topk_f16";
inline constexpr const char *kLinearTopkBF16Kernel =
    "tfm_rt_linear_topk_bf16";
inline constexpr const char *kLinearTopkI8Kernel = "tfm_rt_linear_topk_i8";
inline constexpr const char *kTopkScanKernel = "tfm_rt_topk_scan";
/// int8 linear layers quantize each input row to [-63, 63]: 7 bits, so that
/// the unsigned-times-signed byte products of AVX2 kernels without VNNI
/// (vpmaddubsw sums pairs into int16) can never saturate: 2 · 127 · 127 <
/// 32767. The loop kernel uses the same levels so both paths agree.
inline constexpr int kActivationLevels = 63;
/// Greedy search's choice (tfm.linear_argmax) for a row whose chosen logit
/// is NaN or infinite: the model's arithmetic overflowed float32, so the
/// row ends there and the runtime says so (runtime::kNotFiniteChoice, which
/// a unit test checks equal).
inline constexpr int32_t kNotFiniteChoice = -2;

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace mlir::tfm

#endif // COMPILER_CONVERSION_PASSES_H
