//===- QuantizeTest.cpp - int8 and float16 conversions --------------------===//
#include "compiler/Conversion/Passes.h"
#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tfmc::runtime;

namespace {

TEST(Quantize, ActivationLevelsAgreeBetweenCompilerAndRuntime) {
  EXPECT_EQ(kActivationLevels, mlir::tfm::kActivationLevels);
  // u8 inputs (q + levels + 1) times s8 weights, summed in pairs into
  // int16 by AVX2's vpmaddubsw, must not saturate.
  EXPECT_LE(2 * (2 * kActivationLevels + 1) * 127, 32767);
}

TEST(Quantize, RowScalesAreMaxAbsOver127) {
  std::vector<float> w = {0.5f, -1.0f, 0.25f, 0.0f,   // max 1
                          2.0f, 3.0f,  -6.35f, 0.01f}; // max 6.35
  QuantizedMatrix q = quantizeRows(w.data(), 2, 4);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_FLOAT_EQ(q.scales[0], 1.0f / 127);
  EXPECT_FLOAT_EQ(q.scales[1], 6.35f / 127);
  // The largest magnitude maps to ±127 exactly; others round to nearest.
  EXPECT_EQ(q.values[1], -127);
  EXPECT_EQ(q.values[6], -127);
  EXPECT_EQ(q.values[0], 64); // 63.5 rounds half to even
  EXPECT_EQ(q.values[2], 32); // 31.75
  EXPECT_EQ(q.values[3], 0);
  EXPECT_EQ(q.values[4], 40);
  EXPECT_EQ(q.values[5], 60);
  EXPECT_EQ(q.values[7], 0); // 0.2 rounds to 0
}

TEST(Quantize, WeightRowsGetTheScalarCodesOnEveryCpu) {
  // quantizeRows runs AVX-512 or AVX2 code where the CPU has it; its codes
  // and scales are the scalar definition's, including values exactly
  // halfway between two codes (rounded half to even), rows of zeros, rows
  // too small to scale and every length of a vector tail.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t cols : {1, 3, 8, 15, 16, 17, 33, 512, 515})
    for (int variant = 0; variant < 4; ++variant) {
      const int64_t rows = 5;
      std::vector<float> w(rows * cols);
      for (float &v : w)
        v = normal(rng) * (variant == 1 ? 1e-39f : 0.05f);
      if (variant == 2)
        std::fill(w.begin() + cols, w.begin() + 2 * cols, 0.0f);
      if (variant == 3)
        for (int64_t r = 0; r < rows; ++r) {
          // max 127 · 2^-4, so inv is 16 and x · inv is exact: halves.
          w[r * cols] = 127.0f / 16;
          for (int64_t c = 1; c < cols; ++c)
            w[r * cols + c] = (static_cast<float>(c % 50) - 24.5f) / 16;
        }
      QuantizedMatrix plain = quantizeRowsScalar(w.data(), rows, cols);
      std::vector<QuantizedMatrix> fast = {quantizeRows(w.data(), rows, cols)};
      if (__builtin_cpu_supports("avx2"))
        fast.push_back(quantizeRowsAvx2(w.data(), rows, cols));
      if (__builtin_cpu_supports("avx512f"))
        fast.push_back(quantizeRowsAvx512(w.data(), rows, cols));
      for (const QuantizedMatrix &q : fast) {
        EXPECT_EQ(q.scales, plain.scales) << cols << " " << variant;
        EXPECT_EQ(q.values, plain.values) << cols << " " << variant;
      }
      if (variant == 3 && cols > 2) {
        EXPECT_EQ(plain.values[1], -24); // -23.5 and -24.5 round to -24
        EXPECT_EQ(plain.values[2], -22); // -22.5 rounds to -22
      }
    }
}

TEST(Quantize, RoundTripErrorIsAtMostHalfAStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  int64_t rows = 64, cols = 97;
  std::vector<float> w(rows * cols);
  for (float &v : w)
    v = dist(rng);
  QuantizedMatrix q = quantizeRows(w.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float back = q.scales[r] * q.values[r * cols + c];
      EXPECT_LE(std::fabs(back - w[r * cols + c]), 0.5f * q.scales[r] * 1.0001f);
      EXPECT_GE(q.values[r * cols + c], -127);
      EXPECT_LE(q.values[r * cols + c], 127);
    }
}

TEST(Quantize, ZeroRowsHaveZeroScaleAndValues) {
  std::vector<float> w(2 * 5, 0.0f);
  w[7] = -0.0f;
  QuantizedMatrix q = quantizeRows(w.data(), 2, 5);
  EXPECT_EQ(q.scales[0], 0.0f);
  EXPECT_EQ(q.scales[1], 0.0f);
  for (int8_t v : q.values)
    EXPECT_EQ(v, 0);
  std::vector<int8_t> a(5, 1);
  EXPECT_EQ(quantizeActivationRow(w.data(), 5, kActivationLevels, a.data()),
            0.0f);
  for (int8_t v : a)
    EXPECT_EQ(v, 0);
}

/// Rows too small for levels / max|x| to be a float (max|x| below about
/// 1.9e-37 for activations, 3.7e-37 for weights) get codes 0, not the
/// NaNs of 0 · inf, on the scalar and the AVX2 row quantizers alike; just
/// above, the usual codes.
TEST(Quantize, RowsTooSmallToScaleGetZeroCodes) {
  for (float amax : {1e-38f, 1.5e-37f, 1e-45f}) {
    std::vector<float> x = {0.0f, amax, -amax / 2, 0.0f, amax / 4, 0.0f,
                            0.0f, -0.0f, 0.0f};
    std::vector<int8_t> q(x.size(), 7);
    quantizeActivationRow(x.data(), static_cast<int64_t>(x.size()),
                          kActivationLevels, q.data());
    for (int8_t v : q)
      EXPECT_EQ(v, 0) << amax;
    QuantizedMatrix w = quantizeRows(x.data(), 1, static_cast<int64_t>(x.size()));
    for (int8_t v : w.values)
      EXPECT_EQ(v, 0) << amax;
    if (__builtin_cpu_supports("avx2")) {
      std::vector<uint8_t> u(x.size(), 7);
      quantizeRowU8Avx2(x.data(), static_cast<int64_t>(x.size()), u.data());
      for (uint8_t v : u)
        EXPECT_EQ(v, kActivationLevels + 1) << amax;
    }
  }
  EXPECT_EQ(quantizationFactor(63.0f, 1e-38f), 0.0f);
  EXPECT_EQ(quantizationFactor(63.0f, 0.0f), 0.0f);
  EXPECT_EQ(quantizationFactor(63.0f, 1e-30f), 63.0f / 1e-30f);
  // Rows of ordinary size on both quantizers: the same codes.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (__builtin_cpu_supports("avx2"))
    for (float scale : {1.0f, 1e-30f, 1e30f}) {
      std::vector<float> x(45);
      for (float &v : x)
        v = normal(rng) * scale;
      std::vector<int8_t> q(x.size());
      std::vector<uint8_t> u(x.size());
      float s = quantizeActivationRow(x.data(), 45, kActivationLevels, q.data());
      float su = quantizeRowU8Avx2(x.data(), 45, u.data());
      EXPECT_EQ(s, su);
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_EQ(q[i] + kActivationLevels + 1, u[i]) << scale << " " << i;
    }
}

TEST(Quantize, RowsThatAreNotNumbersGiveANaNScaleAndZeroCodes) {
  // A NaN or an infinity anywhere in a row (in the vector part or in the
  // tail of the AVX2 quantizer): codes 0 and the scale NaN, so the row's
  // outputs are NaN as in float32 (a NaN dropped by max() would leave
  // finite codes of nothing, and the model's overflow unsaid).
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, -nan, inf, -inf})
    for (size_t at : {size_t(0), size_t(5), size_t(17), size_t(19)}) {
      std::vector<float> x(20);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.25f * float(i) - 2.0f;
      x[at] = bad;
      std::vector<int8_t> q(x.size(), 7);
      float s =
          quantizeActivationRow(x.data(), 20, kActivationLevels, q.data());
      EXPECT_TRUE(std::isnan(s)) << bad << " at " << at;
      for (int8_t v : q)
        EXPECT_EQ(v, 0) << bad << " at " << at;
      if (__builtin_cpu_supports("avx2")) {
        std::vector<uint8_t> u(x.size(), 7);
        EXPECT_TRUE(std::isnan(quantizeRowU8Avx2(x.data(), 20, u.data())))
            << bad << " at " << at;
        for (uint8_t v : u)
          EXPECT_EQ(v, kActivationLevels + 1) << bad << " at " << at;
        // Dequantized: every output NaN, with or without ReLU after it.
        std::vector<int32_t> acc(9, 5), rowSums(9, 1);
        std::vector<float> wScale(9, 0.5f), bias(9, 1.0f), out(9);
        dequantizeRowAvx2(acc.data(), rowSums.data(), kActivationLevels + 1,
                          nonFiniteRowScale(), wScale.data(), bias.data(),
                          out.data(), 9, /*relu=*/false);
        for (float v : out)
          EXPECT_TRUE(std::isnan(v));
      }
    }
}

/// Whether the AVX-512 variants run here.
bool avx512Here() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx2");
}

TEST(Quantize, TheAvx512QuantizerGivesTheAvx2CodesAndScale) {
  if (!avx512Here())
    GTEST_SKIP() << "no AVX-512 here";
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (int64_t k : {1, 7, 15, 16, 17, 31, 32, 33, 64, 71, 512, 2048})
    for (int variant = 0; variant < 5; ++variant) {
      std::vector<float> x(k);
      for (float &v : x)
        v = normal(rng) * (variant == 1 ? 1e-30f : 1.0f);
      if (variant == 2)
        std::fill(x.begin(), x.end(), 0.0f);
      if (variant == 3)
        x[k - 1] = nan; // in the masked tail where k % 16
      if (variant == 4)
        x[k / 2] = -inf;
      // Values exactly halfway between two codes (round half to even): the
      // row's largest magnitude is the levels, so x · inv is x itself.
      if (variant == 0 && k > 4) {
        x[0] = static_cast<float>(kActivationLevels);
        x[1] = 1.5f;
        x[2] = -2.5f;
      }
      std::vector<uint8_t> narrow(k, 1), wide(k, 2);
      float s2 = quantizeRowU8Avx2(x.data(), k, narrow.data());
      float s5 = quantizeRowU8Avx512(x.data(), k, wide.data());
      if (variant == 0 && k > 4) {
        EXPECT_EQ(wide[1], 2 + kActivationLevels + 1) << "1.5 rounds to 2";
        EXPECT_EQ(wide[2], -2 + kActivationLevels + 1) << "-2.5 rounds to -2";
      }
      if (std::isnan(s2))
        EXPECT_TRUE(std::isnan(s5)) << k << " " << variant;
      else
        EXPECT_EQ(s2, s5) << k << " " << variant;
      EXPECT_EQ(narrow, wide) << k << " " << variant;
    }
}

TEST(Quantize, DequantizedColumnsDoNotDependOnTheirBlock) {
  // A column's output is fma(float(exact), xScale · wScale, bias) wherever
  // its block starts and however many columns the call has (greedy's
  // fused projection dequantizes blocks of a row that the plain layer
  // dequantizes whole), in both variants. Until 2026-12-06 the compiler
  // fused the multiply and add in some unrolled copies of the AVX2 loop
  // and not in others: 2,661 of these comparisons differed.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> sums(-3000000, 3000000);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = 203;
  std::vector<int32_t> acc(n), rowSums(n);
  std::vector<float> wScale(n), bias(n);
  for (int64_t j = 0; j < n; ++j) {
    acc[j] = sums(rng);
    rowSums[j] = sums(rng) / 1000;
    wScale[j] = std::fabs(normal(rng)) * 0.01f;
    bias[j] = normal(rng);
  }
  const float xScale = 0.0123f;
  const int32_t offset = kActivationLevels + 1;
  using Dequantize =
      void (*)(const int32_t *, const int32_t *, int32_t, float, const float *,
               const float *, float *, int64_t, bool);
  std::vector<Dequantize> variants;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    variants.push_back(dequantizeRowAvx2);
  if (avx512Here())
    variants.push_back(dequantizeRowAvx512);
  if (variants.empty())
    GTEST_SKIP() << "no AVX2 here";
  for (bool relu : {false, true}) {
    std::vector<float> expected(n);
    for (int64_t j = 0; j < n; ++j) {
      float v = std::fma(static_cast<float>(acc[j] - offset * rowSums[j]),
                         xScale * wScale[j], bias[j]);
      expected[j] = relu && v < 0 ? 0.0f : v;
    }
    for (Dequantize dequantize : variants)
      for (int64_t start = 0; start < n; start += 3)
        for (int64_t count : {int64_t(1), int64_t(5), int64_t(8), int64_t(13),
                              int64_t(16), int64_t(40), n - start}) {
          if (start + count > n)
            continue;
          std::vector<float> out(count);
          dequantize(acc.data() + start, rowSums.data() + start, offset, xScale,
                     wScale.data() + start, bias.data() + start, out.data(),
                     count, relu);
          for (int64_t j = 0; j < count; ++j)
            ASSERT_EQ(std::memcmp(&out[j], &expected[start + j], 4), 0)
                << "column " << start + j << " in a block from " << start
                << " of " << count << (relu ? ", relu" : "");
        }
  }
}

TEST(Quantize, ActivationsSaturateAtTheLevels) {
  // The row's largest magnitude maps to ±levels; nothing lies beyond.
  std::vector<float> x = {1e30f, -1e30f, 5e29f, 1.0f};
  std::vector<int8_t> q(4);
  float scale =
      quantizeActivationRow(x.data(), 4, kActivationLevels, q.data());
  EXPECT_FLOAT_EQ(scale, 1e30f / kActivationLevels);
  EXPECT_EQ(q[0], kActivationLevels);
  EXPECT_EQ(q[1], -kActivationLevels);
  EXPECT_EQ(q[2], 32); // 31.5 rounds half to even
  EXPECT_EQ(q[3], 0);
}

TEST(Quantize, HalfRoundTripsEveryHalfValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = tfmc::halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tfmc::halfToFloat(tfmc::floatToHalf(f)))) << h;
      continue;
    }
    EXPECT_EQ(tfmc::floatToHalf(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Quantize, RoundingRowsToHalvesGivesFloatToHalfsBits) {
  // roundToHalves (F16C where the CPU has it) against floatToHalf, around
  // every finite half: the half itself, a float ulp either side, the
  // midpoint to the next half (a tie) and a float ulp either side of it,
  // in runs whose lengths leave every vector tail.
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = tfmc::halfToFloat(static_cast<uint16_t>(h));
    if (!std::isfinite(f) || std::fabs(f) >= tfmc::kHalfMax)
      continue;
    float next = tfmc::halfToFloat(static_cast<uint16_t>(h + 1));
    float mid = f + (next - f) / 2;
    for (float v : {f, std::nextafter(f, -1e9f), std::nextafter(f, 1e9f), mid,
                    std::nextafter(mid, -1e9f), std::nextafter(mid, 1e9f)})
      x.push_back(v);
  }
  std::vector<uint16_t> out(x.size());
  for (size_t start = 0; start < x.size(); start += 4099) {
    size_t count = std::min<size_t>(4099 - start % 7, x.size() - start);
    roundToHalves(x.data() + start, static_cast<int64_t>(count),
                  out.data() + start);
    for (size_t i = start; i < start + count; ++i)
      ASSERT_EQ(out[i], tfmc::floatToHalf(x[i])) << x[i];
  }
}

TEST(Quantize, HalfRoundsToNearestEven) {
  EXPECT_EQ(tfmc::floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(tfmc::floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(tfmc::floatToHalf(65520.0f), 0x7C00); // rounds up to infinity
  EXPECT_EQ(tfmc::floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(tfmc::floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(tfmc::floatToHalf(-1e10f), 0xFC00);
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  EXPECT_EQ(tfmc::floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(tfmc::floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(tfmc::floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(tfmc::floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even 0
  EXPECT_EQ(tfmc::floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(tfmc::floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(tfmc::floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(tfmc::floatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(
      tfmc::halfToFloat(tfmc::floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
}

} // namespace

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// bfloat16 storage (compute type bfloat16): round to nearest, ties to the
/// even significand; exact round trips; infinities and NaNs kept.
TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(tfmc::floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(tfmc::bfloat16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(tfmc::floatToBFloat16(fromBits(0x3f808000)), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6.
  EXPECT_EQ(tfmc::floatToBFloat16(fromBits(0x3f818000)), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(tfmc::floatToBFloat16(fromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(tfmc::floatToBFloat16(-2.5f), 0xc020);
  EXPECT_EQ(tfmc::floatToBFloat16(INFINITY), 0x7f80);
  EXPECT_EQ(tfmc::floatToBFloat16(-INFINITY), 0xff80);
  // The largest float rounds up into infinity, as binary32 -> bfloat16 must.
  EXPECT_EQ(tfmc::floatToBFloat16(fromBits(0x7f7fffff)), 0x7f80);
  uint16_t nan = tfmc::floatToBFloat16(NAN);
  EXPECT_TRUE(std::isnan(tfmc::bfloat16ToFloat(nan)));
  // A NaN whose payload sits in the low half stays a NaN.
  EXPECT_TRUE(std::isnan(tfmc::bfloat16ToFloat(
      tfmc::floatToBFloat16(fromBits(0x7f800001)))));
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    float f = tfmc::bfloat16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f))
      EXPECT_EQ(tfmc::floatToBFloat16(f), b);
  }
}

} // namespace
