//===- HostTarget.cpp - the host CPU as a code generation target ----------===//
#include "compiler/JIT/HostTarget.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tfm;

static void initialiseNativeTarget() {
  static bool done = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)done;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::tfm::createHostTargetMachine() {
  initialiseNativeTarget();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder->createTargetMachine();
}

std::function<llvm::Error(llvm::Module *)>
mlir::tfm::makeHostOptimizer(llvm::TargetMachine *tm,
                             const CodegenOptions &options) {
  auto optimize = makeOptimizingTransformer(options.optLevel, 0, tm);
  bool prefer512 = options.prefer512;
  return [optimize, prefer512](llvm::Module *m) -> llvm::Error {
    for (llvm::Function &f : *m) {
      if (f.isDeclaration())
        continue;
      if (prefer512)
        f.addFnAttr("prefer-vector-width", "512");
      // The C-interface and packed wrappers only unpack memref descriptors
      // into a call with hundreds of scalar arguments: one huge basic block
      // that the optimising instruction scheduler takes seconds over, for
      // no run-time gain.
      if (f.getName().starts_with("_mlir_")) {
        f.removeFnAttr(llvm::Attribute::AlwaysInline);
        f.addFnAttr(llvm::Attribute::NoInline);
        f.addFnAttr(llvm::Attribute::OptimizeNone);
      }
    }
    return optimize(m);
  };
}

/// Translates and optimises `module` for the host.
static llvm::Expected<std::unique_ptr<llvm::Module>>
translate(ModuleOp module, llvm::LLVMContext &context, llvm::TargetMachine *tm,
          const CodegenOptions &options) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot translate the module to LLVM IR");
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple().getTriple());
  if (llvm::Error e = makeHostOptimizer(tm, options)(llvmModule.get()))
    return std::move(e);
  return std::move(llvmModule);
}

/// Translates and optimises `module` for the host, then hands the LLVM
/// module and the target machine to `emit`.
static llvm::Expected<std::string> withHostModule(
    ModuleOp module, const CodegenOptions &options,
    llvm::function_ref<llvm::Expected<std::string>(llvm::Module &,
                                                   llvm::TargetMachine &)>
        emit) {
  auto tm = createHostTargetMachine();
  if (!tm)
    return tm.takeError();
  llvm::LLVMContext context;
  auto llvmModule = translate(module, context, tm->get(), options);
  if (!llvmModule)
    return llvmModule.takeError();
  return emit(**llvmModule, **tm);
}

llvm::Expected<std::string>
mlir::tfm::emitLLVMIR(ModuleOp module, const CodegenOptions &options) {
  return withHostModule(module, options,
                        [](llvm::Module &m, llvm::TargetMachine &)
                            -> llvm::Expected<std::string> {
                          std::string text;
                          llvm::raw_string_ostream os(text);
                          m.print(os, nullptr);
                          return text;
                        });
}

llvm::Expected<std::string>
mlir::tfm::emitAssembly(ModuleOp module, const CodegenOptions &options) {
  return withHostModule(
      module, options,
      [](llvm::Module &m,
         llvm::TargetMachine &tm) -> llvm::Expected<std::string> {
        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream os(buffer);
        llvm::legacy::PassManager pm;
        if (tm.addPassesToEmitFile(pm, os, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              "the host target cannot emit assembly");
        pm.run(m);
        return std::string(buffer.str());
      });
}
