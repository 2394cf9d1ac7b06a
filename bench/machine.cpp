//===- machine.cpp - the machine limits the benchmark compares against ----===//
//
// tfmc-bench-machine [--threads N]: prints one JSON line with the measured
// oneDNN sgemm rate (GFLOP/s, 1024^3, best of 5) and the memory bandwidth
// for reading (sum of 256 MiB) and copying (256 MiB memcpy), best of 5:
// the same probe `tfmc profile` runs (runtime/kernels/MachineProbe).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/MachineProbe.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char **argv) {
  tfmc::runtime::ProbeOptions options;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--threads")
      options.threads = std::max(1, std::atoi(argv[i + 1]));
  tfmc::runtime::MachineLimits m = tfmc::runtime::probeMachine(options);
  if (m.sgemmGflops <= 0) {
    std::fprintf(stderr, "error: dnnl_sgemm failed\n");
    return 1;
  }
  std::printf("{\"threads\": %d, \"sgemm_gflops\": %.1f, \"read_gbs\": %.1f, "
              "\"copy_gbs\": %.1f}\n",
              m.threads, m.sgemmGflops, m.readGBs, m.copyGBs);
  return 0;
}
