//===- KernelIsaTest.cpp - the kernels' choice of instruction set ---------===//
#include "runtime/kernels/KernelIsa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace tfmc::runtime;

/// TFMC_KERNEL_ISA: avx2 forces the AVX2 kernels; what cannot be honoured
/// falls back to the best kernels here with one note.
TEST(KernelIsa, OverrideNames) {
  std::string note;
  EXPECT_EQ(packed::isaFor(nullptr, true, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("", false, note), packed::Isa::Avx2);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx2", true, note), packed::Isa::Avx2);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", true, note), packed::Isa::Avx512);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(packed::isaFor("avx512", false, note), packed::Isa::Avx2);
  EXPECT_NE(note.find("does not run the AVX-512 kernels"), std::string::npos);
  EXPECT_EQ(packed::isaFor("amx", true, note), packed::Isa::Avx512);
  EXPECT_EQ(note, "TFMC_KERNEL_ISA=amx: this build has no AMX kernels; using "
                  "avx512");
  EXPECT_EQ(packed::isaFor("sse2", false, note), packed::Isa::Avx2);
  EXPECT_EQ(note, "TFMC_KERNEL_ISA=sse2: expected avx2, avx512 or amx; using "
                  "avx2");
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
}

/// The process's choice is what isaFor() makes of its environment (ctest
/// also runs this with TFMC_KERNEL_ISA=avx2: runtime-kernel-isa-avx2), and
/// the best kernels here run here.
TEST(KernelIsa, PreferredIsaFollowsTheEnvironment) {
  std::string note;
  packed::Isa expected = packed::isaFor(
      std::getenv("TFMC_KERNEL_ISA"), packed::runs(packed::Isa::Avx512), note);
  EXPECT_EQ(packed::preferredIsa(), expected);
  if (packed::availableOnThisCpu())
    EXPECT_TRUE(packed::runs(packed::preferredIsa()));
  const char *forced = std::getenv("TFMC_KERNEL_ISA");
  if (forced && std::string(forced) == "avx2")
    EXPECT_EQ(packed::preferredIsa(), packed::Isa::Avx2);
}
