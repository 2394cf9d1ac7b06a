//===- Profiler.h - counters of a profiled model, as a Profile --*- C++ -*-===//
//
// Owns the counters the probes of a profiled compiled model add to (one
// per op id, function and runtime phase), measures the machine's limits
// when it starts, and turns the counts into a tfmc::Profile: per-op time,
// FLOP and bytes from the compiler's cost coefficients, achieved rates and
// the roofline fraction, the rest of each function and of the run as rows.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_PROFILE_PROFILER_H
#define RUNTIME_PROFILE_PROFILER_H

#include "runtime/kernels/MachineProbe.h"
#include "runtime/kernels/ProfileProbes.h"
#include "runtime/session/CompiledModel.h"
#include "tfmc/Profile.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <memory>
#include <vector>

namespace tfmc::runtime {

class Profiler {
public:
  /// Attaches counters for `model` (compiled with CompileOptions::profile)
  /// after measuring the machine with `threads`; `configuration` names
  /// what the model computes with (Profile::configuration). Fails when the
  /// model is not a profiled variant or another profiler of this process
  /// is active.
  static llvm::Expected<std::unique_ptr<Profiler>>
  start(const CompiledModel &model, int threads,
        std::string configuration = "");
  ~Profiler();

  /// What was counted so far.
  Profile snapshot() const;
  /// Zeroes the counters (the machine's limits are kept).
  void reset();

private:
  Profiler() = default;
  std::vector<ProfiledOp> ops;
  std::unique_ptr<profile::Counter[]> counters;
  size_t size = 0;
  MachineLimits machine;
  /// Peak bfloat16 and int8 product rates (Profile::bfloat16Gflops,
  /// int8Gops); 0 when not measured.
  double bfloat16Gflops = 0, int8Gops = 0;
  std::string host, configuration;
  uint64_t startTicks = 0;
  std::chrono::steady_clock::time_point startTime;
};

} // namespace tfmc::runtime

#endif // RUNTIME_PROFILE_PROFILER_H
