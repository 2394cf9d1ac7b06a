//===- RowTiles.cpp - row tiles of a packed layer and their k steps -------===//
#include "runtime/kernels/RowTiles.h"

#include <immintrin.h>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

/// The zero test of one kind of step: a float (±0 is zero, NaN is not), or
/// a pair of bfloat16 operands in a 32-bit word (both halves ±0), tested
/// on the bits, so that a word whose float reading is subnormal counts as
/// non-zero even where the floating-point mode treats subnormals as zero
/// (DAZ, which programs built with -ffast-math set).
template <bool Pairs> struct Steps;

template <> struct Steps<false> {
  using Value = float;
  /// All ones in the lanes of the 8 values at `p` that are not zero.
  __attribute__((target("avx2"))) static __m256i nonZero(const float *p) {
    // Not-equal, unordered: NaN counts as non-zero.
    return _mm256_castps_si256(
        _mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_setzero_ps(), _CMP_NEQ_UQ));
  }
  static bool nonZero(float v) { return !(v == 0.0f); }
};

template <> struct Steps<true> {
  using Value = uint32_t;
  __attribute__((target("avx2"))) static __m256i nonZero(const uint32_t *p) {
    __m256i magnitudes = _mm256_and_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)),
        _mm256_set1_epi32(0x7fff7fff));
    return _mm256_xor_si256(
        _mm256_cmpeq_epi32(magnitudes, _mm256_setzero_si256()),
        _mm256_set1_epi32(-1));
  }
  static bool nonZero(uint32_t v) { return (v & 0x7fff7fffu) != 0; }
};

/// Writes to `out` the steps c < k at which one of `rows` rows (k apart)
/// is non-zero (or NaN), in order; returns their count, or -1 as soon as it
/// exceeds `limit`. `out` has room for k steps.
template <bool Pairs>
__attribute__((target("avx2"))) int64_t
nonZeroSteps(const typename Steps<Pairs>::Value *x, int rows, int64_t k,
             int64_t limit, int32_t *out) {
  int64_t count = 0, c = 0;
  for (; c + 8 <= k; c += 8) {
    __m256i any = Steps<Pairs>::nonZero(x + c);
    for (int r = 1; r < rows; ++r)
      any = _mm256_or_si256(any, Steps<Pairs>::nonZero(x + r * k + c));
    auto bits =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(any)));
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
      nonZero |= Steps<Pairs>::nonZero(x[r * k + c]);
    if (nonZero)
      out[count++] = static_cast<int32_t>(c);
  }
  return count > limit ? -1 : count;
}

/// Whether at least a sixteenth of the first row (k steps) is zero.
template <bool Pairs>
__attribute__((target("avx2"))) bool
firstRowHasZeros(const typename Steps<Pairs>::Value *x, int64_t k) {
  int64_t nonZeros = 0, c = 0;
  for (; c + 8 <= k; c += 8)
    nonZeros += __builtin_popcount(static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(Steps<Pairs>::nonZero(x + c)))));
  for (; c < k; ++c)
    nonZeros += Steps<Pairs>::nonZero(x[c]);
  return (k - nonZeros) * 16 >= k;
}

template <bool Pairs>
void plan(const typename Steps<Pairs>::Value *x, int64_t m, int64_t k,
          bool skipZeros, RowTiles &plan, int maxRows) {
  plan.tiles.clear();
  for (int64_t r = 0; r < m;) {
    int rows = m - r >= maxRows ? maxRows
               : m - r >= 4     ? 4
               : m - r >= 2     ? 2
                                : 1;
    plan.tiles.push_back({r, rows, 0, -1});
    r += rows;
  }
  if (!skipZeros || m == 0 || k == 0 || !firstRowHasZeros<Pairs>(x, k))
    return;
  if (plan.steps.size() < plan.tiles.size() * size_t(k))
    plan.steps.resize(plan.tiles.size() * size_t(k));
  int64_t used = 0, limit = k - k / 8;
  for (RowTile &t : plan.tiles) {
    t.first = used;
    t.count = nonZeroSteps<Pairs>(x + t.row * k, t.rows, k, limit,
                                  plan.steps.data() + used);
    // The rows of one layer are alike: after a tile that keeps (nearly)
    // all of its steps, the rest keep all of theirs without a scan.
    if (t.count < 0)
      break;
    used += t.count;
  }
}

} // namespace

void packed::planRowTiles(const float *x, int64_t m, int64_t k, bool skipZeros,
                          RowTiles &plan, int maxRows) {
  ::plan<false>(x, m, k, skipZeros, plan, maxRows);
}

void packed::planPairTiles(const uint32_t *pairs, int64_t m, int64_t k,
                           bool skipZeros, RowTiles &plan, int maxRows) {
  ::plan<true>(pairs, m, k, skipZeros, plan, maxRows);
}

bool packed::worthSkipping(const float *x, int64_t m, int64_t k) {
  if (m == 0 || k == 0 || !firstRowHasZeros<false>(x, k))
    return false;
  // The first tile's steps, into storage kept per thread.
  thread_local std::vector<int32_t> steps;
  if (steps.size() < size_t(k))
    steps.resize(k);
  int rows = m >= 6 ? 6 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
  return nonZeroSteps<false>(x, rows, k, k - k / 8, steps.data()) >= 0;
}
