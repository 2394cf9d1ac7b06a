//===- FuzzTfmIR.cpp - tfm IR parsing and verification --------------------===//
#include "FuzzSupport.h"

#include "compiler/Pipelines/NestingLimit.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    mlir::DialectRegistry registry;
    mlir::tfm::registerPipelineDialects(registry);
    auto *c = new mlir::MLIRContext(registry,
                                    mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  mlir::ScopedDiagnosticHandler quiet(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer expects a NUL after the text (files are read that way by
  // tfm-opt); the fuzzer's buffer has none, so parse a copy.
  std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy.c_str(), size);
  // What tfm-opt does first: MLIR's recursive parser overflows the stack on
  // deeply nested text (a finding of this target), so such text is refused.
  if (mlir::tfm::findExcessiveNesting(text))
    return 0;
  // parseSourceString verifies what it parsed.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, context);
  (void)module;
  return 0;
}
