//===- CompiledModel.h - a model's functions, JIT-compiled ------*- C++ -*-===//
//
// The runtime's single entry into the compiler: imports a model into tfm,
// lowers it down the stage ladder and JIT-compiles it for the host. Callers
// see plain function pointers and argument descriptions only.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_COMPILEDMODEL_H
#define RUNTIME_SESSION_COMPILEDMODEL_H

#include "frontends/model/ModelDescription.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// One argument of a compiled function, in call order.
struct ArgSpec {
  enum class Kind { Weight, Input, Cache, Output };
  enum class Element { F32, I32, Index };
  Kind kind;
  Element element;
  std::string name;
  /// Extents, -1 when dynamic; empty for a scalar (index) argument.
  std::vector<int64_t> shape;
  bool isScalar() const { return element == Element::Index; }
};

struct CompiledFunction {
  std::string name;
  std::vector<ArgSpec> args;
  /// Packed entry: args[i] points to argument i (a memref descriptor
  /// pointer, or an int64_t for index scalars).
  void (*entry)(void **) = nullptr;
};

struct CompileOptions {
  /// When set, every IR stage is written there as NN-stage.mlir.
  std::string dumpDir;
  /// Linear layers call the runtime's library kernel (oneDNN) rather than
  /// compiled loops; needs a build with oneDNN.
  bool useLibraryKernels = false;
  /// Which entry functions to compile: encode + decode_step (translation)
  /// and forward (teacher forcing). Each costs JIT time.
  bool translation = true;
  bool teacherForcing = true;
  /// encode_states: the encoder output (tfmc encode). Encoder-only models
  /// have nothing else.
  bool encoderStates = false;
};

class CompiledModel {
public:
  static llvm::Expected<std::unique_ptr<CompiledModel>>
  compile(const frontend::Architecture &arch, int64_t sourceVocabSize,
          int64_t targetVocabSize, const CompileOptions &options = {});
  ~CompiledModel();

  /// nullptr when the function was not compiled.
  const CompiledFunction *function(llvm::StringRef name) const;
  /// Wall time spent in import + lowering + JIT, in seconds.
  double compileSeconds() const { return seconds; }

private:
  CompiledModel();
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::vector<CompiledFunction> functions;
  double seconds = 0;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_COMPILEDMODEL_H
