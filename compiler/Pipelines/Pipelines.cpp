//===- Pipelines.cpp - the tfm stage ladder -------------------------------===//
#include "compiler/Pipelines/Pipelines.h"
#include "frontends/model/FileSupport.h"

#include "compiler/Conversion/Passes.h"
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tfm;

static constexpr llvm::StringLiteral stageNames[] = {
    "tfm", "fused", "loops", "llvm", "llvmir", "asm", "obj"};

llvm::StringRef mlir::tfm::stageName(Stage stage) {
  return stageNames[static_cast<int>(stage)];
}

std::optional<Stage> mlir::tfm::parseStage(llvm::StringRef name) {
  for (auto [i, n] : llvm::enumerate(stageNames))
    if (n == name)
      return static_cast<Stage>(i);
  return std::nullopt;
}

void mlir::tfm::buildFusionPipeline(OpPassManager &pm,
                                    const PipelineOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createTfmLowerMultiHeadAttention());
  fn.addPass(createTfmMergeProjections());
  fn.addPass(createTfmFuseResidualLayerNorm());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  // After merging, so a merged projection is quantized as one weight.
  if (options.computeType != "float32") {
    TfmQuantizeOptions quantize;
    quantize.computeType = options.computeType;
    quantize.outputProjection = options.quantizeOutputProjection;
    fn.addPass(createTfmQuantize(quantize));
  }
  // Keys/values in float16 halve what attention reads per decoder step.
  if (options.halfCaches)
    pm.addPass(createTfmHalfCaches());
  // Last: decode_greedy and decode_beam copy decode_step as it will be
  // compiled.
  pm.addPass(createTfmGreedyHead());
  pm.addPass(createTfmBeamHead());
}

void mlir::tfm::buildLoopsPipeline(OpPassManager &pm,
                                   const PipelineOptions &options) {
  if (options.profile)
    pm.addPass(createTfmInstrumentProfile());
  TfmToLoopsOptions loops;
  loops.useLibraryCalls = options.useLibraryCalls;
  loops.libraryMinRows = options.libraryMinRows;
  loops.attentionPrefetchLevel = options.attentionPrefetchLevel;
  pm.addPass(createTfmToLoops(loops));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tfm::buildLLVMPipeline(OpPassManager &pm, const PipelineOptions &) {
  pm.addPass(createTfmDropArgumentRoles());
  // Polynomial exp/erf keep the softmax and GELU loops vectorisable.
  pm.addPass(createTfmApproximateMath());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createConvertMathToLLVMPass());
  // What LLVM has no intrinsic for (erf) becomes a libm call.
  pm.addPass(createConvertMathToLibmPass());
  // Explicit vectors of the attention kernels.
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::tfm::registerTfmPipelines() {
  registerTfmPasses();
  registerTfmConversionPasses();
  PassPipelineRegistration<>(
      "tfm-fuse", "tfm -> fused: the tfm-level fusion passes",
      [](OpPassManager &pm) { buildFusionPipeline(pm, {}); });
  PassPipelineRegistration<>(
      "tfm-lower-to-loops", "fused -> loops: buffers and loop nests",
      [](OpPassManager &pm) { buildLoopsPipeline(pm, {}); });
  PassPipelineRegistration<>("tfm-lower-to-llvm",
                             "tfm -> LLVM dialect: the whole ladder",
                             [](OpPassManager &pm) {
                               buildFusionPipeline(pm, {});
                               buildLoopsPipeline(pm, {});
                               buildLLVMPipeline(pm, {});
                             });
}

void mlir::tfm::registerPipelineDialects(DialectRegistry &registry) {
  registry
      .insert<TfmDialect, func::FuncDialect, arith::ArithDialect,
              math::MathDialect, tensor::TensorDialect, memref::MemRefDialect,
              scf::SCFDialect, vector::VectorDialect, cf::ControlFlowDialect,
              LLVM::LLVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

std::string mlir::tfm::dumpFileName(Stage stage, llvm::StringRef extension) {
  int number = static_cast<int>(stage) + 1;
  return (number < 10 ? "0" : "") + std::to_string(number) + "-" +
         stageName(stage).str() + "." + extension.str();
}

std::vector<std::string> mlir::tfm::dumpFileNames() {
  return {
      dumpFileName(Stage::Tfm, "mlir"),   dumpFileName(Stage::Fused, "mlir"),
      dumpFileName(Stage::Fused, "dot"),  dumpFileName(Stage::Fused, "svg"),
      dumpFileName(Stage::Loops, "mlir"), dumpFileName(Stage::LLVM, "mlir"),
      dumpFileName(Stage::LLVMIR, "ll"),  dumpFileName(Stage::Asm, "s")};
}

llvm::Error mlir::tfm::dumpStage(llvm::StringRef dumpDir, Stage stage,
                                 llvm::StringRef extension,
                                 llvm::StringRef text) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir))
    return llvm::createStringError(ec, "cannot create directory '%s': %s",
                                   dumpDir.str().c_str(), ec.message().c_str());
  llvm::SmallString<256> path(dumpDir);
  llvm::sys::path::append(path, dumpFileName(stage, extension));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write '%s': %s", path.c_str(),
                                   ec.message().c_str());
  os << text;
  os.close();
  if (std::error_code error = tfmc::frontend::takeWriteError(os))
    return llvm::createStringError(error, "cannot write '%s': %s", path.c_str(),
                                   error.message().c_str());
  return llvm::Error::success();
}

void mlir::tfm::printModule(ModuleOp module, llvm::raw_ostream &os,
                            const PipelineOptions &options) {
  OpPrintingFlags flags;
  if (options.printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module.print(os, flags);
}

llvm::Error mlir::tfm::lowerToStage(ModuleOp module, Stage from, Stage to,
                                    const PipelineOptions &options,
                                    llvm::StringRef dumpDir) {
  MLIRContext *ctx = module.getContext();
  if (!dumpDir.empty() && from == Stage::Tfm) {
    std::string text;
    llvm::raw_string_ostream os(text);
    printModule(module, os, options);
    if (llvm::Error e = dumpStage(dumpDir, Stage::Tfm, "mlir", text))
      return e;
  }
  for (int s = static_cast<int>(from) + 1;
       s <= static_cast<int>(to) && s <= static_cast<int>(Stage::LLVM); ++s) {
    auto stage = static_cast<Stage>(s);
    PassManager pm(ctx);
    pm.enableVerifier(options.verifyEach);
    std::optional<TimingScope> stageTiming;
    if (options.timing) {
      stageTiming.emplace(options.timing->nest(
          ("MLIR pipeline: to " + stageName(stage)).str()));
      pm.enableTiming(*stageTiming);
    }
    if (stage == Stage::Fused)
      buildFusionPipeline(pm, options);
    else if (stage == Stage::Loops)
      buildLoopsPipeline(pm, options);
    else
      buildLLVMPipeline(pm, options);
    std::string diagnostics;
    {
      // Collect diagnostics into the error rather than printing them.
      ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
        llvm::raw_string_ostream os(diagnostics);
        os << d.getLocation() << ": " << d.str() << "\n";
        return success();
      });
      if (failed(pm.run(module)))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "lowering to the '%s' stage failed: %s",
            stageName(stage).str().c_str(),
            diagnostics.empty() ? "unknown error" : diagnostics.c_str());
    }
    if (!dumpDir.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      printModule(module, os, options);
      if (llvm::Error e = dumpStage(dumpDir, stage, "mlir", text))
        return e;
    }
  }
  return llvm::Error::success();
}
