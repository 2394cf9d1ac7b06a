//===- ShortlistArgmax.cpp - greedy's choice through an int8 shortlist ----===//
#include "runtime/kernels/ShortlistArgmax.h"

#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "frontends/model/PageMemory.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

using namespace tfmc::runtime;
using packed::PanelFormat;

#define TFMC_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {

/// ε of the header: covers the rounding of A (three operations on float
/// operands, ≤ 4u of |x̂·ŵ| + u|b|) and of the norms, with room.
constexpr double kEpsilon = 1e-6;
/// Each per-column term is inflated by this much more, for the two FMAs
/// that combine them into B (≤ 3u of B: every term is positive).
constexpr double kTermSlack = 1e-5;
/// An absolute floor for underflowing products and sums.
constexpr float kTiny = 1e-30f;
/// Candidates a row may keep after pruning before the shortlist gives up.
constexpr size_t kMaxCandidates = 2048;
/// Largest k: every int8 product sum stays within int32 (k · 127 · 127).
constexpr int64_t kMaxK = 100000;

/// The smallest float not below v.
float roundUp(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v)
    f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

/// γ of k multiply-adds and a bias: (k + 1)u / (1 - (k + 1)u), u = 2^-24.
double gammaOf(int64_t k) {
  double nu = static_cast<double>(k + 1) * std::ldexp(1.0, -24);
  return nu / (1 - nu);
}

/// Row c of the weight as floats (exactly: halves and bfloat16 widen
/// without rounding; bfloat16 subnormals are zeros, as the kernels read
/// them).
void widenRow(const void *weight, PanelFormat format, int64_t c, int64_t k,
              float *out) {
  if (format == PanelFormat::F32) {
    std::memcpy(out, static_cast<const float *>(weight) + c * k,
                k * sizeof(float));
    return;
  }
  const uint16_t *row = static_cast<const uint16_t *>(weight) + c * k;
  for (int64_t i = 0; i < k; ++i)
    out[i] = format == PanelFormat::BF16
                 ? tfmc::bfloat16ToFloat(bfloat16Operand(row[i]))
                 : tfmc::halfToFloat(row[i]);
}

/// The float kernels' value of each listed column (8 ids): the bias, then
/// one FMA per k in k order (PackedGemm.h), eight independent chains;
/// bfloat16 weights (x then rounded to bfloat16 operands) by pairs of k,
/// the odd k's FMA first (BFloat16Operands.h).
template <PanelFormat Format>
TFMC_AVX2 void exactValues(const void *weight, int64_t k, const float *x,
                           const float *bias, const int32_t *ids, float *out) {
  using Element =
      std::conditional_t<Format == PanelFormat::F32, float, uint16_t>;
  const Element *rows[8];
  float acc[8];
  for (int g = 0; g < 8; ++g) {
    rows[g] = static_cast<const Element *>(weight) + ids[g] * k;
    acc[g] = bias[ids[g]];
  }
  if constexpr (Format == PanelFormat::BF16) {
    for (int64_t i = 0; i < k; i += 2)
      for (int64_t j = std::min(i + 1, k - 1); j >= i; --j)
        for (int g = 0; g < 8; ++g)
          acc[g] = __builtin_fmaf(
              x[j], tfmc::bfloat16ToFloat(bfloat16Operand(rows[g][j])), acc[g]);
    std::memcpy(out, acc, sizeof(acc));
    return;
  }
  for (int64_t i = 0; i < k; ++i) {
    float xi = x[i];
    for (int g = 0; g < 8; ++g) {
      float wi;
      if constexpr (Format == PanelFormat::F32)
        wi = rows[g][i];
      else if constexpr (Format == PanelFormat::F16)
        wi = _cvtsh_ss(rows[g][i]);
      acc[g] = __builtin_fmaf(xi, wi, acc[g]);
    }
  }
  std::memcpy(out, acc, sizeof(acc));
}

/// The listed columns (in increasing order) of one row x (already rounded
/// to bfloat16 operands) computed on AMX tiles from the weight's panels,
/// as the full projection computes them (a panel at a time: an output's
/// bits do not depend on the others computed with it), scanned into
/// `scan`.
void tileValues(const packed::PackedWeight &panels, const float *x,
                const float *bias, const std::vector<int32_t> &ids,
                const ScanExclusions &excluded, ArgmaxScan &scan) {
  float values[packed::kPanel];
  int64_t panel = -1;
  for (int32_t id : ids) {
    if (id / packed::kPanel != panel) {
      panel = id / packed::kPanel;
      packed::linearColumns(x, 1, panels, bias, values, packed::kPanel, panel,
                            panel + 1, /*activation=*/0);
    }
    scan.add(values + (id - panel * packed::kPanel), id, 1, excluded);
  }
}

/// Row c's int8 codes (Quantize.h's rule for weights: scale max|w| / 127,
/// codes round-half-even(w · 127 / max|w|)) and the sums of squares of the
/// weight, of its codes times their scale, and of the difference (in
/// double, four partial sums: the order only moves the last bits, which
/// the bound's inflation covers). Returns the scale.
TFMC_AVX2 float quantizeRow(const float *w, int64_t k, int8_t *codes,
                            double &weight2, double &code2, double &error2) {
  __m256 amax8 = _mm256_setzero_ps();
  const __m256 signless = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    amax8 =
        _mm256_max_ps(amax8, _mm256_and_ps(_mm256_loadu_ps(w + i), signless));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax8);
  float amax = *std::max_element(lanes, lanes + 8);
  for (; i < k; ++i)
    amax = std::max(amax, std::fabs(w[i]));
  // Quantize.h's rule: a column too small for 127 / max|w| to be a float
  // gets no codes (all of it is residual, which the bound covers).
  float scale = amax / 127.0f, inv = quantizationFactor(127.0f, amax);
  const __m256 inv8 = _mm256_set1_ps(inv), top = _mm256_set1_ps(127.0f),
               bottom = _mm256_set1_ps(-127.0f);
  const __m256d s4 = _mm256_set1_pd(scale);
  __m256d w2[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  __m256d c2[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  __m256d e2[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  for (i = 0; i + 8 <= k; i += 8) {
    __m256 v = _mm256_loadu_ps(w + i);
    __m256 q = _mm256_min_ps(
        top, _mm256_max_ps(bottom, _mm256_round_ps(_mm256_mul_ps(v, inv8),
                                                   _MM_FROUND_TO_NEAREST_INT |
                                                       _MM_FROUND_NO_EXC)));
    __m256i q32 = _mm256_cvtps_epi32(q);
    alignas(32) int32_t ints[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(ints), q32);
    for (int j = 0; j < 8; ++j)
      codes[i + j] = static_cast<int8_t>(ints[j]);
    for (int h = 0; h < 2; ++h) {
      __m256d wd = _mm256_cvtps_pd(h ? _mm256_extractf128_ps(v, 1)
                                     : _mm256_castps256_ps128(v));
      __m256d hat = _mm256_mul_pd(
          s4, _mm256_cvtepi32_pd(h ? _mm256_extracti128_si256(q32, 1)
                                   : _mm256_castsi256_si128(q32)));
      __m256d d = _mm256_sub_pd(wd, hat);
      w2[h] = _mm256_fmadd_pd(wd, wd, w2[h]);
      c2[h] = _mm256_fmadd_pd(hat, hat, c2[h]);
      e2[h] = _mm256_fmadd_pd(d, d, e2[h]);
    }
  }
  alignas(32) double sums[3][4];
  _mm256_store_pd(sums[0], _mm256_add_pd(w2[0], w2[1]));
  _mm256_store_pd(sums[1], _mm256_add_pd(c2[0], c2[1]));
  _mm256_store_pd(sums[2], _mm256_add_pd(e2[0], e2[1]));
  weight2 = sums[0][0] + sums[0][1] + sums[0][2] + sums[0][3];
  code2 = sums[1][0] + sums[1][1] + sums[1][2] + sums[1][3];
  error2 = sums[2][0] + sums[2][1] + sums[2][2] + sums[2][3];
  for (; i < k; ++i) {
    float q = std::clamp(std::nearbyint(w[i] * inv), -127.0f, 127.0f);
    codes[i] = static_cast<int8_t>(q);
    double wd = w[i], hat = static_cast<double>(scale) * q;
    weight2 += wd * wd;
    code2 += hat * hat;
    error2 += (wd - hat) * (wd - hat);
  }
  return scale;
}

/// A row's quantities for the bound.
struct RowBound {
  float scale = 0; // t: x̂ = t · codes
  float norm = 0;  // ‖x‖, inflated
  float error = 0; // ‖x - x̂‖, inflated
  float best = -std::numeric_limits<float>::infinity(); // M so far
};

struct Candidate {
  int32_t id;
  float upper;
};

/// Row `xr` (k = w.k values) quantized for the int8 products (q + 64 into
/// `xq`) and its terms of the bound; false when the row is not finite or
/// its bounds could overflow.
bool prepareRow(const ShortlistWeight &w, const float *xr, RowBound &rb,
                int8_t *codes, uint8_t *xq) {
  const int64_t k = w.k;
  double x2 = 0;
  for (int64_t i = 0; i < k; ++i)
    x2 += static_cast<double>(xr[i]) * xr[i];
  if (!std::isfinite(x2))
    return false;
  rb = RowBound();
  // A row too small to quantize gets codes 0 (Quantize.h): all of it is
  // residual, which the bound covers.
  rb.scale = quantizeActivationRow(xr, k, kActivationLevels, codes);
  double d2 = 0;
  for (int64_t i = 0; i < k; ++i) {
    double d =
        static_cast<double>(xr[i]) - static_cast<double>(rb.scale) * codes[i];
    d2 += d * d;
    xq[i] = static_cast<uint8_t>(codes[i] + kActivationLevels + 1);
  }
  const double inflate = 1 + kTermSlack;
  rb.norm = roundUp(std::sqrt(x2) * inflate);
  rb.error = roundUp(std::sqrt(d2) * inflate);
  // |A| ≤ ‖x̂‖·Q + |b| and B as in the header, with ‖x̂‖ ≤ ‖x‖ + ‖x - x̂‖.
  double worst = (static_cast<double>(rb.norm) + rb.error) * w.maxCodeNorm +
                 w.maxBias + static_cast<double>(rb.norm) * w.maxError +
                 static_cast<double>(rb.error) * w.maxCodeNorm + w.maxBiasSlack;
  return worst < 1e30;
}

/// The least upper bound an id may have and still be the greatest: M less
/// the rounding of M itself and of A + B (a few u of |M|, given 1e-6).
float thresholdOf(float best) {
  return best - (1e-6f * std::fabs(best) + kTiny);
}

/// The per-column terms of a block of `count` columns starting at c0.
struct ColumnTerms {
  const int32_t *rowSums;
  const float *scale, *error, *codeNorm, *slack, *bias;

  /// The terms of the columns from the j-th on.
  ColumnTerms from(int64_t j) const {
    return {rowSums + j,  scale + j, error + j,
            codeNorm + j, slack + j, bias + j};
  }
};

/// A + B of one column, into *upper; returns A - B.
inline float boundOf(int32_t sum, int32_t rowSum, float t, const RowBound &rb,
                     const ColumnTerms &col, int64_t j, float *upper) {
  int32_t exact = sum - (kActivationLevels + 1) * rowSum;
  float a =
      __builtin_fmaf(t * col.scale[j], static_cast<float>(exact), col.bias[j]);
  float b =
      __builtin_fmaf(rb.norm, col.error[j],
                     __builtin_fmaf(rb.error, col.codeNorm[j], col.slack[j]));
  *upper = a + b;
  return a - b;
}

/// Upper bounds of a block with no excluded id into `uppers`; returns the
/// greatest lower bound.
TFMC_AVX2 float blockBounds(const int32_t *acc, const RowBound &rb,
                            const ColumnTerms &col, int64_t count,
                            float *uppers) {
  const __m256 t = _mm256_set1_ps(rb.scale), norm = _mm256_set1_ps(rb.norm),
               error = _mm256_set1_ps(rb.error);
  __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    __m256i sums =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(acc + j));
    __m256i rowSums =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(col.rowSums + j));
    static_assert(kActivationLevels + 1 == 64, "offset is 2^6");
    __m256i exact = _mm256_sub_epi32(sums, _mm256_slli_epi32(rowSums, 6));
    __m256 a = _mm256_fmadd_ps(_mm256_mul_ps(t, _mm256_loadu_ps(col.scale + j)),
                               _mm256_cvtepi32_ps(exact),
                               _mm256_loadu_ps(col.bias + j));
    __m256 b = _mm256_fmadd_ps(
        norm, _mm256_loadu_ps(col.error + j),
        _mm256_fmadd_ps(error, _mm256_loadu_ps(col.codeNorm + j),
                        _mm256_loadu_ps(col.slack + j)));
    lowest = _mm256_max_ps(lowest, _mm256_sub_ps(a, b));
    _mm256_storeu_ps(uppers + j, _mm256_add_ps(a, b));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, lowest);
  float best = *std::max_element(lanes, lanes + 8);
  for (; j < count; ++j)
    best = std::max(best, boundOf(acc[j], col.rowSums[j], rb.scale, rb, col, j,
                                  uppers + j));
  return best;
}

/// Appends the ids of the block whose upper bound reaches `threshold`.
TFMC_AVX2 void collect(const float *uppers, int64_t count, int64_t c0,
                       float threshold, std::vector<Candidate> &out) {
  const __m256 limit = _mm256_set1_ps(threshold);
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    int bits = _mm256_movemask_ps(
        _mm256_cmp_ps(_mm256_loadu_ps(uppers + j), limit, _CMP_GE_OQ));
    while (bits) {
      int lane = __builtin_ctz(bits);
      bits &= bits - 1;
      out.push_back({static_cast<int32_t>(c0 + j + lane), uppers[j + lane]});
    }
  }
  for (; j < count; ++j)
    if (uppers[j] >= threshold)
      out.push_back({static_cast<int32_t>(c0 + j), uppers[j]});
}

/// Drops the candidates below `threshold`; false when too many stay.
bool prune(std::vector<Candidate> &list, float threshold) {
  list.erase(
      std::remove_if(list.begin(), list.end(),
                     [&](const Candidate &c) { return c.upper < threshold; }),
      list.end());
  return list.size() <= kMaxCandidates;
}

} // namespace

std::unique_ptr<ShortlistWeight>
tfmc::runtime::prepareShortlist(const void *weight, PanelFormat format,
                                const float *bias, int64_t n, int64_t k,
                                const packed::PackedWeight *panels) {
  if (n <= 0 || k <= 0 || k > kMaxK)
    return nullptr;
  auto sw = std::make_unique<ShortlistWeight>();
  if (format == PanelFormat::BF16 && packed::bfloat16Tiles())
    sw->tilePanels = panels;
  sw->n = n;
  sw->k = k;
  sw->weight = weight;
  sw->bias = bias;
  sw->format = format;
  sw->scale.resize(n);
  sw->error.resize(n);
  sw->codeNorm.resize(n);
  sw->biasSlack.resize(n);
  // Megabytes written once: huge pages (PageMemory.h), not 4 KiB faults.
  tfmc::pages::Vector<int8_t> codes(n * k);
  std::vector<float> row(k);
  const double gamma = gammaOf(k), inflate = 1 + kTermSlack;
  for (int64_t c = 0; c < n; ++c) {
    widenRow(weight, format, c, k, row.data());
    if (!std::isfinite(bias[c]))
      return nullptr;
    for (float v : row)
      if (!std::isfinite(v))
        return nullptr;
    double err2, code2, w2;
    sw->scale[c] =
        quantizeRow(row.data(), k, codes.data() + c * k, w2, code2, err2);
    if (!std::isfinite(err2) || !std::isfinite(code2) || !std::isfinite(w2))
      return nullptr;
    double codeNorm = std::sqrt(code2);
    sw->error[c] = roundUp(
        (std::sqrt(err2) + gamma * std::sqrt(w2) + kEpsilon * codeNorm) *
        inflate);
    sw->codeNorm[c] = roundUp((1 + kEpsilon) * codeNorm * inflate);
    sw->biasSlack[c] =
        roundUp((gamma + kEpsilon) * std::fabs(bias[c]) * inflate + kTiny);
    // Terms that are not finite would drop a column from the shortlist
    // unseen (a NaN bound is never a candidate): refused instead.
    if (!std::isfinite(sw->scale[c]) || !std::isfinite(sw->error[c]) ||
        !std::isfinite(sw->codeNorm[c]) || !std::isfinite(sw->biasSlack[c]))
      return nullptr;
    sw->maxCodeNorm = std::max(sw->maxCodeNorm, sw->codeNorm[c]);
    sw->maxError = std::max(sw->maxError, sw->error[c]);
    sw->maxBiasSlack = std::max(sw->maxBiasSlack, sw->biasSlack[c]);
    sw->maxBias = std::max(sw->maxBias, std::fabs(bias[c]));
  }
  sw->codes = packed::packInt8(codes.data(), n, k);
  return sw;
}

bool tfmc::runtime::shortlistArgmax(const ShortlistWeight &w, const float *x,
                                    int64_t m, int64_t firstPanel,
                                    int64_t endPanel, ScanExclusions excluded,
                                    const int32_t *allowEos,
                                    ArgmaxScan *scans) {
  const int64_t n = w.n, k = w.k, kp = w.codes.kPadded;
  const int64_t firstColumn = firstPanel * packed::kPanel,
                endColumn = std::min(n, endPanel * packed::kPanel);
  for (int64_t r = 0; r < m; ++r)
    scans[r] = ArgmaxScan();
  if (m == 0 || firstColumn >= endColumn)
    return true;
  const bool tiles = w.format == PanelFormat::BF16 && packed::bfloat16Tiles();
  if (tiles && !w.tilePanels)
    return false;
  // A bfloat16 layer multiplies its input rounded to bfloat16: bounds and
  // exact values are those of the rounded rows.
  thread_local std::vector<float> rounded;
  if (w.format == PanelFormat::BF16) {
    rounded.resize(m * k);
    roundToBFloat16Operands(x, m * k, rounded.data());
    x = rounded.data();
  }

  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<RowBound> rows;
  thread_local std::vector<std::vector<Candidate>> candidates;
  thread_local std::vector<int32_t> acc;
  thread_local std::vector<float> uppers;
  thread_local std::vector<int64_t> cuts;
  xq.assign(m * kp, 0);
  codes.resize(k);
  rows.assign(m, RowBound());
  if (candidates.size() < static_cast<size_t>(m))
    candidates.resize(m);
  for (int64_t r = 0; r < m; ++r) {
    if (!prepareRow(w, x + r * k, rows[r], codes.data(), xq.data() + r * kp))
      return false;
    candidates[r].clear();
  }

  // Blocks of whole panel pairs, about 256 KB of int32 sums.
  int64_t width =
      std::clamp<int64_t>((int64_t(1) << 16) / m, 2 * packed::kPanel, 8192);
  width -= width % (2 * packed::kPanel);
  const int64_t blockPanels = width / packed::kPanel;
  if (acc.size() < static_cast<size_t>(m * width))
    acc.resize(m * width);
  if (uppers.size() < static_cast<size_t>(width))
    uppers.resize(width);
  for (int64_t p = firstPanel; p < endPanel; p += blockPanels) {
    int64_t stop = std::min(endPanel, p + blockPanels);
    packed::int8ProductsBlock(xq.data(), m, w.codes, acc.data(), width, p,
                              stop);
    int64_t c0 = p * packed::kPanel,
            count = std::min(n, stop * packed::kPanel) - c0;
    ColumnTerms col{w.codes.rowSums.data() + c0, w.scale.data() + c0,
                    w.error.data() + c0,         w.codeNorm.data() + c0,
                    w.biasSlack.data() + c0,     w.bias + c0};
    for (int64_t r = 0; r < m; ++r) {
      RowBound &rb = rows[r];
      const int32_t *sums = acc.data() + r * width;
      excluded.allowEos = allowEos[r] != 0;
      std::vector<Candidate> &list = candidates[r];
      // Excluded ids (eos before --min-length, the never-list, banned
      // n-grams: a few) neither set M nor stay: the runs between them take
      // the vector bounds, the ids themselves an upper bound of -inf.
      excluded.excludedIn(c0, c0 + count, cuts);
      float best = rb.best;
      int64_t start = 0;
      for (int64_t cut = 0; cut <= static_cast<int64_t>(cuts.size()); ++cut) {
        int64_t stop =
            cut < static_cast<int64_t>(cuts.size()) ? cuts[cut] - c0 : count;
        if (stop > start)
          best =
              std::max(best, blockBounds(sums + start, rb, col.from(start),
                                         stop - start, uppers.data() + start));
        if (stop < count)
          uppers[stop] = -std::numeric_limits<float>::infinity();
        start = stop + 1;
      }
      rb.best = best;
      // Before the first allowed id (-inf) no id of the block can stay.
      if (best != -std::numeric_limits<float>::infinity())
        collect(uppers.data(), count, c0, thresholdOf(rb.best), list);
      if (list.size() > kMaxCandidates && !prune(list, thresholdOf(rb.best)))
        return false;
    }
  }

  // The candidates left, computed as the float kernels compute them and
  // scanned in id order.
  thread_local std::vector<int32_t> ids;
  for (int64_t r = 0; r < m; ++r) {
    float threshold = thresholdOf(rows[r].best);
    ids.clear();
    for (const Candidate &c : candidates[r])
      if (c.upper >= threshold)
        ids.push_back(c.id);
    excluded.allowEos = allowEos[r] != 0;
    const float *xr = x + r * k;
    if (tiles) {
      tileValues(*w.tilePanels, xr, w.bias, ids, excluded, scans[r]);
      continue;
    }
    for (size_t i = 0; i < ids.size(); i += 8) {
      int32_t group[8];
      size_t count = std::min<size_t>(8, ids.size() - i);
      for (size_t g = 0; g < 8; ++g)
        group[g] = ids[i + std::min(g, count - 1)];
      float values[8];
      switch (w.format) {
      case PanelFormat::F32:
        exactValues<PanelFormat::F32>(w.weight, k, xr, w.bias, group, values);
        break;
      case PanelFormat::F16:
        exactValues<PanelFormat::F16>(w.weight, k, xr, w.bias, group, values);
        break;
      case PanelFormat::BF16:
        exactValues<PanelFormat::BF16>(w.weight, k, xr, w.bias, group, values);
        break;
      }
      for (size_t g = 0; g < count; ++g)
        scans[r].add(values + g, group[g], 1, excluded);
    }
  }
  return true;
}

bool tfmc::runtime::shortlistBounds(const ShortlistWeight &w, const float *x,
                                    float *lower, float *upper) {
  std::vector<float> rounded;
  if (w.format == PanelFormat::BF16) {
    rounded.resize(w.k);
    roundToBFloat16Operands(x, w.k, rounded.data());
    x = rounded.data();
  }
  std::vector<int8_t> codes(w.k);
  std::vector<uint8_t> xq(w.codes.kPadded, 0);
  RowBound rb;
  if (!prepareRow(w, x, rb, codes.data(), xq.data()))
    return false;
  std::vector<int32_t> acc(w.n);
  packed::int8ProductsBlock(xq.data(), 1, w.codes, acc.data(), w.n, 0,
                            packed::panelCount(w.n));
  ColumnTerms col{w.codes.rowSums.data(), w.scale.data(),     w.error.data(),
                  w.codeNorm.data(),      w.biasSlack.data(), w.bias};
  for (int64_t c = 0; c < w.n; ++c)
    lower[c] = boundOf(acc[c], col.rowSums[c], rb.scale, rb, col, c, upper + c);
  return true;
}

ShortlistPolicy tfmc::runtime::shortlistPolicyFor(const char *value,
                                                  std::string &note) {
  if (!value || !*value || std::strcmp(value, "auto") == 0)
    return ShortlistPolicy::Auto;
  if (std::strcmp(value, "always") == 0)
    return ShortlistPolicy::Always;
  if (std::strcmp(value, "never") == 0)
    return ShortlistPolicy::Never;
  note = std::string("note: TFMC_GREEDY_SHORTLIST=") + value +
         " is not auto, always or never; using auto";
  return ShortlistPolicy::Auto;
}

ShortlistPolicy tfmc::runtime::shortlistPolicy() {
  static const ShortlistPolicy policy = [] {
    std::string note;
    ShortlistPolicy p =
        shortlistPolicyFor(std::getenv("TFMC_GREEDY_SHORTLIST"), note);
    if (!note.empty())
      std::fprintf(stderr, "%s\n", note.c_str());
    return p;
  }();
  return policy;
}
