//===- tfm-opt.cpp - MLIR optimizer driver with tfm registered ------------===//
#include "compiler/Pipelines/NestingLimit.h"
#include "compiler/Pipelines/Pipelines.h"
#include "dialects/tfm/IR/TfmDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tfm::registerTfmPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::tfm::TfmDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);

  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "tfm optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));

  // The whole text is checked before MLIR's recursive parser sees it.
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(input, &message);
  if (!file) {
    llvm::errs() << "error: " << message << "\n";
    return 1;
  }
  if (auto deep = mlir::tfm::findExcessiveNesting(file->getBuffer())) {
    llvm::errs() << "error: " << (input == "-" ? "<stdin>" : input) << ":"
                 << *deep << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> out =
      mlir::openOutputFile(output, &message);
  if (!out) {
    llvm::errs() << "error: " << message << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(out->os(), std::move(file), registry, config)))
    return 1;
  out->keep();
  return 0;
}
