//===- MachineProbe.cpp - this host's limits, measured --------------------===//
#include "runtime/kernels/MachineProbe.h"

#include "runtime/kernels/AmxTiles.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/KernelIsa.h"

#include "frontends/model/PageMemory.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#ifdef TFMC_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

using namespace tfmc::runtime;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The shortest of `repeats` (at least one) timings of `work()`.
template <typename Work> double bestSeconds(int repeats, Work work) {
  double best = 1e30;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, secondsSince(start));
  }
  return best;
}

double sgemmGflops(int repeats) {
#ifdef TFMC_WITH_ONEDNN
  const int64_t n = 1024;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
  double best = 1e30;
  for (int rep = 0; rep <= repeats; ++rep) {
    auto start = std::chrono::steady_clock::now();
    if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                   c.data(), n) != dnnl_success)
      return 0;
    if (rep > 0) // the first call warms up
      best = std::min(best, secondsSince(start));
  }
  return 2.0 * n * n * n / best / 1e9;
#else
  (void)repeats;
  return 0;
#endif
}

/// Multiply-adds on 12 independent accumulators (enough to cover the FMA
/// latency on both ports); returns a value that depends on all of them.
/// FLOPs: iterations x 12 x lanes x 2.
__attribute__((target("avx512f"))) float fmaLoop512(int64_t iterations) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  const __m512 m = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  float sum = 0;
  for (int j = 0; j < 12; ++j)
    sum += _mm512_reduce_add_ps(acc[j]);
  return sum;
}

__attribute__((target("avx2,fma"))) float fmaLoop256(int64_t iterations) {
  __m256 acc[12];
  for (int j = 0; j < 12; ++j)
    acc[j] = _mm256_set1_ps(float(j));
  const __m256 m = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], m, c);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int j = 0; j < 12; ++j) {
    _mm256_store_ps(lanes, acc[j]);
    for (float v : lanes)
      sum += v;
  }
  return sum;
}

/// vdpbf16ps on 12 independent accumulators: each lane adds two bfloat16
/// products a step. FLOPs: iterations x 12 x 16 lanes x 4.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) float
dotLoopBF16(int64_t iterations) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  // 1.0 and 2^-20 in every half: sums that stay finite.
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80)),
                 b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x35803580));
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  float sum = 0;
  for (int j = 0; j < 12; ++j)
    sum += _mm512_reduce_add_ps(acc[j]);
  return sum;
}

/// vpdpbusd on 12 independent accumulators: each lane adds four u8 × s8
/// products a step. Operations: iterations x 12 x 16 lanes x 4 x 2.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t
dotLoopInt8Vnni(int64_t iterations) {
  __m512i acc[12];
  for (int j = 0; j < 12; ++j)
    acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi32(0x01010101),
                b = _mm512_set1_epi32(0x01FF01FF); // +1 and -1: sums stay put
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  int32_t sum = 0;
  for (int j = 0; j < 12; ++j)
    sum += _mm512_reduce_add_epi32(acc[j]);
  return sum;
}

/// The AVX2 int8 kernels' step (vpmaddubsw, vpmaddwd by ones, vpaddd) on
/// 12 independent accumulators: 32 u8 × s8 products per accumulator a
/// step. Operations: iterations x 12 x 32 x 2.
__attribute__((target("avx2"))) int32_t dotLoopInt8Avx2(int64_t iterations) {
  __m256i acc[12];
  for (int j = 0; j < 12; ++j)
    acc[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi32(0x01010101),
                b = _mm256_set1_epi32(0x01FF01FF), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm256_add_epi32(
          acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
  alignas(32) int32_t lanes[8];
  int32_t sum = 0;
  for (int j = 0; j < 12; ++j) {
    _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), acc[j]);
    for (int32_t l : lanes)
      sum += l;
  }
  return sum;
}

/// Four independent tile multiplies a step (C tiles 0-3 from A tiles 4, 5
/// and B tiles 6, 7, all zeros), `iterations` steps. Operations: iterations
/// x 4 x 16 x 16 x (32 bfloat16 or 64 int8 products) x 2.
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) void
tileLoop(bool int8, int64_t iterations) {
  amxtiles::configureTiles();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  if (int8)
    for (int64_t i = 0; i < iterations; ++i) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  else
    for (int64_t i = 0; i < iterations; ++i) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  _tile_release();
}

/// Runs `work(t)` on `threads` threads (t = 0 on this one), each once all
/// of them have started; returns when all are done.
template <typename Work> void together(int threads, Work work) {
  std::atomic<int> ready{0};
  auto start = [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < threads) {
    }
    work(t);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(start, t);
  start(0);
  for (std::thread &th : pool)
    th.join();
}

/// Seconds each of `threads` threads takes for the FMA loop when they start
/// together; the slowest.
double fmaSeconds(int threads, bool wide, int64_t iterations,
                  volatile float &sink) {
  std::vector<double> seconds(threads);
  std::vector<float> sums(threads);
  together(threads, [&](int t) {
    auto start = std::chrono::steady_clock::now();
    sums[t] = wide ? fmaLoop512(iterations) : fmaLoop256(iterations);
    seconds[t] = secondsSince(start);
  });
  for (float s : sums)
    sink = sink + s;
  return *std::max_element(seconds.begin(), seconds.end());
}

/// Bytes one read loop iteration takes: four cache lines.
constexpr size_t kReadBlock = 256;

/// Sums `bytes` (a multiple of kReadBlock) with 64-byte loads into four
/// independent accumulators, so that the loads, not the adds' latency,
/// set the pace (a scalar sum, which the compiler may not reorder, ran at
/// ~26 GB/s on a host whose memory delivers ~33 to one core).
__attribute__((target("avx512f"))) float readLoop512(const float *p,
                                                     size_t bytes) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < bytes / sizeof(float); i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/// The same with 32-byte loads, two per cache line.
__attribute__((target("avx2"))) float readLoop256(const float *p,
                                                  size_t bytes) {
  __m256 a[8];
  for (__m256 &x : a)
    x = _mm256_setzero_ps();
  for (size_t i = 0; i < bytes / sizeof(float); i += 64)
    for (int j = 0; j < 8; ++j)
      a[j] = _mm256_add_ps(a[j], _mm256_load_ps(p + i + 8 * j));
  alignas(32) float lanes[8];
  float sum = 0;
  for (__m256 &x : a) {
    _mm256_store_ps(lanes, x);
    for (float v : lanes)
      sum += v;
  }
  return sum;
}

/// Any x86-64: integer ORs, which the compiler may reorder and so
/// vectorise with whatever loads the baseline has.
float readLoopAny(const float *p, size_t bytes) {
  const auto *words = reinterpret_cast<const uint64_t *>(p);
  uint64_t any = 0;
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i)
    any |= words[i];
  return static_cast<float>(any & 1);
}

/// Seconds `threads` threads take to read `bytes` from `p` (64-byte
/// aligned) together, each its own contiguous slice: from the first one's
/// start to the last one's end.
double readSeconds(int threads, const float *p, size_t bytes,
                   volatile float &sink) {
  using Clock = std::chrono::steady_clock;
  float (*loop)(const float *, size_t) =
      __builtin_cpu_supports("avx512f") ? readLoop512
      : __builtin_cpu_supports("avx2")  ? readLoop256
                                        : readLoopAny;
  size_t slice = bytes / threads;
  std::vector<float> sums(threads);
  std::vector<Clock::time_point> starts(threads), ends(threads);
  together(threads, [&](int t) {
    starts[t] = Clock::now();
    sums[t] = loop(p + t * (slice / sizeof(float)), slice);
    ends[t] = Clock::now();
  });
  for (float s : sums)
    sink = sink + s;
  return std::chrono::duration<double>(
             *std::max_element(ends.begin(), ends.end()) -
             *std::min_element(starts.begin(), starts.end()))
      .count();
}

} // namespace

VectorScaling tfmc::runtime::probeVectorScaling(int threads, int repeats) {
  VectorScaling out;
  out.threads = std::max(1, threads);
  bool wide = __builtin_cpu_supports("avx512f");
  if (!wide &&
      !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return out;
  const int64_t iterations = wide ? 20'000'000 : 40'000'000;
  const double flops = double(iterations) * 12 * (wide ? 16 : 8) * 2;
  volatile float sink = 0;
  double alone = 1e30, together = 1e30;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    alone = std::min(alone, fmaSeconds(1, wide, iterations, sink));
    together =
        std::min(together, fmaSeconds(out.threads, wide, iterations, sink));
  }
  out.alone = flops / alone / 1e9;
  out.together = out.threads * flops / together / 1e9;
  return out;
}

double tfmc::runtime::probeBFloat16DotGflops(int repeats) {
  if (!__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512bf16"))
    return 0;
  const int64_t iterations = 20'000'000;
  volatile float sink = 0;
  double best =
      bestSeconds(repeats, [&] { sink = sink + dotLoopBF16(iterations); });
  return double(iterations) * 12 * 16 * 4 / best / 1e9;
}

double tfmc::runtime::probeTileGflops(bool int8, int repeats) {
  if (!packed::runs(packed::Isa::Amx))
    return 0;
  const int64_t iterations = 1'000'000;
  double best = bestSeconds(repeats, [&] { tileLoop(int8, iterations); });
  return double(iterations) * 4 * 16 * 16 * (int8 ? 64 : 32) * 2 / best / 1e9;
}

double tfmc::runtime::probeInt8DotGops(int repeats) {
  volatile int32_t sink = 0;
  if (packed::avx512Vectors(packed::preferredIsa())) {
    const int64_t iterations = 20'000'000;
    double best = bestSeconds(
        repeats, [&] { sink = sink + dotLoopInt8Vnni(iterations); });
    return double(iterations) * 12 * 16 * 4 * 2 / best / 1e9;
  }
  if (!packed::availableOnThisCpu())
    return 0;
  const int64_t iterations = 10'000'000;
  double best =
      bestSeconds(repeats, [&] { sink = sink + dotLoopInt8Avx2(iterations); });
  return double(iterations) * 12 * 32 * 2 / best / 1e9;
}

MachineLimits tfmc::runtime::probeMachine(const ProbeOptions &options) {
  MachineLimits limits;
  limits.threads = std::max(1, options.threads);
  setKernelThreads(limits.threads);
  int repeats = std::max(1, options.repeats);
  limits.sgemmGflops = sgemmGflops(repeats);

  size_t bytes = static_cast<size_t>(
      std::max<int64_t>(options.bandwidthBytes, int64_t(1) << 20));
  bytes -= bytes % (kReadBlock * limits.threads);
  // Huge pages, aligned, as the weights and KV caches are (PageMemory.h):
  // on 4 KiB pages the hardware prefetchers stop at every page boundary,
  // and a 64-byte load that straddles two lines costs two.
  pages::Vector<float> src(bytes / sizeof(float), 1.0f),
      dst(bytes / sizeof(float), 0.0f);
  double bestRead = 1e30, bestCopy = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    bestRead = std::min(bestRead,
                        readSeconds(limits.threads, src.data(), bytes, sink));
    auto start = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    bestCopy = std::min(bestCopy, secondsSince(start));
    // Read the copy back so the compiler cannot drop it.
    sink = sink + dst[(size_t(rep) * 7919) % dst.size()];
  }
  limits.readGBs = bytes / bestRead / 1e9;
  limits.copyGBs = bytes / bestCopy / 1e9;
  return limits;
}

std::string tfmc::runtime::hostDescription() {
  std::string model = "unknown CPU";
  std::set<std::string> flags;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "model name")
      model = value;
    else if (key == "flags" && flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;)
        flags.insert(w);
    }
  }
  auto has = [&](std::initializer_list<const char *> names) {
    return std::all_of(names.begin(), names.end(),
                       [&](const char *n) { return flags.count(n) > 0; });
  };
  std::string isa = has({"avx512f", "avx512bw", "avx512vl", "avx512_vnni"})
                        ? "AVX-512 + VNNI"
                    : has({"avx2", "fma"}) ? "AVX2 + FMA"
                                           : "no AVX2";
  // bfloat16 layers run vdpbf16ps where it exists (PackedGemm.h), int8
  // and bfloat16 ones AMX's tiles where the kernels use them.
  if (isa == "AVX-512 + VNNI" && has({"avx512_bf16"}))
    isa += " + BF16";
  packed::Isa chosen = packed::preferredIsa();
  if (has({"amx_tile"}))
    isa += chosen == packed::Isa::Amx ? " + AMX"
           : packed::runs(packed::Isa::Amx)
               ? " + AMX (unused: TFMC_KERNEL_ISA)"
               : " + AMX (unused: not available to this process)";
  // The kernels' own choice (KernelIsa.h), so the line names what ran.
  if (packed::runs(packed::Isa::Avx512) && chosen == packed::Isa::Avx2)
    isa += " (TFMC_KERNEL_ISA=avx2: AVX2 kernels)";
  return "cpu: " + model + ", " + isa;
}
