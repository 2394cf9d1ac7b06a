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
#include "runtime/session/KeyValueType.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class TimingScope;
} // namespace mlir

namespace tfmc::runtime {

/// One argument of a compiled function, in call order.
struct ArgSpec {
  /// WeightScale: the per-row scales of the int8 weight `name`.
  enum class Kind { Weight, Input, Cache, Output, WeightScale };
  enum class Element { F32, I32, Index, F16, I8, BF16 };
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

/// One id of a profiled model (tfm-instrument-profile's `tfm.profile`
/// table): a function body or an op, and the cost of one call as
/// coefficients of its dynamic extents (docs/profile.md).
struct ProfiledOp {
  std::string function, kind, name, detail;
  /// "float32", "bfloat16" or "int8": the arithmetic of the op's FLOP
  /// (tfm-instrument-profile), whose rate its roofline is set against.
  std::string arithmetic = "float32";
  int64_t flopRows = 0, flopRowKeys = 0;
  int64_t bytesCall = 0, bytesRows = 0, bytesRowKeys = 0, bytesBatchKeys = 0;
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
  /// Storage of linear-layer weights (tfm-quantize); the runtime converts
  /// the float32 weights once at load.
  frontend::ComputeType computeType = frontend::ComputeType::Float32;
  /// With float16/int8: the output projection too.
  bool quantizeOutputProjection = true;
  /// Storage of the attention keys and values a decoder step reads; Auto:
  /// float16 unless computeType is float32.
  KeyValueType keyValueType = KeyValueType::Auto;
  /// Compiled-model cache directory; empty: no cache. A hit loads the
  /// object without running any MLIR pass or LLVM optimisation; a miss
  /// compiles and stores it. Cache problems are warnings on stderr.
  std::string cacheDir;
  /// With a cache: compile and store even when an entry exists
  /// (dumpDir does the same, since the IR must be produced).
  bool refreshCache = false;
  /// The profiled variant: profiler calls around every op (its own cache
  /// entry; tfmc profile).
  bool profile = false;
  /// Where per-phase times are recorded (tfmc --timing); may be null.
  mlir::TimingScope *timing = nullptr;
};

/// The compiled-model cache directory when none is given: $TFMC_CACHE_DIR,
/// else $XDG_CACHE_HOME/tfmc, else ~/.cache/tfmc ("" when none is set).
std::string defaultCacheDirectory();

class CompiledModel {
public:
  static llvm::Expected<std::unique_ptr<CompiledModel>>
  compile(const frontend::Architecture &arch, int64_t sourceVocabSize,
          int64_t targetVocabSize, const CompileOptions &options = {});
  ~CompiledModel();

  /// nullptr when the function was not compiled.
  const CompiledFunction *function(llvm::StringRef name) const;
  /// The profiled variant's table, indexed by probe id; empty otherwise.
  const std::vector<ProfiledOp> &profiledOps() const { return profile; }
  /// Wall time spent in import + lowering + JIT (or cache load), seconds.
  double compileSeconds() const { return seconds; }
  /// Whether the code came from the compiled-model cache, and the entry's
  /// path (empty without a cache).
  bool fromCache() const { return cacheHit; }
  const std::string &cacheEntry() const { return cachePath; }

  /// The text that names everything the compiled code depends on: cache
  /// format, tfmc version and build, LLVM version, architecture and block
  /// recipes (not the weights), vocabulary sizes, which functions, kernel
  /// path and pipeline options, target triple, CPU and features. The cache
  /// file is its SHA-256.
  static std::string cacheKey(const frontend::Architecture &arch,
                              int64_t sourceVocabSize, int64_t targetVocabSize,
                              const CompileOptions &options);

private:
  CompiledModel();
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::vector<CompiledFunction> functions;
  std::vector<ProfiledOp> profile;
  double seconds = 0;
  bool cacheHit = false;
  std::string cachePath;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_COMPILEDMODEL_H
