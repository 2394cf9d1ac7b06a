//===- machine.cpp - the machine limits the benchmark compares against ----===//
//
// tfmc-bench-machine [--threads N]: prints one JSON line with the measured
// oneDNN sgemm rate (GFLOP/s, 1024^3, best of 5) and the memory bandwidth
// for reading (sum of 256 MiB) and copying (256 MiB memcpy), best of 5.
//
//===----------------------------------------------------------------------===//
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" void omp_set_num_threads(int);

static double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

int main(int argc, char **argv) {
  int threads = 1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--threads")
      threads = std::max(1, std::atoi(argv[i + 1]));
  omp_set_num_threads(threads);

  const int64_t n = 1024;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
  double bestGemm = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    auto start = std::chrono::steady_clock::now();
    if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                   c.data(), n) != dnnl_success) {
      std::fprintf(stderr, "error: dnnl_sgemm failed\n");
      return 1;
    }
    if (rep > 0) // the first call warms up
      bestGemm = std::min(bestGemm, seconds(start));
  }

  const size_t bytes = size_t(256) << 20;
  std::vector<float> src(bytes / sizeof(float), 1.0f),
      dst(bytes / sizeof(float), 0.0f);
  double bestRead = 1e30, bestCopy = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto start = std::chrono::steady_clock::now();
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 3 < src.size(); i += 4) {
      s0 += src[i];
      s1 += src[i + 1];
      s2 += src[i + 2];
      s3 += src[i + 3];
    }
    sink = sink + s0 + s1 + s2 + s3;
    bestRead = std::min(bestRead, seconds(start));
    start = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    bestCopy = std::min(bestCopy, seconds(start));
    // Read the copy back so the compiler cannot drop it.
    sink = sink + dst[(size_t(rep) * 7919) % dst.size()];
  }
  std::printf("{\"threads\": %d, \"sgemm_gflops\": %.1f, \"read_gbs\": %.1f, "
              "\"copy_gbs\": %.1f}\n",
              threads, 2.0 * n * n * n / bestGemm / 1e9, bytes / bestRead / 1e9,
              bytes / bestCopy / 1e9);
  return 0;
}
