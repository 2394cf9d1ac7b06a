//===- Int8Rows.cpp - rows of an int8 layer in and out --------------------===//
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

using namespace tfmc::runtime;

/// round-half-even(p[0..8] · inv) + offset as int32.
static __attribute__((target("avx2"))) inline __m256i
quantize8(const float *p, __m256 inv, __m256i offset) {
  return _mm256_add_epi32(
      _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), inv)), offset);
}

/// Quantizes one input row to [-levels, levels] (as quantizeActivationRow)
/// and stores q + levels + 1 as unsigned bytes; returns the row's scale.
/// AVX2: vcvtps2dq rounds half to even like the scalar and loop kernels.
__attribute__((target("avx2"))) float
tfmc::runtime::quantizeRowU8Avx2(const float *x, int64_t k, uint8_t *out) {
  const __m256 signMask = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(signMask, v));
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, vmax);
  float amax = 0;
  for (float l : lanes)
    amax = std::max(amax, l);
  bool nan = _mm256_movemask_ps(unordered) != 0;
  for (; i < k; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    nan |= std::isnan(x[i]);
  }
  if (nan || std::isinf(amax)) {
    // Codes 0 (stored as levels + 1), and outputs NaN (Quantize.h).
    std::fill(out, out + k, static_cast<uint8_t>(kActivationLevels + 1));
    return nonFiniteRowScale();
  }
  const float levels = static_cast<float>(kActivationLevels);
  const float inv = quantizationFactor(levels, amax);
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i offset = _mm256_set1_epi32(kActivationLevels + 1);
  // 32 values at a time: int32 -> int16 -> uint8 (values in [1, 127]), the
  // packs interleave 128-bit lanes, a final permutation restores the order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  i = 0;
  for (; i + 32 <= k; i += 32) {
    __m256i ab = _mm256_packs_epi32(quantize8(x + i, vinv, offset),
                                    quantize8(x + i + 8, vinv, offset));
    __m256i cd = _mm256_packs_epi32(quantize8(x + i + 16, vinv, offset),
                                    quantize8(x + i + 24, vinv, offset));
    __m256i bytes =
        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), bytes);
  }
  for (; i < k; ++i)
    out[i] = static_cast<uint8_t>(static_cast<int>(std::nearbyint(x[i] * inv)) +
                                  kActivationLevels + 1);
  return amax / levels;
}

/// out[j] = act(float(acc[j] - offset·rowSums[j]) · (xScale · wScale[j]) +
/// bias[j]) over one output row; AVX2 for none/relu.
__attribute__((target("avx2,fma"))) void tfmc::runtime::dequantizeRowAvx2(
    const int32_t *acc, const int32_t *rowSums, int32_t offset, float xScale,
    const float *wScale, const float *bias, float *out, int64_t n, bool relu) {
  const __m256i voff = _mm256_set1_epi32(offset);
  const __m256 vxs = _mm256_set1_ps(xScale), zero = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i exact = _mm256_sub_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(acc + j)),
        _mm256_mullo_epi32(
            voff, _mm256_loadu_si256(
                      reinterpret_cast<const __m256i *>(rowSums + j))));
    __m256 scale = _mm256_mul_ps(vxs, _mm256_loadu_ps(wScale + j));
    __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(exact), scale),
                             _mm256_loadu_ps(bias + j));
    if (relu)
      v = _mm256_max_ps(zero, v); // a NaN (second operand) stays
    _mm256_storeu_ps(out + j, v);
  }
  for (; j < n; ++j) {
    float v = static_cast<float>(acc[j] - offset * rowSums[j]) *
                  (xScale * wScale[j]) +
              bias[j];
    out[j] = relu && v < 0 ? 0.0f : v;
  }
}
