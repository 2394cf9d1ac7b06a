//===- PerfMap.h - JIT function names for perf -------------------*- C++ -*-===//
//
// perf cannot name code that ORC linked at run time. When the environment
// variable TFMC_PERF_MAP is set, every function of a linked object is listed
// in /tmp/perf-PID.map (perf's format for JIT code: "START SIZE NAME" in
// hex), so `perf report` shows the model's kernels by name.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_JIT_PERFMAP_H
#define COMPILER_JIT_PERFMAP_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"

namespace mlir::tfm {

/// Whether TFMC_PERF_MAP asks for a map.
bool perfMapRequested();

/// Appends the functions of `object`, as linked into `jit`, to the process's
/// perf map. Failures only warn: a map is a diagnostic aid.
void appendPerfMap(llvm::orc::LLJIT &jit, llvm::StringRef object);

} // namespace mlir::tfm

#endif // COMPILER_JIT_PERFMAP_H
