//===- ProfileProbes.h - the profiler calls of instrumented code -*- C++ -*-===//
//
// A model compiled for profiling (tfm-instrument-profile) calls
// `tfm_rt_profile_enter(id)` before and `tfm_rt_profile_exit(id, batch,
// rows, keys)` after every op and around each function body. These read the
// CPU's cycle counter and add to the counters of the table that is
// attached; with none attached they do nothing. One table at a time per
// process: profiling is a diagnostic run, not something to serve with.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_PROFILEPROBES_H
#define RUNTIME_KERNELS_PROFILEPROBES_H

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::runtime::profile {

/// What the probes add up for one id. Relaxed atomics: decoder slices on
/// several threads may run the same op at once.
struct Counter {
  std::atomic<uint64_t> calls{0}, ticks{0};
  std::atomic<uint64_t> rows{0}, rowKeys{0}, batchKeys{0};
};

/// The runtime's own phases, counted after the compiled ops' ids.
enum class Region : int {
  /// A whole translate call (the wall time the profile divides).
  Translate,
  /// Text to ids and ids to text (SentencePiece, vocabularies, splitting).
  Tokenize,
  Detokenize,
  /// Copies of KV caches between beam slots and when caches grow.
  CacheMoves,
};
constexpr int kRegionCount = 4;
const char *regionName(Region region);

/// Makes `counters[0, size)` the table the probes add to, the regions at
/// ids `regionBase + region`; false (and nothing changes) when another
/// table is attached.
bool attach(Counter *counters, size_t size, int64_t regionBase);
/// Detaches `counters` if it is the attached table.
void detach(Counter *counters);

/// The cycle counter (x86: rdtsc; elsewhere nanoseconds of the steady
/// clock). Ticks are converted to seconds by timing a span against the
/// steady clock (see Profiler).
uint64_t ticks();

/// Opens and closes id `id` on the calling thread outside compiled code
/// (the runtime's own phases: tokenisation, search, cache moves).
void enter(int64_t id);
void exit(int64_t id);

/// The calling thread's open ids, and a way back to that count: a call
/// into compiled code that ends early (CompiledCall.h) leaves its ops
/// open.
int openDepth();
void restoreOpenDepth(int depth);

/// A runtime phase as a scope; nothing when no table is attached.
class Scope {
public:
  explicit Scope(Region region);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

private:
  int64_t id;
};

/// Symbols the JIT resolves for instrumented code.
std::vector<std::pair<std::string, void *>> probeSymbols();

} // namespace tfmc::runtime::profile

extern "C" {
void tfm_rt_profile_enter(int64_t id);
void tfm_rt_profile_exit(int64_t id, int64_t batch, int64_t rows,
                         int64_t keys);
}

#endif // RUNTIME_KERNELS_PROFILEPROBES_H
