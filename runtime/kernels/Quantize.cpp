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
    float inv = quantizationFactor(127.0f, amax);
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
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    nan |= std::isnan(x[i]);
  }
  if (nan || std::isinf(amax)) {
    std::fill(q, q + n, int8_t(0));
    return nonFiniteRowScale();
  }
  float lv = static_cast<float>(levels);
  float inv = quantizationFactor(lv, amax);
  for (int64_t i = 0; i < n; ++i)
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -lv, lv));
  return amax / lv;
}
