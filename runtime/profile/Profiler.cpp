//===- Profiler.cpp - counters of a profiled model, as a Profile ----------===//
#include "runtime/profile/Profiler.h"

#include "runtime/kernels/KernelIsa.h"

#include <algorithm>
#include <map>

using namespace tfmc;
using namespace tfmc::runtime;

llvm::Expected<std::unique_ptr<Profiler>>
Profiler::start(const CompiledModel &model, int threads,
                std::string configuration) {
  if (model.profiledOps().empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the model was not compiled for profiling");
  std::unique_ptr<Profiler> p(new Profiler());
  p->ops = model.profiledOps();
  p->size = p->ops.size() + profile::kRegionCount;
  p->counters = std::make_unique<profile::Counter[]>(p->size);
  // The probe's 64 MiB (best of 3) keeps start-up short and still far
  // exceeds the caches of the hosts we run on.
  ProbeOptions probe;
  probe.threads = threads;
  probe.bandwidthBytes = int64_t(64) << 20;
  probe.repeats = 3;
  p->machine = probeMachine(probe);
  // The rates of the model's other arithmetic, where it has such layers.
  bool bfloat16 = false, int8 = false;
  for (const ProfiledOp &op : p->ops) {
    bfloat16 |= op.arithmetic == "bfloat16";
    int8 |= op.arithmetic == "int8";
  }
  const double threadCount = std::max(1, threads);
  if (bfloat16)
    p->bfloat16Gflops =
        threadCount * (packed::bfloat16Tiles()     ? probeTileGflops(false)
                       : packed::bfloat16DotRuns() ? probeBFloat16DotGflops()
                                                   : 0.0);
  if (int8)
    p->int8Gops = threadCount * (packed::tilesRun() ? probeTileGflops(true)
                                                    : probeInt8DotGops());
  p->host = hostDescription();
  p->configuration = std::move(configuration);
  if (!profile::attach(p->counters.get(), p->size,
                       static_cast<int64_t>(p->ops.size())))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "another translator of this process is profiling (one at a time)");
  p->startTicks = profile::ticks();
  p->startTime = std::chrono::steady_clock::now();
  return std::move(p);
}

Profiler::~Profiler() { profile::detach(counters.get()); }

void Profiler::reset() {
  for (size_t i = 0; i < size; ++i) {
    profile::Counter &c = counters[i];
    for (auto *a : {&c.calls, &c.ticks, &c.rows, &c.rowKeys, &c.batchKeys})
      a->store(0, std::memory_order_relaxed);
  }
}

Profile Profiler::snapshot() const {
  // Ticks per second from the span since start (the cycle counter of
  // current x86 CPUs runs at a constant rate).
  double elapsed = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - startTime)
                       .count();
  uint64_t spanTicks = profile::ticks() - startTicks;
  double perSecond = elapsed > 1e-3 && spanTicks > 0 ? spanTicks / elapsed : 1e9;
  auto seconds = [&](size_t id) {
    return counters[id].ticks.load(std::memory_order_relaxed) / perSecond;
  };
  auto count = [&](const std::atomic<uint64_t> &a) {
    return static_cast<double>(a.load(std::memory_order_relaxed));
  };

  Profile out;
  out.host = host;
  out.configuration = configuration;
  out.threads = machine.threads;
  out.peakGflops = machine.sgemmGflops;
  out.bandwidthGBs = machine.readGBs;
  out.bfloat16Gflops = bfloat16Gflops;
  out.int8Gops = int8Gops;
  size_t base = ops.size();
  auto region = [&](profile::Region r) {
    return base + static_cast<size_t>(r);
  };
  out.wallSeconds = seconds(region(profile::Region::Translate));

  std::map<std::string, double> opSeconds; // per function
  double functionSeconds = 0;
  for (size_t id = 0; id < ops.size(); ++id) {
    const ProfiledOp &op = ops[id];
    const profile::Counter &c = counters[id];
    int64_t calls = static_cast<int64_t>(count(c.calls));
    if (calls == 0)
      continue;
    if (op.kind == "function") {
      out.functions.push_back({op.function, calls, seconds(id)});
      functionSeconds += seconds(id);
      continue;
    }
    ProfileRow row;
    row.category = "op";
    row.function = op.function;
    row.kind = op.kind;
    row.name = op.name;
    row.detail = op.detail;
    row.arithmetic = op.arithmetic;
    row.calls = calls;
    row.seconds = seconds(id);
    row.flop = op.flopRows * count(c.rows) + op.flopRowKeys * count(c.rowKeys);
    row.bytes = op.bytesCall * count(c.calls) + op.bytesRows * count(c.rows) +
                op.bytesRowKeys * count(c.rowKeys) +
                op.bytesBatchKeys * count(c.batchKeys);
    opSeconds[op.function] += row.seconds;
    out.rows.push_back(std::move(row));
  }
  for (const ProfileFunction &f : out.functions) {
    ProfileRow row;
    row.category = "function rest";
    row.function = f.name;
    row.kind = "(outside ops)";
    row.detail = "argument set-up, buffer allocation, result copies";
    row.calls = f.calls;
    row.seconds = std::max(0.0, f.seconds - opSeconds[f.name]);
    out.rows.push_back(std::move(row));
  }
  double runtimeSeconds = 0;
  auto runtimeRow = [&](const std::string &kind, const std::string &detail,
                        int64_t calls, double s) {
    ProfileRow row;
    row.category = "runtime";
    row.kind = kind;
    row.detail = detail;
    row.calls = calls;
    row.seconds = s;
    out.rows.push_back(std::move(row));
  };
  for (auto [r, detail] :
       {std::pair{profile::Region::Tokenize,
                  "text to ids: sentence splitting, SentencePiece, vocabulary"},
        std::pair{profile::Region::Detokenize, "ids to text"},
        std::pair{profile::Region::CacheMoves,
                  "KV-cache copies: beam reordering, cache growth"}}) {
    size_t id = region(r);
    if (count(counters[id].calls) == 0)
      continue;
    runtimeSeconds += seconds(id);
    runtimeRow(std::string("runtime: ") + profile::regionName(r), detail,
               static_cast<int64_t>(count(counters[id].calls)), seconds(id));
  }
  runtimeRow("runtime: search and the rest",
             "scores, candidates and stopping; batching, reading, writing", 0,
             std::max(0.0, out.wallSeconds - functionSeconds - runtimeSeconds));

  const double sgemm = machine.sgemmGflops * 1e9,
               bandwidth = machine.readGBs * 1e9;
  auto peakOf = [&](const std::string &arithmetic) {
    double rate = arithmetic == "bfloat16" ? bfloat16Gflops
                  : arithmetic == "int8"   ? int8Gops
                                           : 0.0;
    return rate > 0 ? rate * 1e9 : sgemm;
  };
  for (ProfileRow &row : out.rows) {
    row.share = out.wallSeconds > 0 ? row.seconds / out.wallSeconds : 0;
    if (row.seconds > 0) {
      row.gflops = row.flop / row.seconds / 1e9;
      row.gbs = row.bytes / row.seconds / 1e9;
      const double peak = peakOf(row.arithmetic);
      double bound = std::max(peak > 0 ? row.flop / peak : 0.0,
                              bandwidth > 0 ? row.bytes / bandwidth : 0.0);
      row.roofline = bound / row.seconds;
    }
  }
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const ProfileRow &a, const ProfileRow &b) {
                     return a.seconds > b.seconds;
                   });
  return out;
}
