//===- BFloat16Operands.cpp - rounding a layer's input to bfloat16 --------===//
#include "runtime/kernels/BFloat16Operands.h"

#include <immintrin.h>

#include <cstring>

using namespace tfmc::runtime;

namespace {

/// Eight floats as bfloat16 operands, in the low halves of 32-bit lanes
/// (bfloat16OperandOf, lane by lane).
__attribute__((target("avx2"))) inline __m256i operands8(const float *x) {
  __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x));
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  // Ties to even: add 0x7fff plus the bit that becomes the last one kept.
  __m256i rounded = _mm256_add_epi32(
      bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                             _mm256_and_si256(_mm256_srli_epi32(bits, 16),
                                              _mm256_set1_epi32(1))));
  __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x400000));
  __m256i b = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
  __m256i subnormal = _mm256_cmpeq_epi32(
      _mm256_and_si256(b, _mm256_set1_epi32(0x7f80)), _mm256_setzero_si256());
  return _mm256_blendv_epi8(b, _mm256_and_si256(b, _mm256_set1_epi32(0x8000)),
                            subnormal);
}

__attribute__((target("avx2"))) void operandRow(const float *x, int64_t k,
                                                uint16_t *out) {
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    // packus works within 128-bit lanes: a0 b0 a1 b1 -> a0 a1 b0 b1.
    __m256i both = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(operands8(x + i), operands8(x + i + 8)),
        _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), both);
  }
  for (; i < k; ++i)
    out[i] = bfloat16OperandOf(x[i]);
}

/// operands8 with 16 lanes: the same integer steps, masks for blends.
__attribute__((target("avx512f,avx512bw"))) inline __m512i
operands16(__mmask16 lanes, const float *x) {
  __m512i bits = _mm512_maskz_loadu_epi32(lanes, x);
  __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan =
      _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  __m512i rounded = _mm512_add_epi32(
      bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                             _mm512_and_si512(_mm512_srli_epi32(bits, 16),
                                              _mm512_set1_epi32(1))));
  __m512i quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x400000));
  __m512i b =
      _mm512_srli_epi32(_mm512_mask_blend_epi32(nan, rounded, quiet), 16);
  __mmask16 subnormal = _mm512_testn_epi32_mask(b, _mm512_set1_epi32(0x7f80));
  return _mm512_mask_and_epi32(b, subnormal, b, _mm512_set1_epi32(0x8000));
}

__attribute__((target("avx512f,avx512bw"))) void
operandRowAvx512(const float *x, int64_t k, uint16_t *out) {
  // 32 values at a time: packus works within 128-bit lanes (lane L: the
  // first vector's lane L, then the second's), a permutation of quadwords
  // restores the order (the values are below 2^16: nothing saturates).
  const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  int64_t i = 0;
  for (; i + 32 <= k; i += 32)
    _mm512_storeu_si512(
        out + i,
        _mm512_permutexvar_epi64(
            order, _mm512_packus_epi32(operands16(0xFFFF, x + i),
                                       operands16(0xFFFF, x + i + 16))));
  for (; i < k; i += 16) {
    const __mmask16 lanes = k - i >= 16
                                ? __mmask16(0xFFFF)
                                : static_cast<__mmask16>((1u << (k - i)) - 1);
    // The 32-bit lanes hold values below 2^16: vpmovdw keeps them.
    _mm512_mask_cvtepi32_storeu_epi16(out + i, lanes, operands16(lanes, x + i));
  }
}

bool hasAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

} // namespace

void tfmc::runtime::bfloat16Operands(const float *x, int64_t m, int64_t k,
                                     uint16_t *out, packed::Isa isa) {
  const int64_t stride = 2 * pairsOf(k);
  const bool wide = packed::avx512Vectors(isa);
  for (int64_t r = 0; r < m; ++r) {
    uint16_t *row = out + r * stride;
    if (wide)
      operandRowAvx512(x + r * k, k, row);
    else if (hasAvx2())
      operandRow(x + r * k, k, row);
    else
      for (int64_t i = 0; i < k; ++i)
        row[i] = bfloat16OperandOf(x[r * k + i]);
    if (k % 2)
      row[k] = 0;
  }
}

__attribute__((target("avx2"))) static void
widenAvx2(const uint16_t *in, int64_t count, float *out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i *>(out + i),
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
                              reinterpret_cast<const __m128i *>(in + i))),
                          16));
  for (; i < count; ++i)
    out[i] = tfmc::bfloat16ToFloat(in[i]);
}

void tfmc::runtime::widenBFloat16Operands(const uint16_t *in, int64_t count,
                                          float *out) {
  if (hasAvx2()) {
    widenAvx2(in, count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = tfmc::bfloat16ToFloat(in[i]);
}

__attribute__((target("avx2"))) static void
roundAvx2(const float *x, int64_t count, float *out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        _mm256_slli_epi32(operands8(x + i), 16));
  for (; i < count; ++i)
    out[i] = tfmc::bfloat16ToFloat(bfloat16OperandOf(x[i]));
}

void tfmc::runtime::roundToBFloat16Operands(const float *x, int64_t count,
                                            float *out) {
  if (hasAvx2()) {
    roundAvx2(x, count, out);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = tfmc::bfloat16ToFloat(bfloat16OperandOf(x[i]));
}
