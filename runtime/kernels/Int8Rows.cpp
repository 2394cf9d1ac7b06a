//===- Int8Rows.cpp - rows of an int8 layer in and out --------------------===//
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/KernelIsa.h"
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

/// quantizeRowU8Avx2 with 16 lanes: the same products x · inv, rounded
/// half to even by vcvtps2dq, so the same codes and scale.
__attribute__((target("avx512f"))) float
tfmc::runtime::quantizeRowU8Avx512(const float *x, int64_t k, uint8_t *out) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  __m512 vmax = _mm512_setzero_ps();
  __mmask16 unordered = 0;
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 lanes = k - i >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
    vmax = _mm512_max_ps(vmax, _mm512_castsi512_ps(_mm512_and_si512(
                                   _mm512_castps_si512(v), magnitude)));
    unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  const float amax = _mm512_reduce_max_ps(vmax);
  if (unordered || std::isinf(amax)) {
    std::fill(out, out + k, static_cast<uint8_t>(kActivationLevels + 1));
    return nonFiniteRowScale();
  }
  const float levels = static_cast<float>(kActivationLevels);
  const __m512 vinv = _mm512_set1_ps(quantizationFactor(levels, amax));
  const __m512i offset = _mm512_set1_epi32(kActivationLevels + 1);
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 lanes = k - i >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512i codes =
        _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(
                             _mm512_maskz_loadu_ps(lanes, x + i), vinv)),
                         offset);
    // Codes are in [1, 127]: truncating to bytes keeps them.
    _mm512_mask_cvtepi32_storeu_epi8(out + i, lanes, codes);
  }
  return amax / levels;
}

// Dequantizing: out[j] = act(fma(float(acc[j] - offset·rowSums[j]),
// xScale · wScale[j], bias[j])), one rounding for the product and the bias
// in every variant and lane, spelled out (fmadd, std::fma): left to the
// compiler, a multiply and an add were fused in some unrolled copies of the
// loop and not in others, so a column's value depended on where its block
// started (until 2026-12-06).

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
    __m256 v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), scale,
                               _mm256_loadu_ps(bias + j));
    if (relu)
      v = _mm256_max_ps(zero, v); // a NaN (second operand) stays
    _mm256_storeu_ps(out + j, v);
  }
  for (; j < n; ++j) {
    float v = std::fma(static_cast<float>(acc[j] - offset * rowSums[j]),
                       xScale * wScale[j], bias[j]);
    out[j] = relu && v < 0 ? 0.0f : v;
  }
}

__attribute__((target("avx512f"))) void tfmc::runtime::dequantizeRowAvx512(
    const int32_t *acc, const int32_t *rowSums, int32_t offset, float xScale,
    const float *wScale, const float *bias, float *out, int64_t n, bool relu) {
  const __m512i voff = _mm512_set1_epi32(offset);
  const __m512 vxs = _mm512_set1_ps(xScale), zero = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 lanes = n - j >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (n - j)) - 1);
    __m512i exact = _mm512_sub_epi32(
        _mm512_maskz_loadu_epi32(lanes, acc + j),
        _mm512_mullo_epi32(voff, _mm512_maskz_loadu_epi32(lanes, rowSums + j)));
    __m512 scale = _mm512_mul_ps(vxs, _mm512_maskz_loadu_ps(lanes, wScale + j));
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), scale,
                               _mm512_maskz_loadu_ps(lanes, bias + j));
    if (relu)
      v = _mm512_max_ps(zero, v); // a NaN (second operand) stays
    _mm512_mask_storeu_ps(out + j, lanes, v);
  }
}

float tfmc::runtime::quantizeRowU8(const float *x, int64_t k, uint8_t *out) {
  static const bool wide = packed::avx512Vectors(packed::preferredIsa());
  return wide ? quantizeRowU8Avx512(x, k, out) : quantizeRowU8Avx2(x, k, out);
}

void tfmc::runtime::dequantizeRow(const int32_t *acc, const int32_t *rowSums,
                                  int32_t offset, float xScale,
                                  const float *wScale, const float *bias,
                                  float *out, int64_t n, bool relu) {
  static const bool wide = packed::avx512Vectors(packed::preferredIsa());
  (wide ? dequantizeRowAvx512 : dequantizeRowAvx2)(acc, rowSums, offset, xScale,
                                                   wScale, bias, out, n, relu);
}
