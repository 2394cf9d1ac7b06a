//===- MachineProbe.h - this host's limits, measured ------------*- C++ -*-===//
//
// What a profile compares each op against (tfmc profile) and what the
// benchmark's ratios are taken to (tfmc-bench-machine): the float32 GEMM
// rate of oneDNN's sgemm on 1024^3 and the memory bandwidth of reading a
// buffer far larger than the caches (huge pages, vector loads into
// independent sums, each thread its own slice), both best of a few runs,
// with the threads given.
//
// History (2026-12-05): the read was one thread's scalar sum in order,
// which the compiler may not vectorise: its adds, not the memory, set the
// pace (25-27 GB/s whatever the buffer's size, on an EPYC VM whose memory
// gives one core 29-45 GB/s and two ~55), so the weight-streaming bound was
// ~1.5x too loose and two threads "read" 1.02x what one did.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_MACHINEPROBE_H
#define RUNTIME_KERNELS_MACHINEPROBE_H

#include <cstdint>
#include <string>

namespace tfmc::runtime {

struct MachineLimits {
  int threads = 1;
  /// sgemm GFLOP/s; 0 in a build without oneDNN (not measured).
  double sgemmGflops = 0;
  /// GB/s summing a buffer (read; all threads) and memcpy-ing it (copy:
  /// bytes copied; one thread).
  double readGBs = 0, copyGBs = 0;
};

struct ProbeOptions {
  int threads = 1;
  /// Buffer of the bandwidth runs and the number of runs of each kind.
  int64_t bandwidthBytes = int64_t(256) << 20;
  int repeats = 5;
};

MachineLimits probeMachine(const ProbeOptions &options);

/// How much vector arithmetic `threads` threads get at once against one
/// thread alone: each runs an FMA loop (the widest vectors the kernels use
/// here, independent accumulators, no memory traffic) for ~0.1 s, alone
/// and then all together, best of `repeats`. On a machine whose cores are
/// its own, `together` is `threads` x `alone`; virtual CPUs that share a
/// core's vector units (SMT siblings on the host) give less, and no kernel
/// can scale beyond that.
struct VectorScaling {
  int threads = 1;
  /// GFLOP/s of one thread alone, and of all threads together (summed).
  double alone = 0, together = 0;
};
VectorScaling probeVectorScaling(int threads, int repeats = 3);

/// GFLOP/s of one thread's vdpbf16ps (avx512_bf16) on registers alone,
/// best of `repeats` runs of ~0.05 s: the multiply rate bfloat16 layers
/// can reach here (PackedGemm.h); 0 without avx512_bf16.
double probeBFloat16DotGflops(int repeats = 3);

/// GOP/s of one thread's int8 products on registers alone, as the vector
/// kernels make them here (vpdpbusd with AVX-512 VNNI, else AVX2's
/// vpmaddubsw + vpmaddwd + vpaddd), best of `repeats` runs of ~0.05 s; 0
/// without AVX2.
double probeInt8DotGops(int repeats = 3);

/// GFLOP/s (int8: GOP/s) of one thread's AMX tile multiplies on registers
/// alone (tdpbf16ps, or tdpbusd with `int8`; four independent 16 × 16
/// accumulators), best of `repeats` runs of ~0.05 s: the multiply rate the
/// bfloat16 and int8 layers can reach on AMX's tiles (PackedGemmAmx.cpp);
/// 0 where this process has no AMX tiles (KernelIsa.h).
double probeTileGflops(bool int8, int repeats = 3);

/// "cpu: MODEL, ISA" as bench/run.py prints it: the CPU's model name and
/// the instruction sets the kernels use here (AVX-512 + VNNI, AVX2 + FMA),
/// with a TFMC_KERNEL_ISA override named.
std::string hostDescription();

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_MACHINEPROBE_H
