//===- Pipelines.h - the tfm stage ladder -----------------------*- C++ -*-===//
//
// tfm (imported) -> fused -> loops -> llvm (LLVM dialect). Each step is a
// pass pipeline registered for tfm-opt and used by the driver and the JIT.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_PIPELINES_PIPELINES_H
#define COMPILER_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// IR stages in order, as `tfmc compile --emit=` names them; Obj is the
/// host object file (not part of --dump-ir).
enum class Stage { Tfm, Fused, Loops, LLVM, LLVMIR, Asm, Obj };

llvm::StringRef stageName(Stage stage);
std::optional<Stage> parseStage(llvm::StringRef name);

struct PipelineOptions {
  /// Verify the IR after each pass (on in tests and by default).
  bool verifyEach = true;
  /// Lower linear layers to the runtime's library kernel (oneDNN) instead
  /// of loops. Only for modules the runtime executes.
  bool useLibraryCalls = false;
  /// With library calls: layers with fewer rows than this use the loop
  /// kernel (measured on the base model: loops win up to 4 rows, oneDNN
  /// from 16).
  int64_t libraryMinRows = 8;
  /// How linear-layer weights are stored: "float32" (as loaded), "float16",
  /// "bfloat16" or "int8" (tfm-quantize at the end of the fused stage).
  std::string computeType = "float32";
  /// The cache level (1 or 2) attention's key and value prefetches fill
  /// (tfm-to-loops' attention-prefetch-level): the runtime passes its
  /// kernels' choice for the host (packed::aheadCacheLevel()).
  int64_t attentionPrefetchLevel = 1;
  /// With int8/float16: also the output projection.
  bool quantizeOutputProjection = true;
  /// Attention keys and values stored as float16 (tfm-half-caches at the
  /// end of the fused stage); the runtime decides it from the compute type
  /// and --kv-type (runtime/session/KeyValueType.h).
  bool halfCaches = false;
  /// The profiled variant: tfm-instrument-profile first in fused -> loops
  /// (profiler calls around every tfm op; tfmc profile).
  bool profile = false;
  /// When set, each stage's pass manager records per-pass times nested
  /// under this scope (tfmc --timing).
  TimingScope *timing = nullptr;
  /// Print each op's location with the stages' text (printModule): its
  /// name in the model, as tfmc profile's rows and the graph's nodes show
  /// it (tfmc compile --locations).
  bool printLocations = false;
};

/// tfm -> fused: attention split into projections and the fused core,
/// residual + layer norm fused, then canonicalisation and CSE.
void buildFusionPipeline(OpPassManager &pm, const PipelineOptions &options);
/// fused -> loops: destination-passing buffers and loop nests.
void buildLoopsPipeline(OpPassManager &pm, const PipelineOptions &options);
/// loops -> LLVM dialect.
void buildLLVMPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `tfm-fuse`, `tfm-lower-to-loops` and `tfm-lower-to-llvm`
/// pipelines (and every tfm pass) for tfm-opt.
void registerTfmPipelines();

/// Dialects and interfaces the pipelines need (a lean registry for tfmc).
void registerPipelineDialects(DialectRegistry &registry);

/// Runs the pipelines from `from` (exclusive) up to `to` (inclusive, at most
/// Stage::LLVM) on `module`. With `dumpDir`, writes `NN-<stage>.mlir` after
/// each stage (NN = the stage's number, 01 = tfm).
llvm::Error lowerToStage(ModuleOp module, Stage from, Stage to,
                         const PipelineOptions &options,
                         llvm::StringRef dumpDir = "");

/// Prints `module` as the stages' text: with options.printLocations, each
/// op's location too (as `loc(#locN)`, defined at the end: text tfm-opt
/// reads back with its names).
void printModule(ModuleOp module, llvm::raw_ostream &os,
                 const PipelineOptions &options);

/// The name dumpStage() gives `stage`'s file: NN-<stage>.<ext>.
std::string dumpFileName(Stage stage, llvm::StringRef extension);
/// Every file a dump directory may get: the stages' and the fused graph's
/// (02-fused.dot, 02-fused.svg).
std::vector<std::string> dumpFileNames();

/// Writes `module` (or any text) to DIR/NN-<stage>.<ext>.
llvm::Error dumpStage(llvm::StringRef dumpDir, Stage stage,
                      llvm::StringRef extension, llvm::StringRef text);

} // namespace mlir::tfm

#endif // COMPILER_PIPELINES_PIPELINES_H
