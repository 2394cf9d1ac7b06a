//===- EmitModel.h - a model's IR at any stage ------------------*- C++ -*-===//
#ifndef COMPILER_PIPELINES_EMITMODEL_H
#define COMPILER_PIPELINES_EMITMODEL_H

#include "compiler/Pipelines/Pipelines.h"
#include "frontends/model/Model.h"

#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tfm {

/// Imports `model` and lowers it to `stage`; returns that stage's text
/// (MLIR, LLVM IR or host assembly). With `dumpDir`, writes every stage of
/// the whole ladder there (NN-stage.mlir, 05-llvmir.ll, 06-asm.s) and the
/// fused stage's graph (02-fused.dot, and 02-fused.svg when Graphviz is
/// installed).
llvm::Expected<std::string> emitModel(const tfmc::frontend::Model &model,
                                      Stage stage, llvm::StringRef dumpDir,
                                      const PipelineOptions &options = {});

/// Imports `model`, lowers it to the fused stage and draws it as a DOT
/// graph (OpGraph.h). `tfmOps`, when given, receives the number of tfm ops
/// drawn.
llvm::Expected<std::string> emitGraph(const tfmc::frontend::Model &model,
                                      const PipelineOptions &options = {},
                                      int64_t *tfmOps = nullptr);

} // namespace mlir::tfm

#endif // COMPILER_PIPELINES_EMITMODEL_H
