//===- BFloat16OperandsTest.cpp - a layer's input rounded to bfloat16 -----===//
#include "runtime/kernels/BFloat16Operands.h"
#include "tests/unit/runtime/RandomData.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tfmc::runtime;

namespace {

/// The instruction sets whose vectors run here.
std::vector<packed::Isa> isasHere() {
  std::vector<packed::Isa> isas;
  for (packed::Isa isa : {packed::Isa::Avx2, packed::Isa::Avx512})
    if (packed::runs(isa))
      isas.push_back(isa);
  return isas;
}

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t upperHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

TEST(BFloat16Operands, RoundToNearestEvenKeepNaNsFlushSubnormals) {
  struct Case {
    uint32_t in;
    uint16_t want;
  } cases[] = {
      {0x3f800000u, 0x3f80}, // 1: exact
      {0x3f808000u, 0x3f80}, // halfway, last kept bit even: down
      {0x3f818000u, 0x3f82}, // halfway, odd: up
      {0x3f808001u, 0x3f81}, // above halfway: up
      {0xbf807fffu, 0xbf80}, // below halfway, negative: down in magnitude
      {0x7f7fffffu, 0x7f80}, // the largest float rounds to infinity
      {0xff800000u, 0xff80}, // -inf stays
      {0x7fc00001u, 0x7fc0}, // a quiet NaN stays one
      {0x7f800001u, 0x7fc0}, // a signalling NaN becomes quiet, never inf
      {0x00400000u, 0x0000}, // subnormal: zero
      {0x80400000u, 0x8000}, // negative subnormal: -0
      {0x007fffffu, 0x0080}, // the largest subnormal rounds to the smallest
                             // normal
      {0x00800000u, 0x0080}, // the smallest normal stays
  };
  for (const Case &c : cases) {
    float x = fromBits(c.in);
    EXPECT_EQ(bfloat16OperandOf(x), c.want) << std::hex << c.in;
    // The vector rows give the same, at every position of a 16-wide block
    // and of the tail.
    std::vector<float> row(37, x);
    for (packed::Isa isa : isasHere()) {
      std::vector<uint16_t> out(2 * pairsOf(37), 0xffff);
      bfloat16Operands(row.data(), 1, 37, out.data(), isa);
      for (int i = 0; i < 37; ++i)
        EXPECT_EQ(out[i], c.want) << std::hex << c.in << " at " << std::dec << i
                                  << " isa " << static_cast<int>(isa);
      EXPECT_EQ(out[37], 0) << "an odd k's last pair ends in a zero";
    }
  }
}

TEST(BFloat16Operands, RowsArePairsOfTheScalarRounding) {
  std::mt19937 rng(17);
  for (int64_t k : {1, 2, 15, 16, 17, 33, 512}) {
    const int64_t m = 5, stride = 2 * pairsOf(k);
    std::vector<float> x = tfmc::testing::normal(m * k, rng);
    for (size_t i = 0; i < x.size(); i += 7)
      x[i] *= 1e-38f; // subnormals among them
    for (size_t i = 3; i < x.size(); i += 11)
      x[i] = i % 2 ? std::numeric_limits<float>::quiet_NaN()
                   : -std::numeric_limits<float>::infinity();
    for (packed::Isa isa : isasHere()) {
      std::vector<uint16_t> out(m * stride, 0xffff);
      bfloat16Operands(x.data(), m, k, out.data(), isa);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < k; ++i)
          ASSERT_EQ(out[r * stride + i], bfloat16OperandOf(x[r * k + i]))
              << "k " << k << " " << r << "," << i << " isa "
              << static_cast<int>(isa);
        if (k % 2)
          EXPECT_EQ(out[r * stride + k], 0);
      }
    }
    std::vector<uint16_t> out(m * stride, 0xffff);
    bfloat16Operands(x.data(), m, k, out.data());
    std::vector<float> widened(x.size());
    roundToBFloat16Operands(x.data(), x.size(), widened.data());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t i = 0; i < k; ++i) {
        uint16_t want = bfloat16OperandOf(x[r * k + i]);
        EXPECT_EQ(out[r * stride + i], want)
            << "k " << k << " " << r << "," << i;
        EXPECT_EQ(upperHalf(widened[r * k + i]), want);
        // Within half a bfloat16 ulp (2^-8 relative) of the input, or zero.
        float v = widened[r * k + i];
        if (v != 0.0f && std::isfinite(x[r * k + i]))
          EXPECT_LE(std::fabs(v - x[r * k + i]), std::ldexp(std::fabs(v), -8));
      }
      if (k % 2)
        EXPECT_EQ(out[r * stride + k], 0);
    }
  }
}

TEST(BFloat16Operands, WeightSubnormalsReadAsZeros) {
  EXPECT_EQ(bfloat16Operand(0x0001), 0x0000);
  EXPECT_EQ(bfloat16Operand(0x807f), 0x8000);
  EXPECT_EQ(bfloat16Operand(0x0080), 0x0080);
  EXPECT_EQ(bfloat16Operand(0x7fc0), 0x7fc0);
  EXPECT_EQ(bfloat16Operand(0xbf80), 0xbf80);
}

} // namespace
