//===- JitModule.cpp - a compiled object linked into the process ----------===//
#include "compiler/JIT/JitModule.h"
#include "compiler/JIT/PerfMap.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::tfm;

llvm::Expected<std::unique_ptr<JitModule>>
JitModule::load(llvm::StringRef object, const SymbolList &symbols) {
  // createHostTargetMachine initialises the native target.
  if (auto tm = createHostTargetMachine(); !tm)
    return tm.takeError();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeModel(llvm::CodeModel::Small);
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*builder))
                 .create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &dylib = (*jit)->getMainJITDylib();
  // Kernels first: a definition in the dylib wins over the process search
  // (the buffer pool's malloc/free over libc's).
  if (!symbols.empty()) {
    llvm::orc::SymbolMap map;
    for (const auto &[name, address] : symbols)
      map[(*jit)->mangleAndIntern(name)] = {
          llvm::orc::ExecutorAddr::fromPtr(address),
          llvm::JITSymbolFlags::Exported};
    if (llvm::Error e = dylib.define(llvm::orc::absoluteSymbols(map)))
      return std::move(e);
  }
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  dylib.addGenerator(std::move(*process));
  if (llvm::Error e = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(object, "tfmc-model.o")))
    return std::move(e);
  if (perfMapRequested())
    appendPerfMap(**jit, object);
  return std::unique_ptr<JitModule>(new JitModule(std::move(*jit)));
}

llvm::Expected<std::unique_ptr<JitModule>>
JitModule::create(ModuleOp llvmDialectModule, const CodegenOptions &options,
                  const SymbolList &symbols) {
  auto object = emitObject(llvmDialectModule, options);
  if (!object)
    return object.takeError();
  return load(*object, symbols);
}

llvm::Expected<JitModule::PackedFunction>
JitModule::lookup(llvm::StringRef name) const {
  auto address = jit->lookup(("_mlir__mlir_ciface_" + name).str());
  if (!address)
    return address.takeError();
  return address->toPtr<PackedFunction>();
}
