//===- ArgmaxScan.cpp - greedy search's choice over blocks of logits ------===//
#include "runtime/kernels/ArgmaxScan.h"

#include <immintrin.h>

#include <algorithm>

using namespace tfmc::runtime;

bool ScanExclusions::excludesAnyIn(int64_t first, int64_t end) const {
  if (!allowEos && eos >= first && eos < end)
    return true;
  for (int64_t i = 0; i < neverCount; ++i)
    if (never[i] >= first && never[i] < end)
      return true;
  for (int64_t i = 0; i < bannedCount; ++i)
    if (banned[i] >= first && banned[i] < end)
      return true;
  return false;
}

void ScanExclusions::excludedIn(int64_t first, int64_t end,
                                std::vector<int64_t> &ids) const {
  ids.clear();
  auto take = [&](int64_t id) {
    if (id >= first && id < end)
      ids.push_back(id);
  };
  if (!allowEos)
    take(eos);
  for (int64_t i = 0; i < neverCount; ++i)
    take(never[i]);
  for (int64_t i = 0; i < bannedCount; ++i)
    take(banned[i]);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

namespace {

/// Values per vector test: eight registers of eight.
constexpr int64_t kChunk = 64;

/// Whether one of v[0..64) is greater than `value` (ordered: NaNs are
/// not). Eight independent maxima, then one horizontal step.
__attribute__((target("avx2"))) bool anyGreater64(const float *v,
                                                  float value) {
  // max_ps(x, m) gives m when x is NaN: every lane starts from -inf, so
  // NaNs drop out and the maxima below never hold one.
  const __m256 lowest = _mm256_set1_ps(-__builtin_inff());
  __m256 m[8];
  for (int j = 0; j < 8; ++j)
    m[j] = _mm256_max_ps(_mm256_loadu_ps(v + 8 * j), lowest);
  for (int j = 0; j < 4; ++j)
    m[j] = _mm256_max_ps(m[j + 4], m[j]);
  m[0] = _mm256_max_ps(m[2], m[0]);
  m[1] = _mm256_max_ps(m[3], m[1]);
  m[0] = _mm256_max_ps(m[1], m[0]);
  __m256 greater = _mm256_cmp_ps(m[0], _mm256_set1_ps(value), _CMP_GT_OQ);
  return _mm256_movemask_ps(greater) != 0;
}

bool haveAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

} // namespace

void ArgmaxScan::add(const float *values, int64_t first, int64_t count,
                     const ScanExclusions &excluded) {
  int64_t i = 0;
  // Element by element until an allowed id is taken.
  for (; i < count && best < 0; ++i)
    if (!excluded.excludes(first + i)) {
      best = static_cast<int32_t>(first + i);
      value = values[i];
    }
  // A NaN taken first is never replaced.
  if (value != value)
    return;
  bool vector = haveAvx2();
  while (i < count) {
    int64_t end = std::min(count, i + kChunk);
    // A whole chunk of allowed ids with nothing greater: nothing replaces.
    if (vector && end - i == kChunk &&
        !excluded.excludesAnyIn(first + i, first + end) &&
        !anyGreater64(values + i, value)) {
      i = end;
      continue;
    }
    for (; i < end; ++i)
      if (values[i] > value && !excluded.excludes(first + i)) {
        best = static_cast<int32_t>(first + i);
        value = values[i];
      }
  }
}
