//===- KernelIsaTest.cpp - the kernels' choice of instruction set ---------===//
#include "runtime/kernels/KernelIsa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace tfmc::runtime;

/// TFMC_KERNEL_ISA: avx2 forces the AVX2 kernels, avx512 keeps AMX out;
/// what cannot be honoured falls back to the best kernels here with one
/// note, as does an AMX the operating system refused.
TEST(KernelIsa, OverrideNames) {
  const packed::IsaSupport avx2Only{}, avx512{true, false, false},
      amx{true, true, false}, refused{true, false, true};
  std::string note;
  EXPECT_EQ(packed::isaFor(nullptr, avx512, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor(nullptr, amx, note), packed::Isa::Amx);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("", avx2Only, note), packed::Isa::Avx2);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx2", avx512, note), packed::Isa::Avx2);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx2", refused, note), packed::Isa::Avx2);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", avx512, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", amx, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", refused, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", avx2Only, note), packed::Isa::Avx2);
  EXPECT_NE(note.find("does not run the AVX-512 kernels"), std::string::npos);
  EXPECT_EQ(packed::isaFor("amx", amx, note), packed::Isa::Amx);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("amx", avx512, note), packed::Isa::Avx512);
  EXPECT_EQ(note, "TFMC_KERNEL_ISA=amx: this CPU has no AMX tiles (AMX-TILE, "
                  "AMX-INT8 and AMX-BF16 with avx512_bf16); using avx512");
  EXPECT_EQ(packed::isaFor(nullptr, refused, note), packed::Isa::Avx512);
  EXPECT_EQ(note, "the operating system refused this process AMX's tile "
                  "state (arch_prctl ARCH_REQ_XCOMP_PERM); using avx512");
  EXPECT_EQ(packed::isaFor("amx", refused, note), packed::Isa::Avx512);
  EXPECT_NE(note.find("refused"), std::string::npos);
  EXPECT_EQ(packed::isaFor("sse2", avx2Only, note), packed::Isa::Avx2);
  EXPECT_EQ(note, "TFMC_KERNEL_ISA=sse2: expected avx2, avx512 or amx; using "
                  "avx2");
  EXPECT_EQ(packed::isaFor("sse2", amx, note), packed::Isa::Amx);
  EXPECT_EQ(note, "TFMC_KERNEL_ISA=sse2: expected avx2, avx512 or amx; using "
                  "amx");
}

/// What a CPU runs is nested: the AVX-512 kernels need what the AVX2 ones
/// need, vdpbf16ps needs the AVX-512 kernels, and the AVX2 kernels never
/// take bfloat16 pairs through it.
TEST(KernelIsa, WhatRunsIsNested) {
  if (packed::runs(packed::Isa::Avx512))
    EXPECT_TRUE(packed::runs(packed::Isa::Avx2));
  EXPECT_EQ(packed::runs(packed::Isa::Avx2), packed::availableOnThisCpu());
  EXPECT_EQ(packed::runs(packed::Isa::Avx512), packed::avx512::available());
  if (packed::avx512::bfloat16DotAvailable())
    EXPECT_TRUE(packed::avx512::available());
  EXPECT_FALSE(packed::bfloat16DotRuns(packed::Isa::Avx2));
  EXPECT_EQ(packed::bfloat16DotRuns(packed::Isa::Avx512),
            packed::avx512::bfloat16DotAvailable());
  // AMX's tiles: with the AVX-512 kernels and avx512_bf16 (their k
  // remainders), which Amx runs for everything else.
  if (packed::runs(packed::Isa::Amx)) {
    EXPECT_TRUE(packed::amx::cpuHasTiles());
    EXPECT_TRUE(packed::avx512::bfloat16DotAvailable());
    EXPECT_TRUE(packed::bfloat16DotRuns(packed::Isa::Amx));
  }
  EXPECT_EQ(packed::avx512Vectors(packed::Isa::Amx),
            packed::runs(packed::Isa::Avx512));
  EXPECT_FALSE(packed::avx512Vectors(packed::Isa::Avx2));
  packed::IsaSupport here = packed::supportHere();
  EXPECT_FALSE(here.amx && here.amxRefused);
  EXPECT_EQ(here.amx, packed::runs(packed::Isa::Amx));
}

/// The process's choice is what isaFor() makes of its environment (ctest
/// also runs this with TFMC_KERNEL_ISA=avx2: runtime-kernel-isa-avx2), and
/// the best kernels here run here.
TEST(KernelIsa, PreferredIsaFollowsTheEnvironment) {
  std::string note;
  packed::Isa expected = packed::isaFor(std::getenv("TFMC_KERNEL_ISA"),
                                        packed::supportHere(), note);
  EXPECT_EQ(packed::preferredIsa(), expected);
  if (packed::availableOnThisCpu())
    EXPECT_TRUE(packed::runs(packed::preferredIsa()));
  const char *forced = std::getenv("TFMC_KERNEL_ISA");
  if (forced && std::string(forced) == "avx2")
    EXPECT_EQ(packed::preferredIsa(), packed::Isa::Avx2);
}
