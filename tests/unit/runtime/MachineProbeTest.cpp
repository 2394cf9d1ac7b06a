//===- MachineProbeTest.cpp - the benchmark's machine probes --------------===//
//
// probeMachine's memory rates come out positive and finite whatever the
// thread count. probeVectorScaling measures one thread's FMA rate alone and
// the summed rate of all threads together. Whatever the machine, both are
// positive and finite, and two threads together do at least what one does
// alone at half speed each (the worst case: both on one core).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/MachineProbe.h"
#include "runtime/kernels/KernelIsa.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace tfmc::runtime;

TEST(MachineProbe, VectorScalingMeasuresBothRates) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 + FMA: the probe measures nothing here";
  VectorScaling v = probeVectorScaling(/*threads=*/2, /*repeats=*/1);
  EXPECT_EQ(v.threads, 2);
  EXPECT_TRUE(std::isfinite(v.alone) && v.alone > 0) << v.alone;
  EXPECT_TRUE(std::isfinite(v.together) && v.together > 0) << v.together;
  EXPECT_GE(v.together, 0.5 * v.alone) << v.together << " vs " << v.alone;
}

TEST(MachineProbe, OneThreadIsItsOwnBaseline) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 + FMA: the probe measures nothing here";
  // The best of three of each: one pair alone once measured 32 against 70
  // GFLOP/s on a fresh machine while ctest ran another test on the other
  // core.
  VectorScaling v = probeVectorScaling(/*threads=*/0, /*repeats=*/3);
  EXPECT_EQ(v.threads, 1);
  // The same loop, alone both times: within the noise of a shared host.
  EXPECT_GT(v.together, 0.5 * v.alone);
  EXPECT_LT(v.together, 2.0 * v.alone);
}

TEST(MachineProbe, ReadsWithEveryThreadCount) {
  // Slices per thread of a buffer that is no multiple of the thread count
  // or of the read loop's block: each run still measures a positive,
  // finite rate (the memory a VM's host backs lazily can make one run far
  // slower than another, so no ratio between them is asserted).
  for (int threads : {1, 2, 3}) {
    ProbeOptions options;
    options.threads = threads;
    options.bandwidthBytes = (int64_t(8) << 20) + 4100;
    options.repeats = 2;
    MachineLimits m = probeMachine(options);
    EXPECT_EQ(m.threads, threads);
    EXPECT_TRUE(std::isfinite(m.readGBs) && m.readGBs > 0) << m.readGBs;
    EXPECT_TRUE(std::isfinite(m.copyGBs) && m.copyGBs > 0) << m.copyGBs;
  }
}

/// The tile probe measures where this process has AMX tiles (positive and
/// finite) and reports 0 elsewhere, as bench/run.py reads it.
TEST(MachineProbe, TileRatesWhereTheTilesRun) {
  double brain = probeTileGflops(false, 1), int8 = probeTileGflops(true, 1);
  if (!packed::runs(packed::Isa::Amx)) {
    EXPECT_EQ(brain, 0);
    EXPECT_EQ(int8, 0);
    return;
  }
  EXPECT_TRUE(std::isfinite(brain) && brain > 0) << brain;
  EXPECT_TRUE(std::isfinite(int8) && int8 > 0) << int8;
}
