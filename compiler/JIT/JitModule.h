//===- JitModule.h - LLVM-dialect module compiled in process ----*- C++ -*-===//
#ifndef COMPILER_JIT_JITMODULE_H
#define COMPILER_JIT_JITMODULE_H

#include "compiler/JIT/HostTarget.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace mlir::tfm {

/// Owns the ORC JIT (mlir::ExecutionEngine) of one lowered module.
class JitModule {
public:
  /// Entry point taking an array of pointers to its arguments: for a
  /// function `f` with `llvm.emit_c_interface`, args[i] points to the i-th
  /// argument of `_mlir_ciface_f` (a memref descriptor pointer, or a
  /// scalar).
  using PackedFunction = void (*)(void **);

  /// Compiles `llvmDialectModule`; `symbols` are host functions the module
  /// calls (e.g. runtime kernels), resolved by name.
  static llvm::Expected<std::unique_ptr<JitModule>>
  create(ModuleOp llvmDialectModule, const CodegenOptions &options = {},
         llvm::ArrayRef<std::pair<std::string, void *>> symbols = {});

  /// The packed C-interface entry of function `name` of the source module.
  llvm::Expected<PackedFunction> lookup(llvm::StringRef name) const;

private:
  explicit JitModule(std::unique_ptr<ExecutionEngine> engine)
      : engine(std::move(engine)) {}
  std::unique_ptr<ExecutionEngine> engine;
};

} // namespace mlir::tfm

#endif // COMPILER_JIT_JITMODULE_H
