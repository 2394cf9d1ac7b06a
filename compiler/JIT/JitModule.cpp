//===- JitModule.cpp - LLVM-dialect module compiled in process ------------===//
#include "compiler/JIT/JitModule.h"

#include "llvm/ExecutionEngine/Orc/Mangling.h"

using namespace mlir;
using namespace mlir::tfm;

llvm::Expected<std::unique_ptr<JitModule>>
JitModule::create(ModuleOp llvmDialectModule, const CodegenOptions &options,
                  llvm::ArrayRef<std::pair<std::string, void *>> symbols) {
  auto tm = createHostTargetMachine();
  if (!tm)
    return tm.takeError();
  // ExecutionEngineOptions::transformer is a function_ref: keep the
  // optimizer alive until create() returns.
  std::function<llvm::Error(llvm::Module *)> optimizer =
      makeHostOptimizer(tm->get(), options);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = optimizer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine =
      ExecutionEngine::create(llvmDialectModule, engineOptions, std::move(*tm));
  if (!engine)
    return engine.takeError();
  if (!symbols.empty())
    (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      for (const auto &[name, address] : symbols)
        map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                               llvm::JITSymbolFlags::Exported};
      return map;
    });
  return std::unique_ptr<JitModule>(new JitModule(std::move(*engine)));
}

llvm::Expected<JitModule::PackedFunction>
JitModule::lookup(llvm::StringRef name) const {
  auto fn = engine->lookupPacked(("_mlir_ciface_" + name).str());
  if (!fn)
    return fn.takeError();
  return *fn;
}
