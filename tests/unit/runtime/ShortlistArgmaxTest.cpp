//===- ShortlistArgmaxTest.cpp - greedy's int8 shortlist against full scans
//===//
//
// The shortlist must choose what ArgmaxScan chooses over the packed
// kernels' full outputs (linearColumns): the same id and value, for every
// weight format, shape, share of the columns, exclusion and tie, and must
// refuse what it cannot bound.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/ShortlistArgmax.h"
#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "runtime/kernels/PackedGemm.h"
#include "tests/unit/runtime/RandomData.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace tfmc::runtime;
using packed::PanelFormat;
using tfmc::testing::normal;

namespace {

/// A weight in one of the formats, as the model holds it ([n, k] row-major)
/// and packed into the float kernels' panels.
struct Weight {
  PanelFormat format;
  int64_t n, k;
  std::vector<float> f32;
  std::vector<uint16_t> bits;
  packed::PackedWeight panels;

  Weight(const std::vector<float> &w, int64_t n, int64_t k, PanelFormat format)
      : format(format), n(n), k(k), f32(w) {
    if (format == PanelFormat::F32) {
      panels = packed::pack(f32.data(), n, k);
      return;
    }
    bits.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i)
      bits[i] = format == PanelFormat::F16 ? tfmc::floatToHalf(w[i])
                                           : tfmc::floatToBFloat16(w[i]);
    panels = format == PanelFormat::F16
                 ? packed::packHalves(bits.data(), n, k)
                 : packed::packBFloat16(bits.data(), n, k);
  }
  const void *data() const {
    return format == PanelFormat::F32 ? static_cast<const void *>(f32.data())
                                      : bits.data();
  }
};

/// What the fused projection's full scan chooses for each row over panels
/// [first, end): the packed kernels' outputs, then ArgmaxScan.
std::vector<ArgmaxScan> fullScan(const Weight &w, const float *bias,
                                 const std::vector<float> &x, int64_t m,
                                 int64_t first, int64_t end,
                                 ScanExclusions excluded,
                                 const std::vector<int32_t> &allowEos) {
  int64_t width = (end - first) * packed::kPanel;
  std::vector<float> y(m * width);
  packed::linearColumns(x.data(), m, w.panels, bias, y.data(), width, first,
                        end, /*activation=*/0);
  int64_t c0 = first * packed::kPanel,
          count = std::min(w.n, end * packed::kPanel) - c0;
  std::vector<ArgmaxScan> scans(m);
  for (int64_t r = 0; r < m; ++r) {
    excluded.allowEos = allowEos[r] != 0;
    if (count > 0)
      scans[r].add(y.data() + r * width, c0, count, excluded);
  }
  return scans;
}

/// The shortlist's choices equal the full scan's (value compared as floats:
/// a zero's sign may differ).
void expectSameChoices(const Weight &w, const std::vector<float> &bias,
                       const std::vector<float> &x, int64_t m, int64_t first,
                       int64_t end, const ScanExclusions &excluded,
                       const std::vector<int32_t> &allowEos,
                       const std::string &label) {
  std::unique_ptr<ShortlistWeight> sw =
      prepareShortlist(w.data(), w.format, bias.data(), w.n, w.k, &w.panels);
  ASSERT_NE(sw, nullptr) << label;
  std::vector<ArgmaxScan> got(m);
  ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, first, end, excluded,
                              allowEos.data(), got.data()))
      << label;
  std::vector<ArgmaxScan> want =
      fullScan(w, bias.data(), x, m, first, end, excluded, allowEos);
  for (int64_t r = 0; r < m; ++r) {
    EXPECT_EQ(got[r].best, want[r].best) << label << " row " << r;
    if (want[r].best >= 0)
      EXPECT_EQ(got[r].value, want[r].value) << label << " row " << r;
  }
}

const PanelFormat kFormats[] = {PanelFormat::F32, PanelFormat::F16,
                                PanelFormat::BF16};

std::string nameOf(PanelFormat f) {
  return f == PanelFormat::F32 ? "f32" : f == PanelFormat::F16 ? "f16" : "bf16";
}

TEST(ShortlistArgmax, RandomRowsChooseWhatTheFullScanChooses) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(3);
  const int32_t never[] = {0, 1, 3};
  ScanExclusions excluded;
  excluded.never = never;
  excluded.neverCount = 3;
  excluded.eos = 2;
  struct Shape {
    int64_t n, k;
  };
  for (Shape s :
       {Shape{1000, 64}, Shape{777, 37}, Shape{4099, 512}, Shape{40, 3}})
    for (PanelFormat format : kFormats) {
      std::vector<float> wv = normal(s.n * s.k, rng), bias = normal(s.n, rng);
      for (float &v : wv)
        v *= 1.0f / std::sqrt(static_cast<float>(s.k));
      for (float &v : bias)
        v *= 0.1f;
      Weight w(wv, s.n, s.k, format);
      int64_t panels = packed::panelCount(s.n);
      for (int64_t m : {1, 3, 8, 17}) {
        std::vector<float> x = normal(m * s.k, rng);
        std::vector<int32_t> allowEos(m);
        for (int64_t r = 0; r < m; ++r)
          allowEos[r] = r % 2;
        std::string label = nameOf(format) + " n " + std::to_string(s.n) +
                            " k " + std::to_string(s.k) + " m " +
                            std::to_string(m);
        expectSameChoices(w, bias, x, m, 0, panels, excluded, allowEos, label);
        // A StepTeam member's or kernel thread's share of the columns.
        for (auto [t, of] :
             {std::pair{0, 2}, std::pair{1, 2}, std::pair{2, 3}}) {
          auto [first, end] = packed::panelShare(panels, t, of);
          expectSameChoices(w, bias, x, m, first, end, excluded, allowEos,
                            label + " share " + std::to_string(t) + "/" +
                                std::to_string(of));
        }
      }
    }
}

/// Columns that tie exactly or differ in the last bits of one weight, and
/// the columns the row favours most among them: every one of them stays a
/// candidate, and the lowest id of the greatest value wins, as in a scan.
TEST(ShortlistArgmax, NearTiesAndExactTiesKeepTheScansChoice) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(5);
  const int64_t n = 3000, k = 256, m = 6;
  std::vector<float> base = normal(k, rng);
  std::vector<float> x(m * k);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < k; ++i)
      x[r * k + i] = base[i] * (1.0f + 0.01f * static_cast<float>(r));
  for (PanelFormat format : kFormats) {
    std::vector<float> wv = normal(n * k, rng), bias(n, 0.0f);
    for (float &v : wv)
      v *= 0.02f;
    // 400 columns along the rows' direction, equal or a few ulps apart.
    std::uniform_int_distribution<int64_t> column(0, n - 1), step(0, k - 1);
    for (int c = 0; c < 400; ++c) {
      int64_t id = column(rng);
      for (int64_t i = 0; i < k; ++i)
        wv[id * k + i] = base[i] / 16.0f;
      if (c % 3 != 0) {
        float &v = wv[id * k + step(rng)];
        for (int ulps = c % 5; ulps > 0; --ulps)
          v = std::nextafter(v, c % 2 ? 1.0f : -1.0f);
      }
    }
    Weight w(wv, n, k, format);
    std::vector<int32_t> allowEos(m, 1);
    for (bool withBias : {false, true}) {
      if (withBias)
        for (int64_t c = 0; c < n; ++c)
          bias[c] = c % 7 == 0 ? 1e-6f : 0.0f;
      expectSameChoices(w, bias, x, m, 0, packed::panelCount(n),
                        ScanExclusions(), allowEos,
                        nameOf(format) + (withBias ? " bias" : ""));
    }
  }
}

/// The bound itself: every output the float kernels compute lies within
/// [A - B, A + B], for each weight format, k below and above 2,096 (where
/// the int32 sums stop being exact floats), columns and rows spanning many
/// orders of magnitude, down to columns too small to quantize.
TEST(ShortlistArgmax, BoundsHoldForEveryOutput) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(21);
  struct Shape {
    int64_t n, k;
  };
  for (Shape s : {Shape{300, 9}, Shape{257, 512}, Shape{64, 3000}})
    for (PanelFormat format : kFormats) {
      std::vector<float> wv = normal(s.n * s.k, rng), bias = normal(s.n, rng);
      // Halves hold 2^-14 .. 65504 (normal); the others far more.
      int step = format == PanelFormat::F16 ? 1 : 6;
      for (int64_t c = 0; c < s.n; ++c) {
        int shift = (static_cast<int>(c % 11) - 5) * step; // 2^-30 .. 2^30
        for (int64_t i = 0; i < s.k; ++i)
          wv[c * s.k + i] = std::ldexp(wv[c * s.k + i], shift);
      }
      if (format != PanelFormat::F16) { // halves cannot hold these
        for (int64_t i = 0; i < s.k; ++i)
          wv[3 * s.k + i] = i == 0 ? 1e-38f : 0.0f;
        for (int64_t i = 0; i < s.k; ++i)
          wv[5 * s.k + i] = i % 3 ? 0.0f : 2e-37f;
      }
      Weight w(wv, s.n, s.k, format);
      // The values the kernels see: widened from the stored format.
      std::vector<float> stored(wv.size());
      if (format == PanelFormat::F32)
        stored = wv;
      else
        for (size_t i = 0; i < wv.size(); ++i)
          stored[i] = format == PanelFormat::F16
                          ? tfmc::halfToFloat(w.bits[i])
                          : tfmc::bfloat16ToFloat(w.bits[i]);
      auto sw =
          prepareShortlist(w.data(), format, bias.data(), s.n, s.k, &w.panels);
      ASSERT_NE(sw, nullptr) << nameOf(format) << " k " << s.k;
      for (float rowScale : {1.0f, 1e-20f, 1e-38f, 1e12f}) {
        std::vector<float> x = normal(s.k, rng);
        for (float &v : x)
          v *= rowScale;
        std::vector<float> lower(s.n), upper(s.n), y(s.n);
        ASSERT_TRUE(shortlistBounds(*sw, x.data(), lower.data(), upper.data()));
        packed::linearColumns(x.data(), 1, w.panels, bias.data(), y.data(), s.n,
                              0, packed::panelCount(s.n), 0);
        for (int64_t c = 0; c < s.n; ++c) {
          ASSERT_LE(lower[c], y[c]) << nameOf(format) << " k " << s.k
                                    << " row scale " << rowScale << " c " << c;
          ASSERT_GE(upper[c], y[c]) << nameOf(format) << " k " << s.k
                                    << " row scale " << rowScale << " c " << c;
        }
      }
    }
}

/// Weights and rows that int8 holds exactly (integers, each column's and
/// row's largest magnitude the top code): A has no quantization error left,
/// and only the float kernel's own rounding (the bias carried through 512
/// multiply-adds of large integers) separates it from L: the bound's γ and
/// ε terms must cover that (with both at zero this test fails).
TEST(ShortlistArgmax, BoundsCoverTheFloatKernelsRounding) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(27);
  const int64_t n = 512, k = 512;
  std::uniform_int_distribution<int> weightCode(-127, 127), rowCode(-63, 63);
  std::vector<float> wv(n * k), bias = normal(n, rng), x(k);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < k; ++i)
      wv[c * k + i] = static_cast<float>(weightCode(rng));
    wv[c * k] = 127.0f;
  }
  for (int64_t i = 0; i < k; ++i)
    x[i] = static_cast<float>(rowCode(rng));
  x[0] = 63.0f;
  for (float &b : bias)
    b *= 0.37f;
  Weight w(wv, n, k, PanelFormat::F32);
  auto sw = prepareShortlist(w.data(), w.format, bias.data(), n, k, &w.panels);
  ASSERT_NE(sw, nullptr);
  std::vector<float> lower(n), upper(n), y(n);
  ASSERT_TRUE(shortlistBounds(*sw, x.data(), lower.data(), upper.data()));
  packed::linearColumns(x.data(), 1, w.panels, bias.data(), y.data(), n, 0,
                        packed::panelCount(n), 0);
  int differ = 0;
  for (int64_t c = 0; c < n; ++c) {
    ASSERT_LE(lower[c], y[c]) << c;
    ASSERT_GE(upper[c], y[c]) << c;
    differ += 0.5f * (lower[c] + upper[c]) != y[c];
  }
  EXPECT_GT(differ, 0) << "no rounding to cover: the case tests nothing";
}

/// A column too small to quantize (its codes would be 0 · inf) still wins
/// where its bias makes it the greatest.
TEST(ShortlistArgmax, TinyColumnsStayCandidates) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(23);
  for (int64_t k : {9, 13, 16}) {
    const int64_t n = 32, m = 2;
    std::vector<float> wv = normal(n * k, rng), bias = normal(n, rng);
    for (int64_t i = 0; i < k; ++i)
      wv[3 * k + i] = i == 0 ? 1e-38f : 0.0f;
    bias[3] = 10.0f;
    for (PanelFormat format : {PanelFormat::F32, PanelFormat::BF16}) {
      Weight w(wv, n, k, format);
      std::vector<float> x = normal(m * k, rng);
      std::vector<int32_t> allowEos(m, 1);
      expectSameChoices(w, bias, x, m, 0, packed::panelCount(n),
                        ScanExclusions(), allowEos,
                        nameOf(format) + " k " + std::to_string(k));
    }
  }
}

/// More candidates than a row keeps, until a later block's larger values
/// prune the earlier ones: the choice is still the full scan's.
TEST(ShortlistArgmax, PruningAcrossBlocks) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(25);
  const int64_t n = 20000, k = 32, m = 1; // one row: blocks of 8,192 outputs
  std::vector<float> x = normal(k, rng), wv = normal(n * k, rng), bias(n, 0.0f);
  for (float &v : wv)
    v *= 0.01f;
  std::uniform_real_distribution<float> jitter(1.0f, 1.0001f);
  for (int64_t c = 100; c < 1700; ++c) // block 0: 1,600 near ties
    for (int64_t i = 0; i < k; ++i)
      wv[c * k + i] = x[i] * jitter(rng);
  for (int64_t c = 9000; c < 10000; ++c) // block 1: 1,000 greater ones
    for (int64_t i = 0; i < k; ++i)
      wv[c * k + i] = 1.5f * x[i] * jitter(rng);
  Weight w(wv, n, k, PanelFormat::F32);
  std::vector<int32_t> allowEos(m, 1);
  expectSameChoices(w, bias, x, m, 0, packed::panelCount(n), ScanExclusions(),
                    allowEos, "pruned");
}

/// Rows of exact zeros (all of them or most, as after a ReLU), weight
/// columns of zeros (scale 0) and values spanning many orders of magnitude.
TEST(ShortlistArgmax, ZerosAndScalesChooseWhatTheFullScanChooses) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const int64_t n = 2000, k = 96, m = 9;
  for (PanelFormat format : kFormats) {
    std::vector<float> wv = normal(n * k, rng), bias = normal(n, rng);
    for (int64_t c = 0; c < n; c += 13)
      std::fill(wv.begin() + c * k, wv.begin() + (c + 1) * k, 0.0f);
    for (int64_t c = 0; c < n; ++c)
      for (int64_t i = 0; i < k; ++i)
        wv[c * k + i] *= std::ldexp(1.0f, static_cast<int>(c % 9) - 4);
    Weight w(wv, n, k, format);
    std::vector<float> x = normal(m * k, rng);
    for (float &v : x)
      if (uniform(rng) < 0.8f)
        v = 0.0f;
    std::fill(x.begin(), x.begin() + k, 0.0f); // row 0: the biases decide
    for (int64_t i = 0; i < k; ++i)
      x[k + i] *= 1e-20f; // row 1: tiny
    std::vector<int32_t> allowEos(m, 1);
    expectSameChoices(w, bias, x, m, 0, packed::panelCount(n), ScanExclusions(),
                      allowEos, nameOf(format));
  }
}

/// The ids a scan skips are never chosen, even where they would win, and
/// a share whose every id is excluded chooses nothing.
TEST(ShortlistArgmax, ExcludedIdsAreNeverChosen) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(11);
  const int64_t n = 600, k = 32, m = 4;
  std::vector<float> x = normal(m * k, rng), wv = normal(n * k, rng),
                     bias(n, 0.0f);
  // Columns 5 (never) and 7 (eos) win every row by far.
  for (int64_t c : {5, 7})
    for (int64_t i = 0; i < k; ++i)
      wv[c * k + i] = 0.0f;
  bias[5] = bias[7] = 1e6f;
  std::vector<int32_t> never;
  for (int32_t id = 0; id < 16; ++id)
    if (id != 7)
      never.push_back(id);
  ScanExclusions excluded;
  excluded.never = never.data();
  excluded.neverCount = static_cast<int64_t>(never.size());
  excluded.eos = 7;
  std::vector<int32_t> allowEos = {0, 1, 0, 1};
  Weight w(wv, n, k, PanelFormat::F32);
  expectSameChoices(w, bias, x, m, 0, packed::panelCount(n), excluded, allowEos,
                    "all columns");
  auto sw = prepareShortlist(w.data(), w.format, bias.data(), n, k, &w.panels);
  ASSERT_NE(sw, nullptr);
  std::vector<ArgmaxScan> got(m);
  ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, 0, packed::panelCount(n),
                              excluded, allowEos.data(), got.data()));
  for (int64_t r = 0; r < m; ++r) {
    if (allowEos[r])
      EXPECT_EQ(got[r].best, 7) << r;
    else
      EXPECT_GE(got[r].best, 16) << r;
  }
  // Panel 0 alone: only eos, and only where it is allowed.
  ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, 0, 1, excluded, allowEos.data(),
                              got.data()));
  for (int64_t r = 0; r < m; ++r)
    EXPECT_EQ(got[r].best, allowEos[r] ? 7 : -1) << r;
}

/// Excluded ids anywhere in the shortlist's blocks (which are as wide as
/// 65,536 / m columns allow): the first and last columns, both sides of a
/// block's edge, runs of neighbours, listed unsorted and twice, in the
/// never-list and the banned list at once. Each would win its row by far,
/// so a bound that let one through, or a run between them left unbounded,
/// changes the choice.
TEST(ShortlistArgmax, ExclusionsAnywhereInABlock) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(17);
  const int64_t n = 9000, k = 24;
  std::vector<int32_t> never = {8999, 17, 3, 17, 4096, 4095, 8191, 0};
  // Block edges: 8,192 columns at 1 and 5 rows, 4,096 at 16, 1,632 at 40.
  std::vector<int32_t> banned = {3, 100, 101, 102, 4097, 8192, 1631, 1632};
  std::vector<float> wv = normal(n * k, rng), bias = normal(n, rng);
  for (float &v : wv)
    v *= 0.2f;
  for (int32_t id : never)
    bias[id] = 1e4f;
  for (int32_t id : banned)
    bias[id] = 1e4f;
  bias[5000] = 1e4f; // eos
  ScanExclusions excluded;
  excluded.never = never.data();
  excluded.neverCount = static_cast<int64_t>(never.size());
  excluded.banned = banned.data();
  excluded.bannedCount = static_cast<int64_t>(banned.size());
  excluded.eos = 5000;
  for (PanelFormat format : kFormats) {
    Weight w(wv, n, k, format);
    int64_t panels = packed::panelCount(n);
    for (int64_t m : {1, 5, 16, 40}) {
      std::vector<float> x = normal(m * k, rng);
      std::vector<int32_t> allowEos(m, 0);
      allowEos[0] = 1;
      std::string label = nameOf(format) + " m " + std::to_string(m);
      expectSameChoices(w, bias, x, m, 0, panels, excluded, allowEos, label);
      auto [first, end] = packed::panelShare(panels, 1, 2);
      expectSameChoices(w, bias, x, m, first, end, excluded, allowEos,
                        label + " second half");
      // Row 0 may end: eos wins it; every other row skips every excluded id.
      auto sw =
          prepareShortlist(w.data(), format, bias.data(), n, k, &w.panels);
      ASSERT_NE(sw, nullptr);
      std::vector<ArgmaxScan> got(m);
      ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, 0, panels, excluded,
                                  allowEos.data(), got.data()));
      EXPECT_EQ(got[0].best, 5000) << label;
      for (int64_t r = 1; r < m; ++r)
        EXPECT_LT(got[r].value, 1e3f) << label << " row " << r;
    }
  }
}

/// Ids excluded from the start of a share up to the first allowed one
/// (more than the shortlist recomputes) are never candidates: the call
/// still succeeds. And an excluded id's upper bound is -inf whatever an
/// earlier call left in the thread's buffers: a call that refused (every
/// id of 0..2999 tied) followed by one that excludes those ids succeeds.
TEST(ShortlistArgmax, LongExcludedRunsKeepNoCandidates) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(19);
  const int64_t n = 9000, k = 16, m = 1;
  std::vector<float> wv = normal(n * k, rng), bias(n, 0.0f), x = normal(k, rng);
  for (int64_t c = 0; c < 3000; ++c) {
    for (int64_t i = 0; i < k; ++i)
      wv[c * k + i] = 0.0f;
    bias[c] = 100.0f;
  }
  Weight w(wv, n, k, PanelFormat::F32);
  auto sw = prepareShortlist(w.data(), w.format, bias.data(), n, k, &w.panels);
  ASSERT_NE(sw, nullptr);
  std::vector<int32_t> allowEos(m, 1);
  std::vector<ArgmaxScan> got(m);
  const int64_t panels = packed::panelCount(n);
  // 3,000 exact ties: too many candidates.
  EXPECT_FALSE(shortlistArgmax(*sw, x.data(), m, 0, panels, ScanExclusions(),
                               allowEos.data(), got.data()));
  std::vector<int32_t> never;
  for (int32_t id = 0; id < 3000; ++id)
    never.push_back(id);
  ScanExclusions excluded;
  excluded.never = never.data();
  excluded.neverCount = static_cast<int64_t>(never.size());
  ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, 0, panels, excluded,
                              allowEos.data(), got.data()));
  EXPECT_GE(got[0].best, 3000);
  expectSameChoices(w, bias, x, m, 0, panels, excluded, allowEos, "ties out");
  // Everything before the block's edge (8,192 columns at one row) barred.
  for (int32_t id = 3000; id < 8192; ++id)
    never.push_back(id);
  excluded.never = never.data();
  excluded.neverCount = static_cast<int64_t>(never.size());
  ASSERT_TRUE(shortlistArgmax(*sw, x.data(), m, 0, panels, excluded,
                              allowEos.data(), got.data()));
  EXPECT_GE(got[0].best, 8192);
  expectSameChoices(w, bias, x, m, 0, panels, excluded, allowEos,
                    "first block barred");
}

/// What the bound cannot cover is refused, so the caller scans in full:
/// weights or biases that are not finite, rows that are not, rows whose
/// bounds could overflow, and rows that keep too many candidates.
TEST(ShortlistArgmax, RefusesWhatItCannotBound) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(13);
  const int64_t n = 300, k = 16, m = 2;
  std::vector<float> wv = normal(n * k, rng), bias = normal(n, rng);
  std::vector<int32_t> allowEos(m, 1);
  {
    std::vector<float> bad = wv;
    bad[17] = NAN;
    Weight w(bad, n, k, PanelFormat::F32);
    EXPECT_EQ(prepareShortlist(w.data(), w.format, bias.data(), n, k), nullptr);
    std::vector<float> badBias = bias;
    badBias[3] = INFINITY;
    Weight ok(wv, n, k, PanelFormat::F32);
    EXPECT_EQ(prepareShortlist(ok.data(), ok.format, badBias.data(), n, k),
              nullptr);
  }
  Weight w(wv, n, k, PanelFormat::F32);
  auto sw = prepareShortlist(w.data(), w.format, bias.data(), n, k, &w.panels);
  ASSERT_NE(sw, nullptr);
  std::vector<ArgmaxScan> got(m);
  for (float bad : {NAN, INFINITY, 3e38f}) {
    std::vector<float> x = normal(m * k, rng);
    x[k + 5] = bad;
    EXPECT_FALSE(shortlistArgmax(*sw, x.data(), m, 0, packed::panelCount(n),
                                 ScanExclusions(), allowEos.data(), got.data()))
        << bad;
  }
  // Every column the same: all of them stay candidates.
  const int64_t wide = 5000;
  std::vector<float> same(wide * k), column = normal(k, rng), zero(wide, 0.0f);
  for (int64_t c = 0; c < wide; ++c)
    std::copy(column.begin(), column.end(), same.begin() + c * k);
  Weight flat(same, wide, k, PanelFormat::F32);
  auto swFlat =
      prepareShortlist(flat.data(), flat.format, zero.data(), wide, k);
  ASSERT_NE(swFlat, nullptr);
  std::vector<float> x = normal(m * k, rng);
  EXPECT_FALSE(shortlistArgmax(*swFlat, x.data(), m, 0,
                               packed::panelCount(wide), ScanExclusions(),
                               allowEos.data(), got.data()));
}

TEST(ShortlistArgmax, AutoTakesItButForBFloat16OnTiles) {
  for (PanelFormat format : kFormats) {
    EXPECT_TRUE(shortlistPays(format, /*tiles=*/false)) << nameOf(format);
    EXPECT_EQ(shortlistPays(format, /*tiles=*/true),
              format != PanelFormat::BF16)
        << nameOf(format);
  }
}

TEST(ShortlistArgmax, PolicyFromTheEnvironment) {
  std::string note;
  EXPECT_EQ(shortlistPolicyFor(nullptr, note), ShortlistPolicy::Auto);
  EXPECT_EQ(shortlistPolicyFor("auto", note), ShortlistPolicy::Auto);
  EXPECT_EQ(shortlistPolicyFor("always", note), ShortlistPolicy::Always);
  EXPECT_EQ(shortlistPolicyFor("never", note), ShortlistPolicy::Never);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(shortlistPolicyFor("sometimes", note), ShortlistPolicy::Auto);
  EXPECT_NE(note.find("TFMC_GREEDY_SHORTLIST=sometimes"), std::string::npos);
}

} // namespace

/// bfloat16 where the full projection runs on AMX tiles: a shortlist given
/// no panels to recompute its candidates on refuses (the caller scans the
/// full outputs) rather than choose by the vector kernels' sums; elsewhere
/// it needs none.
TEST(ShortlistArgmax, BFloat16OnTilesRecomputesOnThePanels) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(31);
  const int64_t n = 300, k = 96, m = 2;
  std::vector<float> wv = normal(n * k, rng), bias = normal(n, rng),
                     x = normal(m * k, rng);
  Weight w(wv, n, k, PanelFormat::BF16);
  auto bare = prepareShortlist(w.data(), w.format, bias.data(), n, k);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->tilePanels, nullptr);
  std::vector<ArgmaxScan> got(m);
  std::vector<int32_t> allowEos(m, 1);
  EXPECT_EQ(shortlistArgmax(*bare, x.data(), m, 0, packed::panelCount(n),
                            ScanExclusions(), allowEos.data(), got.data()),
            !packed::bfloat16Tiles());
  auto withPanels =
      prepareShortlist(w.data(), w.format, bias.data(), n, k, &w.panels);
  EXPECT_EQ(withPanels->tilePanels,
            packed::bfloat16Tiles() ? &w.panels : nullptr);
  expectSameChoices(w, bias, x, m, 0, packed::panelCount(n), ScanExclusions(),
                    allowEos, "bf16 on tiles");
}
