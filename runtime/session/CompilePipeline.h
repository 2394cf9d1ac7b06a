//===- CompilePipeline.h - what a compile runs and keys ---------*- C++ -*-===//
//
// Where the runtime turns a model's CompileOptions into the pipeline
// options it is compiled with: the compile (CompiledModel.cpp) and the
// compiled-model cache key (CacheKey.cpp) use it, so that the key records
// exactly what the compile runs, and `tfmc compile --emit` prints the IR
// of the same pipeline. It includes compiler headers: the runtime's
// libraries other than its JIT entry do not include it.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_COMPILEPIPELINE_H
#define RUNTIME_SESSION_COMPILEPIPELINE_H

#include "compiler/Pipelines/Pipelines.h"
#include "runtime/session/CompiledModel.h"

namespace tfmc::runtime {

/// The pipeline options of a compile with `options` in this process: what
/// the runtime decides for the host (the library kernels' row threshold,
/// the cache level attention's prefetches fill) and what `options` asks
/// (kernel path, compute type, output projection, storage of keys and
/// values as resolved, the profiled variant, timing).
mlir::tfm::PipelineOptions pipelineFor(const CompileOptions &options);

/// Whether the build holding this compiler can be told (its GNU build ID,
/// else its file's path, size and modification time, enter the cache key);
/// if not, the compiled-model cache is not used.
bool buildIdentified();

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_COMPILEPIPELINE_H
