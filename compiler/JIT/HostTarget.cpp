//===- HostTarget.cpp - the host CPU as a code generation target ----------===//
#include "compiler/JIT/HostTarget.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

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
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeModel(llvm::CodeModel::Small);
  return builder->createTargetMachine();
}

std::string mlir::tfm::hostTargetDescription() {
  initialiseNativeTarget();
  std::string text =
      llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names;
  for (const auto &f : features)
    names.push_back((f.second ? "+" : "-") + f.first().str());
  llvm::sort(names);
  for (const std::string &n : names)
    text += " " + n;
  return text;
}

/// Ends a basic block after every call in `f` (an entry function:
/// straight-line code of a kernel call per op, ~1,500 for the base model;
/// or a wrapper's one call with hundreds of arguments, which followed by
/// its return in the same block is lowered as a candidate tail call).
/// Instruction selection and register allocation work a block at a time
/// and grow faster than the block's length: the base model's code
/// generation 1.24 -> 0.84 s (`llc -O3` on its IR); in `translate
/// --no-cache --timing`, LLVM 1.42-1.51 -> 1.17-1.20 s.
static void splitAfterCalls(llvm::Function &f) {
  std::vector<llvm::Instruction *> points;
  for (llvm::BasicBlock &block : f)
    for (llvm::Instruction &i : block)
      if (auto *call = llvm::dyn_cast<llvm::CallInst>(&i);
          call && !call->isMustTailCall()) // one must precede its return
        points.push_back(i.getNextNode());
  // Unnamed: SplitBlock's default name grows by ".split" a block.
  for (llvm::Instruction *point : points)
    llvm::SplitBlock(point->getParent(), point)->setName("");
}

/// Adds `_mlir_<F>(ptr args)` for every defined `_mlir_ciface_*` function F:
/// argument i is loaded from the pointer in args[i]; a result is stored
/// through args[n]. The runtime calls every entry this way.
static void addPackedEntries(llvm::Module &m) {
  llvm::LLVMContext &ctx = m.getContext();
  std::vector<llvm::Function *> interfaces;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && f.getName().starts_with("_mlir_ciface_"))
      interfaces.push_back(&f);
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  for (llvm::Function *f : interfaces) {
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                         /*isVarArg=*/false);
    auto *packed = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage, "_mlir_" + f->getName(), m);
    // As its C interface: loads and one call, nothing to optimise.
    packed->addFnAttr(llvm::Attribute::NoInline);
    packed->addFnAttr(llvm::Attribute::OptimizeNone);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    llvm::Value *args = packed->getArg(0);
    llvm::SmallVector<llvm::Value *> values;
    for (auto [i, param] : llvm::enumerate(f->args())) {
      llvm::Value *slot = b.CreateConstGEP1_64(ptr, args, i);
      llvm::Value *address = b.CreateLoad(ptr, slot);
      values.push_back(b.CreateLoad(param.getType(), address));
    }
    llvm::Value *result = b.CreateCall(f, values);
    if (!f->getReturnType()->isVoidTy()) {
      llvm::Value *slot = b.CreateConstGEP1_64(ptr, args, f->arg_size());
      b.CreateStore(result, b.CreateLoad(ptr, slot));
    }
    b.CreateRetVoid();
    splitAfterCalls(*packed);
  }
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
    if (llvm::Error e = optimize(m))
      return e;
    // After the optimiser, which would merge the blocks again (MLIR's
    // pipeline runs without the instrumentation that skips optnone
    // functions).
    for (llvm::Function &f : *m)
      if (!f.isDeclaration() && f.hasFnAttribute(llvm::Attribute::OptimizeNone))
        splitAfterCalls(f);
    return llvm::Error::success();
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

/// Runs the target's code generator over `m`, writing `kind`.
static llvm::Expected<std::string>
codegen(llvm::Module &m, llvm::TargetMachine &tm, llvm::CodeGenFileType kind) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, kind))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "the host target cannot emit %s",
        kind == llvm::CodeGenFileType::ObjectFile ? "objects" : "assembly");
  pm.run(m);
  return std::string(buffer.str());
}

llvm::Expected<std::string>
mlir::tfm::emitAssembly(ModuleOp module, const CodegenOptions &options) {
  return withHostModule(
      module, options, [](llvm::Module &m, llvm::TargetMachine &tm) {
        return codegen(m, tm, llvm::CodeGenFileType::AssemblyFile);
      });
}

llvm::Expected<std::string>
mlir::tfm::emitObject(ModuleOp module, const CodegenOptions &options) {
  return withHostModule(
      module, options, [](llvm::Module &m, llvm::TargetMachine &tm) {
        addPackedEntries(m);
        return codegen(m, tm, llvm::CodeGenFileType::ObjectFile);
      });
}
