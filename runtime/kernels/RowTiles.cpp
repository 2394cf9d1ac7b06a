//===- RowTiles.cpp - row tiles of a packed layer and their k steps -------===//
#include "runtime/kernels/RowTiles.h"

#include <immintrin.h>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

/// Writes to `out` the steps c < k at which one of `rows` rows (k apart)
/// is non-zero or NaN, in order; returns their count, or -1 as soon as it
/// exceeds `limit`. `out` has room for k steps.
__attribute__((target("avx2"))) int64_t
nonZeroSteps(const float *x, int rows, int64_t k, int64_t limit, int32_t *out) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t count = 0, c = 0;
  for (; c + 8 <= k; c += 8) {
    // Not-equal, unordered: NaN counts as non-zero.
    __m256 any = _mm256_cmp_ps(_mm256_loadu_ps(x + c), zero, _CMP_NEQ_UQ);
    for (int r = 1; r < rows; ++r)
      any = _mm256_or_ps(any, _mm256_cmp_ps(_mm256_loadu_ps(x + r * k + c),
                                            zero, _CMP_NEQ_UQ));
    auto bits = static_cast<unsigned>(_mm256_movemask_ps(any));
    while (bits != 0) {
      out[count++] = static_cast<int32_t>(c + __builtin_ctz(bits));
      bits &= bits - 1;
    }
    if (count > limit)
      return -1;
  }
  for (; c < k; ++c) {
    bool nonZero = false;
    for (int r = 0; r < rows; ++r)
      nonZero |= !(x[r * k + c] == 0.0f);
    if (nonZero)
      out[count++] = static_cast<int32_t>(c);
  }
  return count > limit ? -1 : count;
}

/// Whether at least a sixteenth of the first row (k values) is zero.
__attribute__((target("avx2"))) bool firstRowHasZeros(const float *x,
                                                      int64_t k) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t zeros = 0, c = 0;
  for (; c + 8 <= k; c += 8)
    zeros += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(
        _mm256_cmp_ps(_mm256_loadu_ps(x + c), zero, _CMP_EQ_OQ))));
  for (; c < k; ++c)
    zeros += x[c] == 0.0f;
  return zeros * 16 >= k;
}

} // namespace

void packed::planRowTiles(const float *x, int64_t m, int64_t k, bool skipZeros,
                          RowTiles &plan, int maxRows) {
  plan.tiles.clear();
  for (int64_t r = 0; r < m;) {
    int rows = m - r >= maxRows ? maxRows
               : m - r >= 4     ? 4
               : m - r >= 2     ? 2
                                : 1;
    plan.tiles.push_back({r, rows, 0, -1});
    r += rows;
  }
  if (!skipZeros || m == 0 || k == 0 || !firstRowHasZeros(x, k))
    return;
  if (plan.steps.size() < plan.tiles.size() * size_t(k))
    plan.steps.resize(plan.tiles.size() * size_t(k));
  int64_t used = 0, limit = k - k / 8;
  for (RowTile &t : plan.tiles) {
    t.first = used;
    t.count =
        nonZeroSteps(x + t.row * k, t.rows, k, limit, plan.steps.data() + used);
    // The rows of one layer are alike: after a tile that keeps (nearly)
    // all of its steps, the rest keep all of theirs without a scan.
    if (t.count < 0)
      break;
    used += t.count;
  }
}

bool packed::worthSkipping(const float *x, int64_t m, int64_t k) {
  if (m == 0 || k == 0 || !firstRowHasZeros(x, k))
    return false;
  // The first tile's steps, into storage kept per thread.
  thread_local std::vector<int32_t> steps;
  if (steps.size() < size_t(k))
    steps.resize(k);
  int rows = m >= 6 ? 6 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
  return nonZeroSteps(x, rows, k, k - k / 8, steps.data()) >= 0;
}
