//===- OpLowering.h - shared by the op lowerings ----------------*- C++ -*-===//
//
// Internal to compiler/Conversion/TfmToLoops: the base of the op lowering
// patterns, kernel functions created once per distinct signature, and the
// populate functions of the per-concept files (embeddings, linear layers,
// row ops, attention) that TfmToLoops.cpp gathers.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_CONVERSION_TFMTOLOOPS_OPLOWERING_H
#define COMPILER_CONVERSION_TFMTOLOOPS_OPLOWERING_H

#include "compiler/Conversion/TfmToLoops/KernelBuilder.h"
#include "dialects/tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace mlir::tfm::loops {

/// Base for the op lowerings: gives the converted result type.
template <typename Op> struct TfmLowering : public OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;

  MemRefType resultType(Op op) const {
    return cast<MemRefType>(
        this->getTypeConverter()->convertType(op->getResult(0).getType()));
  }
};

/// Allocates a [B, T, N] buffer whose batch and sequence extents are those
/// of `like`.
Value allocRows(KernelBuilder &k, MemRefType type, Value like);

/// A readable, unique kernel name: the op, its attributes and the operand
/// shapes ("D" for a dynamic extent), e.g. tfm_linear_relu.DxDx64.128x64.128.
std::string kernelName(StringRef base, TypeRange types);

/// Calls the kernel `base` specialised for the types of `args`, creating it
/// on first use with `body` (given the kernel's arguments). Each distinct
/// kernel is compiled once however many layers use it, which keeps JIT time
/// independent of the model's depth.
void callKernel(ConversionPatternRewriter &rewriter, Operation *op,
                StringRef base, ValueRange operands,
                function_ref<void(KernelBuilder &, ValueRange)> body);

/// Shared by the linear layers and the search heads (LinearLowering.cpp):
/// calls the loop kernel of a float32/float16/bfloat16 linear layer,
/// out = act(x · wᵀ + bias).
void callFloatLinearKernel(ConversionPatternRewriter &rewriter, Operation *op,
                           Activation act, Value x, Value w, Value bias,
                           Value out);
/// ... and of any weight type: an i8 weight with its `scale` (null for the
/// others).
void callLinearKernel(ConversionPatternRewriter &rewriter, Operation *op,
                      Activation act, Value x, Value w, Value scale, Value bias,
                      Value out);
/// With minRows > 1: emits `scf.if rows < minRows`, `loops()` in its then
/// branch, and leaves the insertion point in its else branch.
void branchOnFewRows(ConversionPatternRewriter &rewriter, KernelBuilder &k,
                     Value rows, int64_t minRows, function_ref<void()> loops);
/// `v` as a memref of `v`'s rank with every extent dynamic.
Value dynamicMemRef(ConversionPatternRewriter &rewriter, Location loc,
                    Value v);
/// Calls the runtime's kernel `kernel` (C interface), declaring it on
/// first use.
void callLibraryKernel(ConversionPatternRewriter &rewriter, Operation *op,
                       StringRef kernel, ValueRange args);

/// The patterns of each concept's file.
void populateEmbeddingLowerings(TypeConverter &converter,
                                RewritePatternSet &patterns);
void populateLinearLowerings(TypeConverter &converter,
                             RewritePatternSet &patterns);
void populateLinearLibraryCallLowerings(TypeConverter &converter,
                                        RewritePatternSet &patterns,
                                        int64_t minRows);
/// tfm.linear_argmax and tfm.linear_topk (SearchHeadLowering.cpp).
void populateSearchHeadLowerings(TypeConverter &converter,
                                 RewritePatternSet &patterns);
void populateSearchHeadLibraryCallLowerings(TypeConverter &converter,
                                            RewritePatternSet &patterns,
                                            int64_t minRows);
void populateRowOpLowerings(TypeConverter &converter,
                            RewritePatternSet &patterns);
/// Attention's key and value prefetches fill cache level `prefetchLevel`
/// (1 or 2).
void populateAttentionLowerings(TypeConverter &converter,
                                RewritePatternSet &patterns,
                                int64_t prefetchLevel);

} // namespace mlir::tfm::loops

#endif // COMPILER_CONVERSION_TFMTOLOOPS_OPLOWERING_H
