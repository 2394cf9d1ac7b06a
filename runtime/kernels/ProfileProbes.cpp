//===- ProfileProbes.cpp - the profiler calls of instrumented code --------===//
#include "runtime/kernels/ProfileProbes.h"

#include <chrono>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

using namespace tfmc::runtime;

namespace {

std::mutex attachMutex;
std::atomic<profile::Counter *> table{nullptr};
std::atomic<size_t> tableSize{0};
std::atomic<int64_t> regionBase{0};

/// Open ids of this thread: a function body holds its ops, so at most two
/// are open at once; deeper nesting (none today) is still counted right up
/// to the stack's size.
struct OpenStack {
  static constexpr int kDepth = 8;
  uint64_t start[kDepth];
  int depth = 0;
};
thread_local OpenStack open;

} // namespace

const char *profile::regionName(Region region) {
  switch (region) {
  case Region::Translate:
    return "translate";
  case Region::Tokenize:
    return "tokenize";
  case Region::Detokenize:
    return "detokenize";
  case Region::CacheMoves:
    return "cache moves";
  }
  return "?";
}

bool profile::attach(Counter *counters, size_t size, int64_t base) {
  std::lock_guard<std::mutex> lock(attachMutex);
  if (table.load())
    return false;
  tableSize.store(size);
  regionBase.store(base);
  table.store(counters);
  return true;
}

void profile::detach(Counter *counters) {
  std::lock_guard<std::mutex> lock(attachMutex);
  if (table.load() != counters)
    return;
  table.store(nullptr);
  tableSize.store(0);
}

uint64_t profile::ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
#endif
}

int profile::openDepth() { return open.depth; }

void profile::restoreOpenDepth(int depth) {
  if (depth >= 0 && depth < open.depth)
    open.depth = depth;
}

extern "C" void tfm_rt_profile_enter(int64_t) {
  if (!table.load(std::memory_order_relaxed))
    return;
  if (open.depth < OpenStack::kDepth)
    open.start[open.depth] = profile::ticks();
  ++open.depth;
}

extern "C" void tfm_rt_profile_exit(int64_t id, int64_t batch, int64_t rows,
                                    int64_t keys) {
  profile::Counter *counters = table.load(std::memory_order_relaxed);
  if (!counters || open.depth == 0)
    return;
  uint64_t end = profile::ticks();
  --open.depth;
  if (open.depth >= OpenStack::kDepth || id < 0 ||
      static_cast<size_t>(id) >= tableSize.load(std::memory_order_relaxed))
    return;
  profile::Counter &c = counters[id];
  auto add = [](std::atomic<uint64_t> &a, uint64_t v) {
    a.fetch_add(v, std::memory_order_relaxed);
  };
  add(c.calls, 1);
  add(c.ticks, end - open.start[open.depth]);
  add(c.rows, static_cast<uint64_t>(rows));
  add(c.rowKeys, static_cast<uint64_t>(rows) * static_cast<uint64_t>(keys));
  add(c.batchKeys, static_cast<uint64_t>(batch) * static_cast<uint64_t>(keys));
}

void profile::enter(int64_t id) { tfm_rt_profile_enter(id); }
void profile::exit(int64_t id) { tfm_rt_profile_exit(id, 0, 0, 0); }

profile::Scope::Scope(Region region) : id(-1) {
  if (!table.load(std::memory_order_relaxed))
    return;
  id = regionBase.load(std::memory_order_relaxed) + static_cast<int>(region);
  enter(id);
}
profile::Scope::~Scope() {
  if (id >= 0)
    exit(id);
}

std::vector<std::pair<std::string, void *>> profile::probeSymbols() {
  return {{"tfm_rt_profile_enter",
           reinterpret_cast<void *>(&tfm_rt_profile_enter)},
          {"tfm_rt_profile_exit",
           reinterpret_cast<void *>(&tfm_rt_profile_exit)}};
}
