//===- BFloat16Operands.h - what a bfloat16 layer multiplies ----*- C++ -*-===//
//
// A layer with bfloat16 weights (--compute-type bfloat16) multiplies
// bfloat16 by bfloat16 and accumulates in float32, as avx512_bf16's
// vdpbf16ps (and AMX) do: its input is rounded to bfloat16 first (to
// nearest, ties to even; a NaN stays a NaN), and an operand below
// bfloat16's normal range counts as a zero of its sign, as vdpbf16ps reads
// its operands (inputs and weights alike). The products of two bfloat16
// values are exact in float32, so the packed kernels give the same sums on
// every instruction set: vdpbf16ps adds each pair (k = 2i, 2i + 1) as an
// FMA of the odd k followed by one of the even k (measured on an AMD EPYC
// Zen 5, 3.2 million sums: no difference), which is what the AVX2 kernels
// do in float32 (PackedGemm.h). They can differ only where a partial sum
// falls below float32's normal range, which vdpbf16ps flushes to zero.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_BFLOAT16OPERANDS_H
#define RUNTIME_KERNELS_BFLOAT16OPERANDS_H

#include "frontends/model/BFloat16.h"
#include "runtime/kernels/KernelIsa.h"

#include <cstdint>

namespace tfmc::runtime {

/// `b` as an operand: a subnormal (exponent bits zero) becomes a zero of
/// its sign.
inline uint16_t bfloat16Operand(uint16_t b) {
  return (b & 0x7f80u) == 0 ? static_cast<uint16_t>(b & 0x8000u) : b;
}

/// `x` rounded to a bfloat16 operand.
inline uint16_t bfloat16OperandOf(float x) {
  return bfloat16Operand(floatToBFloat16(x));
}

/// Rows [m, k] of x (row-major) rounded to bfloat16 operands, into rows of
/// `pairsOf(k)` pairs: out[r · 2 · pairs + i] for i < k, the odd k's slot of
/// the last pair zero where k is odd. A pair read as one 32-bit word holds
/// its even k in the low half, as vdpbf16ps takes it. With the vectors of
/// `isa` (AVX-512 or AVX2; a plain loop without AVX2), the same bits.
void bfloat16Operands(const float *x, int64_t m, int64_t k, uint16_t *out,
                      packed::Isa isa = packed::preferredIsa());

/// Pairs of k in a bfloat16 layer's rows (k rounded up to even, halved).
constexpr int64_t pairsOf(int64_t k) { return (k + 1) / 2; }

/// `count` bfloat16 values widened to floats (exactly).
void widenBFloat16Operands(const uint16_t *in, int64_t count, float *out);

/// `count` floats rounded to bfloat16 operands and widened back: the
/// values a bfloat16 layer multiplies.
void roundToBFloat16Operands(const float *x, int64_t count, float *out);

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_BFLOAT16OPERANDS_H
