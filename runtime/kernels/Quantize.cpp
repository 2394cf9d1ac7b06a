//===- Quantize.cpp - int8 and float16 conversions of weights/activations -===//
#include "runtime/kernels/Quantize.h"

#include "frontends/model/Float16.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelIsa.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tfmc::runtime;

namespace {

/// One weight row's codes and scale, as the rule in Quantize.h says: the
/// scalar definition, and the same with 8 and 16 lanes (vcvtps2dq rounds
/// half to even, as nearbyint does in the default rounding mode; the load
/// refuses weights that are not finite, so the lanes' maximum is the
/// row's). Weights are quantized at every load that asks for int8 (0.2 s
/// of the base model's load in scalar code, 2026-12-06).
float quantizeWeightRow(const float *row, int64_t cols, int8_t *out) {
  float amax = 0;
  for (int64_t c = 0; c < cols; ++c)
    amax = std::max(amax, std::fabs(row[c]));
  float inv = quantizationFactor(127.0f, amax);
  for (int64_t c = 0; c < cols; ++c)
    out[c] = static_cast<int8_t>(
        std::clamp(std::nearbyint(row[c] * inv), -127.0f, 127.0f));
  return amax / 127.0f;
}

__attribute__((target("avx512f"))) float
quantizeWeightRowAvx512(const float *row, int64_t cols, int8_t *out) {
  auto lanesAt = [cols](int64_t c) {
    return cols - c >= 16 ? __mmask16(0xFFFF)
                          : static_cast<__mmask16>((1u << (cols - c)) - 1);
  };
  const float amax = largestMagnitudeAvx512(row, cols);
  const __m512 inv = _mm512_set1_ps(quantizationFactor(127.0f, amax));
  const __m512i low = _mm512_set1_epi32(-127), high = _mm512_set1_epi32(127);
  for (int64_t c = 0; c < cols; c += 16) {
    __mmask16 lanes = lanesAt(c);
    __m512i codes = _mm512_cvtps_epi32(
        _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, row + c), inv));
    codes = _mm512_min_epi32(_mm512_max_epi32(codes, low), high);
    _mm512_mask_cvtepi32_storeu_epi8(out + c, lanes, codes);
  }
  return amax / 127.0f;
}

__attribute__((target("avx2"))) float
quantizeWeightRowAvx2(const float *row, int64_t cols, int8_t *out) {
  const float amax = largestMagnitudeAvx2(row, cols);
  int64_t c = 0;
  const float scalarInv = quantizationFactor(127.0f, amax);
  const __m256 inv = _mm256_set1_ps(scalarInv);
  const __m256i low = _mm256_set1_epi32(-127), high = _mm256_set1_epi32(127);
  alignas(32) int32_t codes[8];
  for (c = 0; c + 8 <= cols; c += 8) {
    __m256i v =
        _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + c), inv));
    _mm256_store_si256(reinterpret_cast<__m256i *>(codes),
                       _mm256_min_epi32(_mm256_max_epi32(v, low), high));
    for (int i = 0; i < 8; ++i)
      out[c + i] = static_cast<int8_t>(codes[i]);
  }
  for (; c < cols; ++c)
    out[c] = static_cast<int8_t>(
        std::clamp(std::nearbyint(row[c] * scalarInv), -127.0f, 127.0f));
  return amax / 127.0f;
}

using RowQuantizer = float (*)(const float *, int64_t, int8_t *);

QuantizedMatrix quantizeEachRow(const float *w, int64_t rows, int64_t cols,
                                RowQuantizer quantizeRow) {
  QuantizedMatrix q;
  q.rows = rows;
  q.cols = cols;
  q.values.resize(rows * cols);
  q.scales.resize(rows);
  for (int64_t r = 0; r < rows; ++r)
    q.scales[r] = quantizeRow(w + r * cols, cols, q.values.data() + r * cols);
  return q;
}

} // namespace

QuantizedMatrix tfmc::runtime::quantizeRows(const float *w, int64_t rows,
                                            int64_t cols) {
  // The kernels' one choice of instruction set (KernelIsa.h): the codes
  // are the same in every variant.
  static const RowQuantizer quantizeRow =
      packed::avx512Vectors(packed::preferredIsa()) ? quantizeWeightRowAvx512
      : packed::availableOnThisCpu()                ? quantizeWeightRowAvx2
                                                    : quantizeWeightRow;
  return quantizeEachRow(w, rows, cols, quantizeRow);
}

QuantizedMatrix tfmc::runtime::quantizeRowsScalar(const float *w, int64_t rows,
                                                  int64_t cols) {
  return quantizeEachRow(w, rows, cols, quantizeWeightRow);
}

QuantizedMatrix tfmc::runtime::quantizeRowsAvx2(const float *w, int64_t rows,
                                                int64_t cols) {
  return quantizeEachRow(w, rows, cols, quantizeWeightRowAvx2);
}

QuantizedMatrix tfmc::runtime::quantizeRowsAvx512(const float *w, int64_t rows,
                                                  int64_t cols) {
  return quantizeEachRow(w, rows, cols, quantizeWeightRowAvx512);
}

float tfmc::runtime::quantizeActivationRow(const float *x, int64_t n,
                                           int levels, int8_t *q) {
  float amax = 0;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    nan |= std::isnan(x[i]);
  }
  if (nan || std::isinf(amax)) {
    std::fill(q, q + n, int8_t(0));
    return nonFiniteRowScale();
  }
  float lv = static_cast<float>(levels);
  float inv = quantizationFactor(lv, amax);
  for (int64_t i = 0; i < n; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -lv, lv));
  return amax / lv;
}

namespace {

__attribute__((target("avx2,f16c"))) void
roundToHalvesF16c(const float *x, int64_t count, uint16_t *out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(out + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < count; ++i)
    out[i] = tfmc::floatToHalf(x[i]);
}

} // namespace

void tfmc::runtime::roundToHalves(const float *x, int64_t count,
                                  uint16_t *out) {
  // (AVX2 with FMA and F16C: KernelIsa.h.)
  static const bool f16c = packed::availableOnThisCpu();
  if (f16c) {
    roundToHalvesF16c(x, count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = tfmc::floatToHalf(x[i]);
}
