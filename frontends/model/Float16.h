//===- Float16.h - IEEE binary16 <-> binary32 -------------------*- C++ -*-===//
//
// Header-only so that the safetensors reader (F16 tensors) and the
// runtime's kernels and weight store (float16 compute) share one
// definition without a library dependency between them.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_FLOAT16_H
#define FRONTENDS_MODEL_FLOAT16_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tfmc {

/// The largest finite binary16 value.
constexpr float kHalfMax = 65504.0f;

/// binary16 -> binary32, exact for every input (subnormals become normal
/// floats; infinities and NaNs keep their sign and payload).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exactly representable in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// binary32 -> binary16 bits, rounding to nearest even; beyond the range
/// gives infinity, NaN stays (a quiet) NaN.
inline uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t exponent = (bits >> 23) & 0xffu, mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) // infinity or NaN (kept quiet)
    return sign | 0x7c00u | (mantissa ? 0x200u : 0u);
  int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31)
    return sign | 0x7c00u;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-one mantissa into place.
    if (e < -10)
      return sign;
    uint32_t m = mantissa | 0x800000u;
    int shift = 14 - e;
    uint32_t half = m >> shift, rest = m & ((1u << shift) - 1),
             midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, up to infinity: still correct
  return sign | static_cast<uint16_t>(half);
}

} // namespace tfmc

#endif // FRONTENDS_MODEL_FLOAT16_H
