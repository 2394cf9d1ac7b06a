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

#include <cstdint>

namespace tfmc::runtime {

/// Quantizes one input row to [-levels, levels] (as quantizeActivationRow)
/// and stores q + levels + 1 as unsigned bytes; returns the row's scale.
/// Needs AVX2 (vcvtps2dq rounds half to even like the scalar and loop
/// kernels).
float quantizeRowU8Avx2(const float *x, int64_t k, uint8_t *out);

/// out[j] = act(float(acc[j] - offset·rowSums[j]) · (xScale · wScale[j]) +
/// bias[j]) over n outputs of one row, act none or (`relu`) ReLU. Needs
/// AVX2 and FMA. Each output depends on its own column only (eight at a
/// time from the first, the last n % 8 one by one), so a block of columns
/// starting at a multiple of 8 gets the values of the whole row.
void dequantizeRowAvx2(const int32_t *acc, const int32_t *rowSums,
                       int32_t offset, float xScale, const float *wScale,
                       const float *bias, float *out, int64_t n, bool relu);

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_INT8ROWS_H
