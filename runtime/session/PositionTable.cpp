//===- PositionTable.cpp - sinusoidal encodings, filled on demand ---------===//
#include "runtime/session/PositionTable.h"

#include <algorithm>
#include <cmath>

using namespace tfmc::runtime;

PositionTable::PositionTable(int64_t maxLen, int64_t d)
    : maxLen(std::max<int64_t>(maxLen, 0)), d(std::max<int64_t>(d, 0)),
      table(static_cast<size_t>(this->maxLen * this->d)) {}

void PositionTable::ensure(int64_t rows) {
  rows = std::min(rows, maxLen);
  if (filled.load(std::memory_order_acquire) >= rows)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  int64_t from = filled.load(std::memory_order_relaxed);
  for (int64_t p = from; p < rows; ++p) {
    float *row = table.data() + p * d;
    for (int64_t i = 0; i < d; i += 2) {
      double angle = double(p) / std::pow(10000.0, double(i) / double(d));
      row[i] = static_cast<float>(std::sin(angle));
      if (i + 1 < d)
        row[i + 1] = static_cast<float>(std::cos(angle));
    }
  }
  if (rows > from)
    filled.store(rows, std::memory_order_release);
}
