//===- Int8Rows.cpp - rows of an int8 layer in and out --------------------===//
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/KernelIsa.h"
#include "runtime/kernels/Quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace tfmc::runtime;

/// round-half-even(p[0..8] · inv) + offset as int32.
static __attribute__((target("avx2"))) inline __m256i
quantize8(const float *p, __m256 inv, __m256i offset) {
  return _mm256_add_epi32(
      _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), inv)), offset);
}

/// max |x[i]| as largestMagnitudeAvx512 finds it, 8 lanes a vector.
__attribute__((target("avx2"))) float
tfmc::runtime::largestMagnitudeAvx2(const float *x, int64_t k) {
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  auto bitsAt = [ x, magnitude ](int64_t at) __attribute__((target("avx2"))) {
    return _mm256_and_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + at)),
        magnitude);
  };
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    m0 = _mm256_max_epu32(m0, bitsAt(i));
    m1 = _mm256_max_epu32(m1, bitsAt(i + 8));
    m2 = _mm256_max_epu32(m2, bitsAt(i + 16));
    m3 = _mm256_max_epu32(m3, bitsAt(i + 24));
  }
  for (; i + 8 <= k; i += 8)
    m0 = _mm256_max_epu32(m0, bitsAt(i));
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(
      reinterpret_cast<__m256i *>(lanes),
      _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
  uint32_t largest = 0;
  for (uint32_t l : lanes)
    largest = std::max(largest, l);
  for (; i < k; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof(bits));
    largest = std::max(largest, bits & 0x7FFFFFFFu);
  }
  if (largest > 0x7F800000u)
    return std::numeric_limits<float>::quiet_NaN();
  float amax;
  std::memcpy(&amax, &largest, sizeof(amax));
  return amax;
}

/// Quantizes one input row to [-levels, levels] (as quantizeActivationRow)
/// and stores q + levels + 1 as unsigned bytes; returns the row's scale.
/// AVX2: vcvtps2dq rounds half to even like the scalar and loop kernels.
__attribute__((target("avx2"))) float
tfmc::runtime::quantizeRowU8Avx2(const float *x, int64_t k, uint8_t *out) {
  const float amax = largestMagnitudeAvx2(x, k);
  if (!std::isfinite(amax)) {
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
  int64_t i = 0;
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

/// max |x[i]| over k floats, NaN if any is a NaN: the magnitudes' bits
/// compared as unsigned integers (the order of non-negative floats, with
/// infinity above every number and NaNs above infinity), four vectors at a
/// time so that the maxima do not wait for one another.
__attribute__((target("avx512f"))) float
tfmc::runtime::largestMagnitudeAvx512(const float *x, int64_t k) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    m0 = _mm512_max_epu32(
        m0, _mm512_and_si512(_mm512_loadu_si512(x + i), magnitude));
    m1 = _mm512_max_epu32(
        m1, _mm512_and_si512(_mm512_loadu_si512(x + i + 16), magnitude));
    m2 = _mm512_max_epu32(
        m2, _mm512_and_si512(_mm512_loadu_si512(x + i + 32), magnitude));
    m3 = _mm512_max_epu32(
        m3, _mm512_and_si512(_mm512_loadu_si512(x + i + 48), magnitude));
  }
  for (; i < k; i += 16) {
    const __mmask16 lanes = k - i >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (k - i)) - 1);
    m0 = _mm512_max_epu32(
        m0,
        _mm512_and_si512(_mm512_maskz_loadu_epi32(lanes, x + i), magnitude));
  }
  uint32_t largest = _mm512_reduce_max_epu32(
      _mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3)));
  if (largest > 0x7F800000u)
    return std::numeric_limits<float>::quiet_NaN();
  float amax;
  std::memcpy(&amax, &largest, sizeof(amax));
  return amax;
}

/// quantizeRowU8Avx2 with 16 lanes: the same products x · inv, rounded
/// half to even by vcvtps2dq, so the same codes and scale.
__attribute__((target("avx512f,avx512bw"))) float
tfmc::runtime::quantizeRowU8Avx512(const float *x, int64_t k, uint8_t *out) {
  const float amax = largestMagnitudeAvx512(x, k);
  if (!std::isfinite(amax)) {
    // Codes 0 (stored as levels + 1), and outputs NaN (Quantize.h).
    std::fill(out, out + k, static_cast<uint8_t>(kActivationLevels + 1));
    return nonFiniteRowScale();
  }
  const float levels = static_cast<float>(kActivationLevels);
  const __m512 vinv = _mm512_set1_ps(quantizationFactor(levels, amax));
  const __m512i offset = _mm512_set1_epi32(kActivationLevels + 1);
  // 64 values at a time: int32 -> int16 -> uint8 (codes in [1, 127]); the
  // packs interleave 128-bit lanes (lane L of the result holds the four
  // vectors' lanes L), a permutation of dwords restores the order.
  const __m512i order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    __m512i a = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv));
    __m512i b =
        _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), vinv));
    __m512i c =
        _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 32), vinv));
    __m512i d =
        _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i + 48), vinv));
    __m512i bytes =
        _mm512_packus_epi16(_mm512_packs_epi32(_mm512_add_epi32(a, offset),
                                               _mm512_add_epi32(b, offset)),
                            _mm512_packs_epi32(_mm512_add_epi32(c, offset),
                                               _mm512_add_epi32(d, offset)));
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi32(order, bytes));
  }
  for (; i < k; i += 16) {
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
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 lanes = n - j >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(
        out + j, lanes,
        dequantizedLanes(_mm512_maskz_loadu_epi32(lanes, acc + j),
                         _mm512_mullo_epi32(voff, _mm512_maskz_loadu_epi32(
                                                      lanes, rowSums + j)),
                         xScale, _mm512_maskz_loadu_ps(lanes, wScale + j),
                         _mm512_maskz_loadu_ps(lanes, bias + j), relu));
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
