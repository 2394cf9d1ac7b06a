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
/// the whole ladder there (NN-stage.mlir, 05-llvmir.ll, 06-asm.s).
llvm::Expected<std::string> emitModel(const tfmc::frontend::Model &model,
                                      Stage stage, llvm::StringRef dumpDir,
                                      const PipelineOptions &options = {});

} // namespace mlir::tfm

#endif // COMPILER_PIPELINES_EMITMODEL_H
