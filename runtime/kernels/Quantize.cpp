//===- Quantize.cpp - int8 and float16 conversions of weights/activations -===//
#include "runtime/kernels/Quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tfmc::runtime;

QuantizedMatrix tfmc::runtime::quantizeRows(const float *w, int64_t rows,
                                            int64_t cols) {
  QuantizedMatrix q;
  q.rows = rows;
  q.cols = cols;
  q.values.resize(rows * cols);
  q.scales.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = w + r * cols;
    float amax = 0;
    for (int64_t c = 0; c < cols; ++c)
      amax = std::max(amax, std::fabs(row[c]));
    q.scales[r] = amax / 127.0f;
    float inv = amax > 0 ? 127.0f / amax : 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      float v = std::nearbyint(row[c] * inv);
      q.values[r * cols + c] =
          static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
  return q;
}

float tfmc::runtime::quantizeActivationRow(const float *x, int64_t n,
                                           int levels, int8_t *q) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  float lv = static_cast<float>(levels);
  float inv = amax > 0 ? lv / amax : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -lv, lv));
  return amax / lv;
}

uint16_t tfmc::runtime::floatToHalf(float f) {
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

float tfmc::runtime::halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu,
           mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400u));
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
             ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
