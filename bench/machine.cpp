//===- machine.cpp - the machine limits the benchmark compares against ----===//
//
// tfmc-bench-machine [--threads N]: prints one JSON line with the measured
// oneDNN sgemm rate (GFLOP/s, 1024^3, best of 5) and the memory bandwidth
// for reading (sum of 256 MiB) and copying (256 MiB memcpy), best of 5:
// the same probe `tfmc profile` runs (runtime/kernels/MachineProbe); and,
// with N > 1, the vector FMA rate of N threads together against one alone
// (probeVectorScaling: what N threads can gain at most on this machine);
// and where the CPU has avx512_bf16, one thread's vdpbf16ps rate on
// registers alone (the peak of bfloat16 layers on the vector kernels); and
// where the process has AMX tiles, one thread's tdpbf16ps and tdpbusd rates
// on tiles alone (the peaks of bfloat16 and int8 layers there).
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
              "\"copy_gbs\": %.1f",
              m.threads, m.sgemmGflops, m.readGBs, m.copyGBs);
  if (double dot = tfmc::runtime::probeBFloat16DotGflops(); dot > 0)
    std::printf(", \"bf16_dot_gflops\": %.1f", dot);
  if (double tiles = tfmc::runtime::probeTileGflops(false); tiles > 0)
    std::printf(", \"amx_bf16_gflops\": %.1f, \"amx_int8_gops\": %.1f", tiles,
                tfmc::runtime::probeTileGflops(true));
  if (m.threads > 1) {
    tfmc::runtime::VectorScaling v =
        tfmc::runtime::probeVectorScaling(m.threads);
    std::printf(", \"fma_gflops_alone\": %.1f, \"fma_gflops_together\": %.1f",
                v.alone, v.together);
  }
  std::printf("}\n");
  return 0;
}
