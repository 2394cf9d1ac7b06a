//===- PanelPacking.cpp - weights into the packed kernels' panels ---------===//
//
// PackedGemm.h's layouts: float32, IEEE-half and bfloat16 panels of 16
// output columns, k steps (or pairs of k) one after another; int8 panels of
// 16 columns × groups of 4 k with their rows' sums. A float32 weight whose
// every value is a half exactly (a model stored as float16 and widened) is
// packed as halves: the same products from half the bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemm.h"

#include "frontends/model/Float16.h"
#include "runtime/kernels/BFloat16Operands.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

/// Panels of the n rows of k values that rowOf(r) points at.
template <typename T, typename RowOf>
void packRows(int64_t n, int64_t k, tfmc::pages::Vector<T> &out, RowOf rowOf) {
  out.assign(panelCount(n) * kPanel * k, T(0));
  for (int64_t row = 0; row < n; ++row) {
    const T *values = rowOf(row);
    T *panel = out.data() + (row / kPanel) * kPanel * k;
    int64_t j = row % kPanel;
    for (int64_t c = 0; c < k; ++c)
      panel[c * kPanel + j] = values[c];
  }
}

template <typename T>
void packInto(const T *w, int64_t n, int64_t k, tfmc::pages::Vector<T> &out) {
  packRows(n, k, out, [&](int64_t row) { return w + row * k; });
}

} // namespace

PackedWeight packed::packInt8(const int8_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.int8 = true;
  p.kPadded = (k + 3) / 4 * 4;
  p.i8.assign(panelCount(n) * kPanel * p.kPadded, 0);
  p.rowSums.assign(n, 0);
  // Row `row` of w is column j of its panel: its group of 4 values of k
  // number g is the 4 bytes at g · 64 + j · 4 (a k not a multiple of 4
  // leaves the last group's other bytes zero).
  const int64_t whole = k / 4;
  for (int64_t row = 0; row < n; ++row) {
    int8_t *column =
        p.i8.data() + (row / kPanel) * kPanel * p.kPadded + (row % kPanel) * 4;
    const int8_t *from = w + row * k;
    for (int64_t g = 0; g < whole; ++g)
      std::memcpy(column + g * 64, from + g * 4, 4);
    for (int64_t c = whole * 4; c < k; ++c)
      column[whole * 64 + c % 4] = from[c];
    int32_t sum = 0;
    for (int64_t c = 0; c < k; ++c)
      sum += from[c];
    p.rowSums[row] = sum;
  }
  return p;
}

// Exact halves, by integer arithmetic on the float32 bits (whatever the
// floating-point modes; infinities and NaNs excluded in every lane). A
// float32 with biased exponent e is a half exactly when it is ±0, or e is
// in [103, 142] (2^-24 .. 2^15) and the low `126 - e` bits (at least 13) of
// its 24-bit significand are zero; its half is then
// (e - 112) << 10 | mantissa >> 13 (a normal half, e >= 113) or
// significand >> (126 - e) (a subnormal one), with the sign on top.

/// Per 32-bit lane of `bits`: all ones where the float is a half exactly.
__attribute__((target("avx2"))) static inline __m256i
exactHalfLanes(__m256i bits) {
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i e = _mm256_srli_epi32(magnitude, 23);
  __m256i shift = _mm256_max_epi32(_mm256_sub_epi32(_mm256_set1_epi32(126), e),
                                   _mm256_set1_epi32(13));
  __m256i low = _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), shift),
                                 _mm256_set1_epi32(1));
  __m256i significand =
      _mm256_or_si256(_mm256_and_si256(magnitude, _mm256_set1_epi32(0x7fffff)),
                      _mm256_set1_epi32(0x800000));
  __m256i zero = _mm256_setzero_si256();
  __m256i dropped =
      _mm256_cmpeq_epi32(_mm256_and_si256(significand, low), zero);
  __m256i inRange =
      _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(103), e),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(143), e));
  return _mm256_or_si256(_mm256_cmpeq_epi32(magnitude, zero),
                         _mm256_and_si256(inRange, dropped));
}

/// The halves of eight exact halves' bits (exactHalfLanes all ones), as
/// 32-bit lanes.
__attribute__((target("avx2"))) static inline __m256i halfLanes(__m256i bits) {
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i e = _mm256_srli_epi32(magnitude, 23);
  __m256i mantissa = _mm256_and_si256(magnitude, _mm256_set1_epi32(0x7fffff));
  __m256i normal = _mm256_or_si256(
      _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(112)), 10),
      _mm256_srli_epi32(mantissa, 13));
  __m256i subnormal =
      _mm256_srlv_epi32(_mm256_or_si256(mantissa, _mm256_set1_epi32(0x800000)),
                        _mm256_sub_epi32(_mm256_set1_epi32(126), e));
  __m256i isNormal = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(112));
  __m256i half = _mm256_blendv_epi8(subnormal, normal, isNormal);
  // ±0: e = 0 gives a subnormal shift of 126, which shifts everything out.
  __m256i sign = _mm256_srli_epi32(
      _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u))), 16);
  return _mm256_or_si256(half, sign);
}

/// Whether every one of the `count` floats at `w` is an IEEE half exactly
/// (widening its half gives back the same bits; a NaN or an infinity never
/// counts). Stops at the first that is not.
__attribute__((target("avx2"))) static bool allExactHalves(const float *w,
                                                           int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i));
    if (_mm256_movemask_epi8(exactHalfLanes(bits)) != -1)
      return false;
  }
  for (; i < count; ++i) {
    float back = tfmc::halfToFloat(tfmc::floatToHalf(w[i]));
    if (!std::isfinite(w[i]) || std::memcmp(&back, w + i, sizeof(float)) != 0)
      return false;
  }
  return true;
}

/// The halves of `count` floats that are all halves exactly.
__attribute__((target("avx2"))) static void
halvesOf(const float *w, int64_t count, uint16_t *out) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256i a =
        halfLanes(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i)));
    __m256i b = halfLanes(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i + 8)));
    // packus works within 128-bit lanes: a0 b0 a1 b1 -> a0 a1 b0 b1.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b),
                                              _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), packed);
  }
  for (; i < count; ++i)
    out[i] = tfmc::floatToHalf(w[i]);
}

bool packed::allHalves(const float *w, int64_t count) {
  return availableOnThisCpu() && allExactHalves(w, count);
}

PackedWeight packed::pack(const float *w, int64_t n, int64_t k,
                          bool exactAsHalves) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  if (exactAsHalves && allHalves(w, n * k)) {
    p.half = p.exactHalves = true;
    std::vector<uint16_t> halves(k);
    packRows(n, k, p.f16, [&](int64_t row) {
      halvesOf(w + row * k, k, halves.data());
      return static_cast<const uint16_t *>(halves.data());
    });
    return p;
  }
  p.notHalves = exactAsHalves;
  packInto(w, n, k, p.f32);
  return p;
}

PackedWeight packed::packHalves(const uint16_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.half = true;
  packInto(w, n, k, p.f16);
  return p;
}

PackedWeight packed::packBFloat16(const uint16_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.half = p.brain = true;
  // Panel p, pair i: W[16p + j, 2i + e] at [i · 32 + j · 2 + e]; an odd k's
  // last pair ends in a zero.
  const int64_t pairs = pairsOf(k);
  p.f16.assign(panelCount(n) * kPanel * 2 * pairs, 0);
  for (int64_t row = 0; row < n; ++row) {
    uint16_t *column =
        p.f16.data() + (row / kPanel) * kPanel * 2 * pairs + (row % kPanel) * 2;
    const uint16_t *from = w + row * k;
    for (int64_t i = 0; 2 * i + 1 < k; ++i) {
      column[i * 2 * kPanel] = bfloat16Operand(from[2 * i]);
      column[i * 2 * kPanel + 1] = bfloat16Operand(from[2 * i + 1]);
    }
    if (k % 2)
      column[(k / 2) * 2 * kPanel] = bfloat16Operand(from[k - 1]);
  }
  return p;
}

const char *PackedWeight::panels() const {
  if (int8)
    return reinterpret_cast<const char *>(i8.data());
  if (half)
    return reinterpret_cast<const char *>(f16.data());
  return reinterpret_cast<const char *>(f32.data());
}
