//===- Int8Rows.h - rows of an int8 layer in and out -----------*- C++ -*-===//
//
// Internal to runtime/kernels: how tfm_rt_linear_i8 quantizes its input
// rows for the int8 products and turns the products back into outputs,
// shared with the output projection fused with greedy's choice
// (FusedProjection.cpp), which must compute the very same values.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_INT8ROWS_H
#define RUNTIME_KERNELS_INT8ROWS_H

#include <immintrin.h>

#include <cstdint>

namespace tfmc::runtime {

/// Quantizes one input row to [-levels, levels] (as quantizeActivationRow)
/// and stores q + levels + 1 as unsigned bytes; returns the row's scale.
/// Needs AVX2 (vcvtps2dq rounds half to even like the scalar and loop
/// kernels).
float quantizeRowU8Avx2(const float *x, int64_t k, uint8_t *out);
/// max |x[i]| over k floats, or NaN where one is a NaN. Needs AVX2 /
/// AVX-512.
float largestMagnitudeAvx2(const float *x, int64_t k);
float largestMagnitudeAvx512(const float *x, int64_t k);
/// The same with AVX-512 (the same codes and scale).
float quantizeRowU8Avx512(const float *x, int64_t k, uint8_t *out);
/// The variant of preferredIsa()'s vectors (AVX-512 or AVX2; needs AVX2).
float quantizeRowU8(const float *x, int64_t k, uint8_t *out);

/// out[j] = act(fma(float(acc[j] - offset·rowSums[j]), xScale · wScale[j],
/// bias[j])) over n outputs of one row, act none or (`relu`) ReLU. Needs
/// AVX2 and FMA. Each output depends on its own column only, computed the
/// same way in every lane and the scalar tail, so any block of columns gets
/// the values of the whole row, and the variants agree bit for bit.
void dequantizeRowAvx2(const int32_t *acc, const int32_t *rowSums,
                       int32_t offset, float xScale, const float *wScale,
                       const float *bias, float *out, int64_t n, bool relu);
/// The same with AVX-512.
void dequantizeRowAvx512(const int32_t *acc, const int32_t *rowSums,
                         int32_t offset, float xScale, const float *wScale,
                         const float *bias, float *out, int64_t n, bool relu);
/// 16 outputs of one row as every dequantizer makes them: `sums` minus
/// `offsets` (offset · rowSums, lane by lane), to float, times xScale ·
/// wScale, plus bias in one rounding, then the ReLU (max(0, v): a NaN
/// stays). dequantizeRowAvx512 and the AVX-512 and AMX kernels that turn
/// their sums into outputs (PackedGemm.h, int8Linear) all call this, so
/// they agree bit for bit.
__attribute__((target("avx512f"))) inline __m512
dequantizedLanes(__m512i sums, __m512i offsets, float xScale, __m512 wScale,
                 __m512 bias, bool relu) {
  __m512 v =
      _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sums, offsets)),
                      _mm512_mul_ps(_mm512_set1_ps(xScale), wScale), bias);
  return relu ? _mm512_max_ps(_mm512_setzero_ps(), v) : v;
}
/// The variant of preferredIsa()'s vectors (AVX-512 or AVX2; needs AVX2).
void dequantizeRow(const int32_t *acc, const int32_t *rowSums, int32_t offset,
                   float xScale, const float *wScale, const float *bias,
                   float *out, int64_t n, bool relu);

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_INT8ROWS_H
