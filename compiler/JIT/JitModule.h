//===- JitModule.h - a compiled object linked into the process --*- C++ -*-===//
//
// Host object code (HostTarget's emitObject, possibly read back from the
// compile cache) linked in process by ORC's LLJIT. The same path serves a
// fresh compile and a cache hit, so both run identical machine code.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_JIT_JITMODULE_H
#define COMPILER_JIT_JITMODULE_H

#include "compiler/JIT/HostTarget.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir::tfm {

class JitModule {
public:
  /// Entry point taking an array of pointers to its arguments: for a
  /// function `f` with `llvm.emit_c_interface`, args[i] points to the i-th
  /// argument of `_mlir_ciface_f` (a memref descriptor pointer, or a
  /// scalar).
  using PackedFunction = void (*)(void **);
  using SymbolList = std::vector<std::pair<std::string, void *>>;

  /// Links `object` (an ELF object from emitObject). `symbols` are host
  /// functions the code calls (runtime kernels, the buffer pool's
  /// malloc/free), resolved by name before anything in the process.
  static llvm::Expected<std::unique_ptr<JitModule>>
  load(llvm::StringRef object, const SymbolList &symbols = {});

  /// emitObject + load.
  static llvm::Expected<std::unique_ptr<JitModule>>
  create(ModuleOp llvmDialectModule, const CodegenOptions &options = {},
         const SymbolList &symbols = {});

  /// The packed C-interface entry of function `name` of the source module.
  llvm::Expected<PackedFunction> lookup(llvm::StringRef name) const;

private:
  explicit JitModule(std::unique_ptr<llvm::orc::LLJIT> jit)
      : jit(std::move(jit)) {}
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

} // namespace mlir::tfm

#endif // COMPILER_JIT_JITMODULE_H
