//===- TopKScan.cpp - beam search's candidates over blocks of logits ------===//
#include "runtime/kernels/TopKScan.h"

#include "runtime/kernels/KernelIsa.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

using namespace tfmc::runtime;

namespace {

constexpr float kLowest = -std::numeric_limits<float>::infinity();

/// exp(x) for x <= 0 in float: x = n ln2 + r with |r| <= ln2/2, exp(r) by
/// its degree-6 Taylor polynomial (relative error < 2e-7), 2^n through the
/// exponent bits. Written branch-free so that the loop below vectorises.
/// Every multiply-add is a fused one, written out (expNonPositive16() runs
/// the same ones): the bits do not depend on whether the compiler contracts
/// `a * b + c` (clang does within an expression, by default, where the
/// target has FMA; the baseline target has none and calls fmaf, slowly but
/// to the same bits, so every variant's sums agree).
__attribute__((always_inline)) inline float expNonPositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  // Round x / ln2 to the nearest integer with the 1.5 * 2^23 trick: t's
  // low mantissa bits hold n.
  float t = __builtin_fmaf(x, 1.44269504f, 12582912.0f);
  float n = t - 12582912.0f;
  float r = __builtin_fmaf(n, -0.693359375f, x);
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  float p = __builtin_fmaf(1.0f / 720, r, 1.0f / 120);
  p = __builtin_fmaf(p, r, 1.0f / 24);
  p = __builtin_fmaf(p, r, 1.0f / 6);
  p = __builtin_fmaf(p, r, 0.5f);
  p = __builtin_fmaf(p, r, 1.0f);
  p = __builtin_fmaf(p, r, 1.0f);
  // n read from t's bits rather than converted: a NaN x (a model whose
  // outputs overflowed) then gives a NaN sum without converting NaN to an
  // integer, which is undefined; for every other x the bits are those of
  // (int(n) + 127) << 23, which the AVX-512 kernel computes.
  uint32_t tBits;
  std::memcpy(&tBits, &t, sizeof(tBits));
  uint32_t bits = (tBits - 0x4B400000u + 127u) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/// sumExpBody() from values[v] on, its eight partial sums so far in
/// `partial`.
__attribute__((always_inline)) inline float sumExpFrom(const float *values,
                                                       int64_t v, int64_t count,
                                                       float max,
                                                       float *partial) {
  for (; v + 8 <= count; v += 8)
    for (int k = 0; k < 8; ++k)
      partial[k] += expNonPositive(values[v + k] - max);
  float sum = 0;
  for (; v < count; ++v)
    sum += expNonPositive(values[v] - max);
  for (int k = 0; k < 8; ++k)
    sum += partial[k];
  return sum;
}

/// sum_v exp(values[v] - max), eight partial sums in id order. Always
/// inlined, so each caller compiles it for its own target (AVX2 + FMA, or
/// the baseline). Every variant gives the same bits (the baseline's sums
/// differed in the last bits in 595 of 20,000 random rows while
/// expNonPositive() left its multiply-adds to the compiler, 2026-12-05),
/// so these sums do not depend on the host's instruction set; every
/// caller on one host takes the same one, so a fused scan and a scan of
/// the whole row agree.
__attribute__((always_inline)) inline float
sumExpBody(const float *values, int64_t count, float max) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  return sumExpFrom(values, 0, count, max, partial);
}

__attribute__((target("avx2,fma"))) float
sumExpAvx2(const float *values, int64_t count, float max) {
  return sumExpBody(values, count, max);
}

float sumExpGeneric(const float *values, int64_t count, float max) {
  return sumExpBody(values, count, max);
}

bool haveAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

/// expNonPositive(values[i] - max) for sixteen values, by its operations,
/// so each lane's bits are sumExpAvx2()'s.
__attribute__((target("avx512f,fma"))) inline __m512
expNonPositive16(const float *values, __m512 max) {
  __m512 x = _mm512_sub_ps(_mm512_loadu_ps(values), max);
  // max_ps(a, b) gives b when either is NaN, as `x < -87 ? -87 : x` does.
  x = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
  __m512 n = _mm512_add_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f),
                                           _mm512_set1_ps(12582912.0f)),
                           _mm512_set1_ps(-12582912.0f));
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 720), r,
                             _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  // p * 2^n by vscalefps: n is a whole number in [-126, 127] (x >= -87),
  // so 2^n is a normal float and the product the one the AVX2 code makes
  // with 2^n's bits (three instructions fewer).
  return _mm512_scalef_ps(p, n);
}

/// sumExpBody() sixteen values at a time: the halves of each sixteen go
/// to the same eight partial sums in the same order, so the bits are
/// sumExpAvx2()'s. With the block maxima in one register each and only
/// the values above the last candidate offered (add()), beam 4 decoded
/// the dev set in 1.95 s instead of 2.25 s (medians of 10 alternating
/// runs, AMD EPYC AVX-512, 2026-12-05).
__attribute__((target("avx512f,fma"))) float
sumExpAvx512(const float *values, int64_t count, float max) {
  const __m512 top = _mm512_set1_ps(max);
  __m256 partial = _mm256_setzero_ps();
  int64_t v = 0;
  for (; v + 16 <= count; v += 16) {
    __m512 e = expNonPositive16(values + v, top);
    partial = _mm256_add_ps(partial, _mm512_castps512_ps256(e));
    partial = _mm256_add_ps(partial, _mm256_castpd_ps(_mm512_extractf64x4_pd(
                                         _mm512_castps_pd(e), 1)));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, partial);
  return sumExpFrom(values, v, count, max, lanes);
}

/// AVX-512 where the packed kernels run theirs (KernelIsa.h: not where
/// TFMC_KERNEL_ISA=avx2 asks for the AVX2 kernels), so the test suite's AVX2
/// run (tests/e2e/CMakeLists.txt) covers this scan's AVX2 path as well.
bool haveAvx512() {
  static const bool ok = packed::avx512Vectors(packed::preferredIsa());
  return ok;
}

} // namespace

float tfmc::runtime::detail::sumExpWith(SumExpVariant variant,
                                        const float *values, int64_t count,
                                        float max) {
  switch (variant) {
  case SumExpVariant::Avx512:
    return sumExpAvx512(values, count, max);
  case SumExpVariant::Avx2:
    return sumExpAvx2(values, count, max);
  case SumExpVariant::Generic:
    break;
  }
  return sumExpGeneric(values, count, max);
}

namespace {

__attribute__((target("avx2,fma"))) float expNonPositiveFma(float x) {
  return expNonPositive(x);
}

/// expNonPositive() of one value outside the vector code (a chunk's
/// rescaling): its multiply-adds inline where the CPU has FMA, through
/// fmaf's calls elsewhere; the same bits.
float expOne(float x) {
  return packed::availableOnThisCpu() ? expNonPositiveFma(x)
                                      : expNonPositive(x);
}

/// The chunk sums of the variant this host runs (each gives the same bits).
float sumExp(const float *values, int64_t count, float max) {
  using detail::SumExpVariant;
  static const SumExpVariant variant = haveAvx512() ? SumExpVariant::Avx512
                                       : packed::availableOnThisCpu()
                                           ? SumExpVariant::Avx2
                                           : SumExpVariant::Generic;
  return detail::sumExpWith(variant, values, count, max);
}

constexpr int64_t kBlock = 16;

/// The running maximum `max` with the partial block values[v, count), if
/// any, whose largest goes to *block.
inline float withPartialBlock(const float *values, int64_t v, int64_t count,
                              float *block, float max) {
  if (v == count)
    return max;
  float m = kLowest;
  for (; v < count; ++v)
    m = values[v] > m ? values[v] : m;
  *block = m;
  return m > max ? m : max;
}

/// The largest of each block of kBlock values (NaNs ignored; -inf for a
/// block of NaNs); returns the largest of all.
__attribute__((target("avx2"))) float
blockMaximaAvx2(const float *values, int64_t count, float *blocks) {
  const __m256 lowest = _mm256_set1_ps(kLowest);
  __m256 all = lowest;
  int64_t b = 0, v = 0;
  for (; v + kBlock <= count; v += kBlock, ++b) {
    // max_ps(x, m) keeps m when x is NaN.
    __m256 m = _mm256_max_ps(_mm256_loadu_ps(values + v), lowest);
    m = _mm256_max_ps(_mm256_loadu_ps(values + v + 8), m);
    all = _mm256_max_ps(m, all);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m),
                          _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    blocks[b] = _mm_cvtss_f32(h);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, all);
  float max = kLowest;
  for (float x : lanes)
    max = x > max ? x : max;
  return withPartialBlock(values, v, count, blocks + b, max);
}

float blockMaximaGeneric(const float *values, int64_t count, float *blocks) {
  float max = kLowest;
  for (int64_t b = 0, v = 0; v < count; v += kBlock, ++b) {
    float m = kLowest;
    for (int64_t i = v; i < std::min(v + kBlock, count); ++i)
      m = values[i] > m ? values[i] : m;
    blocks[b] = m;
    max = m > max ? m : max;
  }
  return max;
}

/// blockMaximaAvx2() a block to a register (the same maxima: max is exact).
__attribute__((target("avx512f"))) float
blockMaximaAvx512(const float *values, int64_t count, float *blocks) {
  static_assert(kBlock == 16);
  const __m512 lowest = _mm512_set1_ps(kLowest);
  __m512 all = lowest;
  int64_t b = 0, v = 0;
  for (; v + kBlock <= count; v += kBlock, ++b) {
    // max_ps(x, m) keeps m when x is NaN.
    __m512 m = _mm512_max_ps(_mm512_loadu_ps(values + v), lowest);
    all = _mm512_max_ps(m, all);
    blocks[b] = _mm512_reduce_max_ps(m);
  }
  float max = _mm512_reduce_max_ps(all);
  return withPartialBlock(values, v, count, blocks + b, max);
}

float blockMaxima(const float *values, int64_t count, float *blocks) {
  return haveAvx512() ? blockMaximaAvx512(values, count, blocks)
         : haveAvx2() ? blockMaximaAvx2(values, count, blocks)
                      : blockMaximaGeneric(values, count, blocks);
}

/// Bit i set where values[i] > threshold (i < count <= 16; false for NaN).
__attribute__((target("avx512f"))) uint32_t
aboveAvx512(const float *values, int64_t count, float threshold) {
  __mmask16 lanes = static_cast<__mmask16>((uint32_t(1) << count) - 1);
  __m512 x = _mm512_maskz_loadu_ps(lanes, values);
  return _mm512_mask_cmp_ps_mask(lanes, x, _mm512_set1_ps(threshold),
                                 _CMP_GT_OQ);
}

uint32_t aboveGeneric(const float *values, int64_t count, float threshold) {
  uint32_t bits = 0;
  for (int64_t i = 0; i < count; ++i)
    bits |= uint32_t(values[i] > threshold) << i;
  return bits;
}

uint32_t above(const float *values, int64_t count, float threshold) {
  return haveAvx512() ? aboveAvx512(values, count, threshold)
                      : aboveGeneric(values, count, threshold);
}

/// Bit i set where values[i] > threshold (false for NaN), i < count <=
/// kBlock, one at a time; `max` takes the largest (NaNs ignored).
inline uint16_t blockMask(const float *values, int64_t count, float threshold,
                          float &max) {
  uint16_t bits = 0;
  for (int64_t i = 0; i < count; ++i) {
    float x = values[i];
    max = x > max ? x : max;
    bits |= static_cast<uint16_t>(uint32_t(x > threshold) << i);
  }
  return bits;
}

/// The largest of values[0, count) (NaNs ignored; -inf when there is
/// none), and in masks[b] bit i set where values[b * kBlock + i] >
/// threshold (false for NaN): blockMaxima()'s maximum and above()'s bits for
/// every block, in one pass. Bit b of *blocksAbove is set where masks[b] is
/// not 0.
__attribute__((target("avx512f"))) float
maximumAndMasksAvx512(const float *values, int64_t count, float threshold,
                      uint16_t *masks, uint32_t *blocksAbove) {
  static_assert(kBlock == 16);
  const __m512 lowest = _mm512_set1_ps(kLowest),
               bar = _mm512_set1_ps(threshold);
  __m512 all = lowest;
  uint32_t above = 0;
  int64_t b = 0, v = 0;
  for (; v + kBlock <= count; v += kBlock, ++b) {
    __m512 x = _mm512_loadu_ps(values + v);
    // max_ps(x, m) keeps m when x is NaN.
    all = _mm512_max_ps(x, all);
    masks[b] = _mm512_cmp_ps_mask(x, bar, _CMP_GT_OQ);
    above |= uint32_t(masks[b] != 0) << b;
  }
  if (v < count) {
    __mmask16 lanes = static_cast<__mmask16>((uint32_t(1) << (count - v)) - 1);
    __m512 x = _mm512_mask_loadu_ps(lowest, lanes, values + v);
    all = _mm512_max_ps(x, all);
    masks[b] = _mm512_mask_cmp_ps_mask(lanes, x, bar, _CMP_GT_OQ);
    above |= uint32_t(masks[b] != 0) << b;
  }
  *blocksAbove = above;
  return _mm512_reduce_max_ps(all);
}

__attribute__((target("avx2"))) float
maximumAndMasksAvx2(const float *values, int64_t count, float threshold,
                    uint16_t *masks, uint32_t *blocksAbove) {
  const __m256 lowest = _mm256_set1_ps(kLowest),
               bar = _mm256_set1_ps(threshold);
  __m256 all = lowest;
  uint32_t above = 0;
  int64_t b = 0, v = 0;
  for (; v + kBlock <= count; v += kBlock, ++b) {
    __m256 lo = _mm256_loadu_ps(values + v),
           hi = _mm256_loadu_ps(values + v + 8);
    // max_ps(x, m) keeps m when x is NaN.
    all = _mm256_max_ps(hi, _mm256_max_ps(lo, all));
    masks[b] = static_cast<uint16_t>(
        _mm256_movemask_ps(_mm256_cmp_ps(lo, bar, _CMP_GT_OQ)) |
        (_mm256_movemask_ps(_mm256_cmp_ps(hi, bar, _CMP_GT_OQ)) << 8));
    above |= uint32_t(masks[b] != 0) << b;
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, all);
  float max = kLowest;
  for (float x : lanes)
    max = x > max ? x : max;
  if (v < count) {
    masks[b] = blockMask(values + v, count - v, threshold, max);
    above |= uint32_t(masks[b] != 0) << b;
  }
  *blocksAbove = above;
  return max;
}

float maximumAndMasksGeneric(const float *values, int64_t count,
                             float threshold, uint16_t *masks,
                             uint32_t *blocksAbove) {
  float max = kLowest;
  uint32_t above = 0;
  for (int64_t b = 0, v = 0; v < count; v += kBlock, ++b) {
    masks[b] =
        blockMask(values + v, std::min(kBlock, count - v), threshold, max);
    above |= uint32_t(masks[b] != 0) << b;
  }
  *blocksAbove = above;
  return max;
}

float maximumAndMasks(const float *values, int64_t count, float threshold,
                      uint16_t *masks, uint32_t *blocksAbove) {
  static_assert(TopKScan::kChunk / kBlock <= 32, "one bit a block");
  return haveAvx512() ? maximumAndMasksAvx512(values, count, threshold, masks,
                                              blocksAbove)
         : haveAvx2()
             ? maximumAndMasksAvx2(values, count, threshold, masks, blocksAbove)
             : maximumAndMasksGeneric(values, count, threshold, masks,
                                      blocksAbove);
}

} // namespace

void TopKScan::reset(int64_t capacity) {
  this->capacity = std::max<int64_t>(capacity, 0);
  items.clear();
  withNaN = false;
  max = kLowest;
  sum = 0;
}

void TopKScan::offer(float value, int32_t id) {
  if (!wants(value))
    return;
  // Best first by value; an equal value ranks after (ids arrive in order):
  // the place is after every candidate of a value >= this one, counted
  // without branches where no NaN is in the way (a NaN does not order).
  TopKCandidate c{value, id};
  size_t at;
  if (!withNaN && value == value) {
    at = 0;
    for (const TopKCandidate &e : items)
      at += e.value >= value;
  } else {
    at = static_cast<size_t>(
        std::upper_bound(items.begin(), items.end(), c,
                         [](const TopKCandidate &x, const TopKCandidate &y) {
                           return x.value > y.value;
                         }) -
        items.begin());
    withNaN = withNaN || value != value;
  }
  // Full: the last one drops out.
  if (static_cast<int64_t>(items.size()) < capacity)
    items.push_back(c);
  for (size_t i = items.size() - 1; i > at; --i)
    items[i] = items[i - 1];
  items[at] = c;
}

void TopKScan::add(const float *values, int64_t first, int64_t count,
                   const ScanExclusions &excluded) {
  assert(first % kChunk == 0 && "blocks start at a chunk boundary");
  for (int64_t c = 0; c < count; c += kChunk) {
    const float *chunk = values + c;
    int64_t n = std::min(kChunk, count - c);
    int64_t base = first + c;
    auto offerBits = [&](int64_t start, uint32_t bits) {
      for (; bits; bits &= bits - 1) {
        int64_t v = start + __builtin_ctz(bits);
        if (!excluded.excludes(base + v))
          offer(chunk[v], static_cast<int32_t>(base + v));
      }
    };
    if (static_cast<int64_t>(items.size()) >= capacity) {
      // Full (after the first chunk or so): only values above the last
      // candidate can enter. One pass takes the chunk's maximum and marks
      // the values above the bar as it stands at the chunk's start (few:
      // about 2 a chunk in a beam-4 search of the bundled model); offer()
      // checks each again, as each one entering raises the bar.
      uint16_t masks[kChunk / kBlock];
      uint32_t blocksAbove = 0;
      float chunkMax =
          maximumAndMasks(chunk, n,
                          capacity > 0 ? items.back().value
                                       : std::numeric_limits<float>::infinity(),
                          masks, &blocksAbove);
      addToShift(chunk, n, chunkMax);
      for (; blocksAbove; blocksAbove &= blocksAbove - 1) {
        int64_t b = __builtin_ctz(blocksAbove);
        offerBits(b * kBlock, masks[b]);
      }
      continue;
    }
    // Filling: every allowed value is offered, block by block until the
    // candidates are full; then blocks whose largest cannot enter are
    // skipped whole.
    float blocks[kChunk / kBlock];
    addToShift(chunk, n, blockMaxima(chunk, n, blocks));
    for (int64_t b = 0; b * kBlock < n; ++b) {
      if (!wants(blocks[b]))
        continue;
      int64_t start = b * kBlock, end = std::min(n, start + kBlock);
      if (static_cast<int64_t>(items.size()) < capacity) {
        for (int64_t v = start; v < end; ++v)
          if (!excluded.excludes(base + v))
            offer(chunk[v], static_cast<int32_t>(base + v));
        continue;
      }
      offerBits(start, above(chunk + start, end - start, items.back().value));
    }
  }
}

void TopKScan::addToShift(const float *chunk, int64_t n, float chunkMax) {
  // The chunk into the running maximum and sum. A chunk of -inf adds
  // nothing (NaN if it holds a NaN); only finite maxima rescale.
  if (chunkMax == kLowest) {
    float chunkSum = 0;
    for (int64_t v = 0; v < n; ++v)
      if (chunk[v] != chunk[v])
        chunkSum = chunk[v];
    sum += chunkSum;
    return;
  }
  float chunkSum = sumExp(chunk, n, chunkMax);
  if (chunkMax > max) {
    sum = (max == kLowest ? sum : sum * expOne(max - chunkMax)) + chunkSum;
    max = chunkMax;
  } else {
    sum += chunkSum * expOne(chunkMax - max);
  }
}

float TopKScan::shift() const { return max + std::log(sum); }

void TopKScan::write(float *values, int32_t *ids, int64_t count) const {
  float s = shift();
  for (int64_t i = 0; i < count; ++i) {
    bool filled = i < static_cast<int64_t>(items.size());
    values[i] = filled ? items[i].value - s : kLowest;
    ids[i] = filled ? items[i].id : -1;
  }
}
