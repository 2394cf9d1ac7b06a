//===- TfmToLoops.cpp - tfm on tensors -> scf loops on buffers ------------===//
//
// The pass: functions to destination-passing style, tensors to memrefs, and
// every tfm op to a loop nest over memrefs (the ops' lowerings live in
// EmbeddingLowering, LinearLowering, RowOpLowering and AttentionLowering;
// where the entry functions' own buffers live: FunctionBuffers).
// Loops are ordered so that the innermost one walks contiguous memory (LLVM
// vectorises it); reductions carry reassociation flags so they vectorise
// too.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/TfmToLoops/FunctionBuffers.h"
#include "compiler/Conversion/TfmToLoops/OpLowering.h"
#include "dialects/tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMTOLOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

//===----------------------------------------------------------------------===//
// Functions in destination-passing style
//===----------------------------------------------------------------------===//

/// Tensor arguments become memrefs; each result becomes a trailing memref
/// argument (carrying the result's attributes) and the function returns
/// nothing.
struct FuncToDestinationStyle : public OpConversionPattern<func::FuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::FuncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.isExternal())
      return failure();
    FunctionType type = op.getFunctionType();
    const TypeConverter &converter = *getTypeConverter();
    TypeConverter::SignatureConversion signature(type.getNumInputs());
    for (auto [i, t] : llvm::enumerate(type.getInputs()))
      signature.addInputs(i, converter.convertType(t));
    SmallVector<Type> outputs;
    for (Type t : type.getResults())
      outputs.push_back(converter.convertType(t));
    signature.addInputs(outputs);

    SmallVector<Attribute> argAttrs;
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      argAttrs.push_back(op.getArgAttrDict(i) ? Attribute(op.getArgAttrDict(i))
                                              : rewriter.getDictionaryAttr({}));
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      argAttrs.push_back(op.getResultAttrDict(i)
                             ? Attribute(op.getResultAttrDict(i))
                             : rewriter.getDictionaryAttr({}));

    rewriter.modifyOpInPlace(op, [&] {
      // Entry functions are straight-line sequences of kernel calls: nothing
      // to optimise, and code generation for them is the slowest part of
      // the JIT when optimised.
      op->setAttr("passthrough",
                  rewriter.getArrayAttr({rewriter.getStringAttr("noinline"),
                                         rewriter.getStringAttr("optnone")}));
      op.setType(rewriter.getFunctionType(signature.getConvertedTypes(), {}));
      op.setArgAttrsAttr(rewriter.getArrayAttr(argAttrs));
      op.removeResAttrsAttr();
    });
    rewriter.applySignatureConversion(&op.getBody().front(), signature,
                                      &converter);
    return success();
  }
};

/// `return %a, %b` copies each value into its destination argument.
struct ReturnToCopies : public OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto func = op->getParentOfType<func::FuncOp>();
    Block &entry = func.getBody().front();
    auto destinations =
        entry.getArguments().take_back(adaptor.getOperands().size());
    for (auto [value, dest] : llvm::zip(adaptor.getOperands(), destinations))
      rewriter.create<memref::CopyOp>(op.getLoc(), value, dest);
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }
};

struct DimLowering : public OpConversionPattern<tensor::DimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<memref::DimOp>(op, adaptor.getSource(),
                                               adaptor.getIndex());
    return success();
  }
};

class TensorToMemRefConverter : public TypeConverter {
public:
  TensorToMemRefConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](RankedTensorType t) -> Type {
      return MemRefType::get(t.getShape(), t.getElementType());
    });
  }
};

struct TfmToLoopsPass : public tfm::impl::TfmToLoopsBase<TfmToLoopsPass> {
  using TfmToLoopsBase::TfmToLoopsBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TensorToMemRefConverter converter;
    RewritePatternSet patterns(ctx);
    if (attentionPrefetchLevel != 1 && attentionPrefetchLevel != 2) {
      getOperation().emitError("attention-prefetch-level must be 1 or 2, not ")
          << static_cast<int64_t>(attentionPrefetchLevel);
      return signalPassFailure();
    }
    populateTfmToLoopsPatterns(converter, patterns, attentionPrefetchLevel);
    if (useLibraryCalls)
      populateTfmToLibraryCallPatterns(converter, patterns, libraryMinRows);

    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect,
                           vector::VectorDialect>();
    target.addIllegalDialect<TfmDialect>();
    target.addIllegalOp<tensor::DimOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return f.getFunctionType().getNumResults() == 0 &&
             converter.isSignatureLegal(f.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [](func::ReturnOp r) { return r.getNumOperands() == 0; });
    target.addLegalOp<ModuleOp, func::CallOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    loops::forwardResults(getOperation());
    loops::freeBuffers(getOperation());
  }
};

} // namespace

void mlir::tfm::populateTfmToLoopsPatterns(TypeConverter &converter,
                                           RewritePatternSet &patterns,
                                           int64_t attentionPrefetchLevel) {
  loops::populateEmbeddingLowerings(converter, patterns);
  loops::populateLinearLowerings(converter, patterns);
  loops::populateSearchHeadLowerings(converter, patterns);
  loops::populateRowOpLowerings(converter, patterns);
  loops::populateAttentionLowerings(converter, patterns,
                                    attentionPrefetchLevel);
  patterns.add<FuncToDestinationStyle, ReturnToCopies, DimLowering>(
      converter, patterns.getContext());
}

void mlir::tfm::populateTfmToLibraryCallPatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns,
                                                 int64_t minRows) {
  loops::populateLinearLibraryCallLowerings(converter, patterns, minRows);
  loops::populateSearchHeadLibraryCallLowerings(converter, patterns, minRows);
}
