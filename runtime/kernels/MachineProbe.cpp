//===- MachineProbe.cpp - this host's limits, measured --------------------===//
#include "runtime/kernels/MachineProbe.h"
#include "runtime/kernels/KernelAbi.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
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

} // namespace

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
