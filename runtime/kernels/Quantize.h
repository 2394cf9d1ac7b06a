//===- Quantize.h - int8 and float16 conversions of weights/activations -*- C++ -*-===//
//
// The numeric rules of tfmc's reduced-precision compute types, shared by
// the weight store (once, at load) and the library kernels (per call):
// * int8 weights: symmetric per output row, scale = max|w| / 127,
//   q = round-half-even(w / scale) in [-127, 127]; an all-zero row has scale 0.
// * int8 activations: symmetric per row to [-levels, levels] with levels =
//   kActivationLevels (63, see KernelAbi.h), computed as
//   q = round-half-even(x · (levels / max|x|)), scale = max|x| / levels.
// * float16: IEEE binary16 (frontends/model/Float16.h), round to nearest
//   even; values beyond its range are refused by the caller, never turned
//   into infinities silently.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_QUANTIZE_H
#define RUNTIME_KERNELS_QUANTIZE_H

#include <cstdint>
#include <limits>
#include <vector>

namespace tfmc::runtime {

/// What a row is multiplied by before rounding to its codes: levels / max|x|,
/// or 0 (every code 0) where that is not a finite number: an all-zero row,
/// and rows so small (max|x| below about levels / FLT_MAX, ~1.9e-37 for
/// activations) that levels / max|x| would be infinite and 0 · inf a NaN.
/// The loops path's int8 kernel uses the same rule.
inline float quantizationFactor(float levels, float amax) {
  float inv = levels / amax;
  return amax > 0 && inv < std::numeric_limits<float>::infinity() ? inv : 0.0f;
}

/// A [rows, cols] matrix quantized per row: W[r, c] ≈ scales[r] · values[r, c].
struct QuantizedMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> values;
  std::vector<float> scales;
};

/// Quantizes each row of w (finite values) by the int8 weight rule above,
/// with AVX-512 or AVX2 where the CPU has them.
QuantizedMatrix quantizeRows(const float *w, int64_t rows, int64_t cols);
/// The same in plain scalar code, one value at a time (what the vector
/// variants are tested against).
QuantizedMatrix quantizeRowsScalar(const float *w, int64_t rows, int64_t cols);
/// The AVX2 and the AVX-512 variant quantizeRows picks from (each needs its
/// instruction set), so that each is tested wherever it runs.
QuantizedMatrix quantizeRowsAvx2(const float *w, int64_t rows, int64_t cols);
QuantizedMatrix quantizeRowsAvx512(const float *w, int64_t rows, int64_t cols);

/// `count` floats rounded to float16 (floatToHalf's bits: nearest, ties to
/// even, subnormals kept; values beyond the range become infinities, so
/// callers refuse them first), with F16C where the CPU has it.
void roundToHalves(const float *x, int64_t count, uint16_t *out);

/// The scale of an activation row that holds a NaN or an infinity: its
/// codes are all 0 and its scale NaN, so every output of the row is NaN, as
/// float32 arithmetic would make it (a model whose activations overflowed
/// is then said to be so: its logits are not numbers), rather than finite
/// values from codes of nothing. The loops path's int8 kernel does the same.
inline float nonFiniteRowScale() {
  return std::numeric_limits<float>::quiet_NaN();
}

/// Quantizes one activation row of `n` values to [-levels, levels] into
/// `q`; returns the row's scale (0 for an all-zero row; a row with a NaN
/// or an infinity: nonFiniteRowScale()).
float quantizeActivationRow(const float *x, int64_t n, int levels, int8_t *q);

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_QUANTIZE_H
