//===- HostTarget.h - the host CPU as a code generation target --*- C++ -*-===//
#ifndef COMPILER_JIT_HOSTTARGET_H
#define COMPILER_JIT_HOSTTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <memory>
#include <string>

namespace mlir::tfm {

struct CodegenOptions {
  /// LLVM optimisation level for the generated code (0-3).
  unsigned optLevel = 3;
  /// Ask for 512-bit vectors where the CPU has AVX-512 (zmm code).
  bool prefer512 = true;
};

/// A target machine for the host CPU with all its features, generating
/// position-independent code (small code model) so that an object can be
/// cached, loaded into the JIT later or linked into a shared library.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine();

/// The host as code generation sees it: triple, CPU name and the full
/// feature string. Part of every compiled-object cache key.
std::string hostTargetDescription();

/// The LLVM IR optimisation pipeline for `tm` (O3 with the host's vector
/// widths), applied to every module the JIT compiles.
std::function<llvm::Error(llvm::Module *)>
makeHostOptimizer(llvm::TargetMachine *tm, const CodegenOptions &options);

/// Translates an LLVM-dialect module to optimised LLVM IR text.
llvm::Expected<std::string> emitLLVMIR(ModuleOp module,
                                       const CodegenOptions &options);

/// Translates an LLVM-dialect module to host assembly text.
llvm::Expected<std::string> emitAssembly(ModuleOp module,
                                         const CodegenOptions &options);

/// Translates an LLVM-dialect module to a host ELF object (the bytes of a
/// relocatable .o). Besides the module's functions it defines, for every
/// C-interface function `_mlir_ciface_F`, a packed entry
/// `_mlir__mlir_ciface_F(void **args)` that loads each argument from
/// args[i] (what JitModule::lookup returns).
llvm::Expected<std::string> emitObject(ModuleOp module,
                                       const CodegenOptions &options);

} // namespace mlir::tfm

#endif // COMPILER_JIT_HOSTTARGET_H
