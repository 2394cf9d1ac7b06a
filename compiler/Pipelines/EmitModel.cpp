//===- EmitModel.cpp - a model's IR at any stage --------------------------===//
#include "compiler/Pipelines/EmitModel.h"

#include "compiler/JIT/HostTarget.h"
#include "compiler/Pipelines/OpGraph.h"
#include "frontends/importer/Importer.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tfm;

namespace {

void prepare(MLIRContext &context) {
  DialectRegistry registry;
  registerPipelineDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

OwningOpRef<ModuleOp> import(MLIRContext &context,
                             const tfmc::frontend::Model &model) {
  // An encoder-only model has nothing but its encoder states to show.
  tfmc::frontend::ImportOptions options;
  options.encoderStates = model.desc.arch.encoderOnly();
  return tfmc::frontend::importModel(context, model.desc.arch,
                                     model.sourceVocab.size(),
                                     model.targetVocab.size(), options);
}

} // namespace

llvm::Expected<std::string>
mlir::tfm::emitGraph(const tfmc::frontend::Model &model,
                     const PipelineOptions &options, int64_t *tfmOps) {
  MLIRContext context;
  prepare(context);
  OwningOpRef<ModuleOp> module = import(context, model);
  if (llvm::Error e = lowerToStage(*module, Stage::Tfm, Stage::Fused, options))
    return std::move(e);
  if (tfmOps)
    *tfmOps = countTfmOps(*module);
  return printOpGraph(*module);
}

llvm::Expected<std::string>
mlir::tfm::emitModel(const tfmc::frontend::Model &model, Stage stage,
                     llvm::StringRef dumpDir, const PipelineOptions &options) {
  MLIRContext context;
  prepare(context);
  OwningOpRef<ModuleOp> module = import(context, model);
  bool dumping = !dumpDir.empty();
  Stage last = dumping ? std::max(stage, Stage::Asm) : stage;
  Stage mlirLast = last < Stage::LLVM ? last : Stage::LLVM;
  std::string result;
  auto capture = [&](Stage s) {
    if (s != stage)
      return;
    llvm::raw_string_ostream os(result);
    printModule(*module, os, options);
  };
  capture(Stage::Tfm);
  for (int s = static_cast<int>(Stage::Fused); s <= static_cast<int>(mlirLast);
       ++s) {
    auto next = static_cast<Stage>(s);
    if (llvm::Error e = lowerToStage(*module, static_cast<Stage>(s - 1), next,
                                     options, dumpDir))
      return std::move(e);
    capture(next);
    if (dumping && next == Stage::Fused) {
      std::string dot = printOpGraph(*module);
      if (llvm::Error e = dumpStage(dumpDir, Stage::Fused, "dot", dot))
        return std::move(e);
      // The picture too, where Graphviz is installed.
      if (llvm::Expected<std::string> svg = renderSvg(dot)) {
        if (llvm::Error e = dumpStage(dumpDir, Stage::Fused, "svg", *svg))
          return std::move(e);
      } else {
        llvm::consumeError(svg.takeError());
      }
    }
  }
  CodegenOptions codegen;
  if (last >= Stage::LLVMIR) {
    auto ir = emitLLVMIR(*module, codegen);
    if (!ir)
      return ir.takeError();
    if (dumping)
      if (llvm::Error e = dumpStage(dumpDir, Stage::LLVMIR, "ll", *ir))
        return std::move(e);
    if (stage == Stage::LLVMIR)
      result = std::move(*ir);
  }
  if (last >= Stage::Asm) {
    auto assembly = emitAssembly(*module, codegen);
    if (!assembly)
      return assembly.takeError();
    if (dumping)
      if (llvm::Error e = dumpStage(dumpDir, Stage::Asm, "s", *assembly))
        return std::move(e);
    if (stage == Stage::Asm)
      result = std::move(*assembly);
  }
  if (stage == Stage::Obj) {
    auto object = emitObject(*module, codegen);
    if (!object)
      return object.takeError();
    result = std::move(*object);
  }
  return result;
}
