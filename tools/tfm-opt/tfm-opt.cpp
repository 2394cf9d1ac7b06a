//===- tfm-opt.cpp - MLIR optimizer driver with tfm registered ------------===//
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/tfm/IR/TfmDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tfm::registerTfmPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::tfm::TfmDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfm optimizer driver\n", registry));
}
