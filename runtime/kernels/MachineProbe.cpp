//===- MachineProbe.cpp - this host's limits, measured --------------------===//
#include "runtime/kernels/MachineProbe.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
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

/// Seconds each of `threads` threads takes for the FMA loop when they start
/// together; the slowest.
double fmaSeconds(int threads, bool wide, int64_t iterations,
                  volatile float &sink) {
  std::atomic<int> ready{0};
  std::vector<double> seconds(threads);
  std::vector<float> sums(threads);
  auto work = [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < threads) {
    }
    auto start = std::chrono::steady_clock::now();
    sums[t] = wide ? fmaLoop512(iterations) : fmaLoop256(iterations);
    seconds[t] = secondsSince(start);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(work, t);
  work(0);
  for (std::thread &th : pool)
    th.join();
  for (float s : sums)
    sink = sink + s;
  return *std::max_element(seconds.begin(), seconds.end());
}

} // namespace

VectorScaling tfmc::runtime::probeVectorScaling(int threads, int repeats) {
  VectorScaling out;
  out.threads = std::max(1, threads);
  bool wide = __builtin_cpu_supports("avx512f");
  if (!wide && !(__builtin_cpu_supports("avx2") &&
                 __builtin_cpu_supports("fma")))
    return out;
  const int64_t iterations = wide ? 20'000'000 : 40'000'000;
  const double flops = double(iterations) * 12 * (wide ? 16 : 8) * 2;
  volatile float sink = 0;
  double alone = 1e30, together = 1e30;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    alone = std::min(alone, fmaSeconds(1, wide, iterations, sink));
    together = std::min(together, fmaSeconds(out.threads, wide, iterations, sink));
  }
  out.alone = flops / alone / 1e9;
  out.together = out.threads * flops / together / 1e9;
  return out;
}

MachineLimits tfmc::runtime::probeMachine(const ProbeOptions &options) {
  MachineLimits limits;
  limits.threads = std::max(1, options.threads);
  setKernelThreads(limits.threads);
  int repeats = std::max(1, options.repeats);
  limits.sgemmGflops = sgemmGflops(repeats);

  size_t bytes = static_cast<size_t>(std::max<int64_t>(options.bandwidthBytes,
                                                       int64_t(1) << 20));
  std::vector<float> src(bytes / sizeof(float), 1.0f),
      dst(bytes / sizeof(float), 0.0f);
  double bestRead = 1e30, bestCopy = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    auto start = std::chrono::steady_clock::now();
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 3 < src.size(); i += 4) {
      s0 += src[i];
      s1 += src[i + 1];
      s2 += src[i + 2];
      s3 += src[i + 3];
    }
    sink = sink + s0 + s1 + s2 + s3;
    bestRead = std::min(bestRead, secondsSince(start));
    start = std::chrono::steady_clock::now();
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
  const char *forced = std::getenv("TFMC_KERNEL_ISA");
  if (forced && std::strcmp(forced, "avx2") == 0 &&
      isa.find("AVX-512") != std::string::npos)
    isa += " (TFMC_KERNEL_ISA=avx2: AVX2 kernels)";
  return "cpu: " + model + ", " + isa;
}
