//===- RowTilesTest.cpp - row tiles and the k steps they keep -------------===//
#include "runtime/kernels/RowTiles.h"
#include "runtime/kernels/PackedGemm.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

#include <immintrin.h>

using namespace tfmc::runtime::packed;

namespace {

// Planning runs AVX2 code, as the kernels it serves do.
#define SKIP_WITHOUT_AVX2()                                                    \
  if (!availableOnThisCpu())                                                   \
  GTEST_SKIP() << "needs AVX2 and FMA"

/// The steps of `t` as a list (all k when it keeps every step).
std::vector<int32_t> stepsOf(const RowTiles &plan, const RowTile &t,
                             int64_t k) {
  const int32_t *steps = plan.stepsOf(t);
  std::vector<int32_t> out;
  for (int64_t s = 0; s < RowTiles::countOf(t, k); ++s)
    out.push_back(steps ? steps[s] : static_cast<int32_t>(s));
  return out;
}

TEST(RowTiles, SixRowsWhileSixAreLeftThenFourTwoOne) {
  SKIP_WITHOUT_AVX2();
  RowTiles plan;
  std::vector<float> x(13 * 4, 1.0f);
  planRowTiles(x.data(), 13, 4, true, plan, kNarrowTileRows);
  std::vector<std::pair<int64_t, int>> got;
  for (const RowTile &t : plan.tiles)
    got.push_back({t.row, t.rows});
  EXPECT_EQ(got,
            (std::vector<std::pair<int64_t, int>>{{0, 6}, {6, 6}, {12, 1}}));
  planRowTiles(x.data(), 7, 4, true, plan, kNarrowTileRows);
  ASSERT_EQ(plan.tiles.size(), 2u);
  EXPECT_EQ(plan.tiles[1].rows, 1);
  planRowTiles(x.data(), 5, 4, true, plan, kNarrowTileRows);
  ASSERT_EQ(plan.tiles.size(), 2u);
  EXPECT_EQ(plan.tiles[0].rows, 4);
}

TEST(RowTiles, EightRowTilesForTheWideKernels) {
  SKIP_WITHOUT_AVX2();
  RowTiles plan;
  std::vector<float> x(23 * 4, 1.0f);
  planRowTiles(x.data(), 23, 4, true, plan, kWideTileRows);
  std::vector<std::pair<int64_t, int>> got;
  for (const RowTile &t : plan.tiles)
    got.push_back({t.row, t.rows});
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, int>>{
                     {0, 8}, {8, 8}, {16, 4}, {20, 2}, {22, 1}}));
}

/// A tile keeps exactly the steps where one of its rows is non-zero (NaN
/// included, -0 not), in order, across the 8-wide blocks and the tail.
TEST(RowTiles, TilesKeepTheStepsWhereARowIsNonZero) {
  SKIP_WITHOUT_AVX2();
  const int64_t k = 37, m = 8; // tiles: rows 0-5, rows 6-7
  std::vector<float> x(m * k, 0.0f);
  x[0 * k + 3] = 1.5f;
  x[5 * k + 9] = -2.0f;
  x[2 * k + 36] = NAN; // in the tail
  x[1 * k + 17] = NAN; // in an 8-wide block
  x[4 * k + 20] = -0.0f;
  x[6 * k + 0] = 1e-30f;
  x[7 * k + 35] = INFINITY;
  RowTiles plan;
  planRowTiles(x.data(), m, k, true, plan, kNarrowTileRows);
  ASSERT_EQ(plan.tiles.size(), 2u);
  EXPECT_EQ(stepsOf(plan, plan.tiles[0], k),
            (std::vector<int32_t>{3, 9, 17, 36}));
  EXPECT_EQ(stepsOf(plan, plan.tiles[1], k), (std::vector<int32_t>{0, 35}));
}

TEST(RowTiles, AllZeroTileKeepsNoStep) {
  SKIP_WITHOUT_AVX2();
  const int64_t k = 16;
  std::vector<float> x(6 * k, 0.0f);
  RowTiles plan;
  planRowTiles(x.data(), 6, k, true, plan, kNarrowTileRows);
  ASSERT_EQ(plan.tiles.size(), 1u);
  EXPECT_EQ(plan.tiles[0].count, 0);
}

/// Little to skip: every step is kept, without a list.
TEST(RowTiles, DenseRowsKeepEveryStep) {
  SKIP_WITHOUT_AVX2();
  const int64_t k = 64;
  RowTiles plan;
  // No zero at all (a layer norm's output).
  std::vector<float> dense(12 * k, 0.5f);
  planRowTiles(dense.data(), 12, k, true, plan, kNarrowTileRows);
  for (const RowTile &t : plan.tiles)
    EXPECT_LT(t.count, 0);
  // Mostly zeros, but the first tile keeps more than 7/8 of its steps: it
  // and the tiles after it keep all of them.
  std::vector<float> x(12 * k, 0.0f);
  for (int64_t c = 0; c < k - 4; ++c)
    x[(c % 6) * k + c] = 1.0f;
  x[6 * k + 1] = 1.0f;
  planRowTiles(x.data(), 12, k, true, plan, kNarrowTileRows);
  ASSERT_EQ(plan.tiles.size(), 2u);
  EXPECT_LT(plan.tiles[0].count, 0);
  EXPECT_LT(plan.tiles[1].count, 0);
  // Exactly 7/8 kept is still a list.
  std::fill(x.begin(), x.end(), 0.0f);
  for (int64_t c = 0; c < k - k / 8; ++c)
    x[(c % 6) * k + c] = 1.0f;
  planRowTiles(x.data(), 6, k, true, plan, kNarrowTileRows);
  EXPECT_EQ(plan.tiles[0].count, k - k / 8);
  // Not asked to skip.
  planRowTiles(x.data(), 6, k, false, plan, kNarrowTileRows);
  EXPECT_LT(plan.tiles[0].count, 0);
  // No rows.
  planRowTiles(nullptr, 0, k, true, plan, kNarrowTileRows);
  EXPECT_TRUE(plan.tiles.empty());
}

/// What decides whether a large layer goes to the packed kernels: the first
/// row has zeros and the first tile keeps at most 7/8 of its steps.
TEST(RowTiles, WorthSkippingLooksAtTheFirstRowAndTile) {
  SKIP_WITHOUT_AVX2();
  const int64_t k = 64, m = 12;
  std::vector<float> x(m * k, 0.0f);
  for (int64_t r = 0; r < m; ++r)
    x[r * k + r] = 1.0f;
  EXPECT_TRUE(worthSkipping(x.data(), m, k));
  EXPECT_TRUE(worthSkipping(x.data(), 1, k));
  EXPECT_FALSE(worthSkipping(x.data(), 0, k));
  // Half zeros in every row, at different places: the first tile keeps
  // all its steps.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c)
      x[r * k + c] = (c + r) % 2 == 0 || c % 7 == r % 7 ? 1.0f : 0.0f;
  EXPECT_FALSE(worthSkipping(x.data(), m, k));
  // No zeros in the first row.
  std::fill(x.begin(), x.begin() + k, 2.0f);
  EXPECT_FALSE(worthSkipping(x.data(), m, k));
}

/// A bfloat16 layer's steps are pairs of k (32-bit words): a pair is zero
/// only where both of its values are ±0, whatever the floating-point mode.
/// A pair whose odd value is zero and even one is not reads as a subnormal
/// float; with subnormals taken as zero (MXCSR DAZ, as -ffast-math
/// programs set it) a float comparison would call it zero and skip it.
TEST(RowTiles, PairsAreZeroOnlyWhenBothValuesAreZero) {
  SKIP_WITHOUT_AVX2();
  const int64_t k = 21, m = 3; // 8-wide blocks and a tail
  const unsigned saved = _mm_getcsr();
  for (unsigned mode : {saved, saved | 0x8040u}) { // + FTZ and DAZ
    _mm_setcsr(mode);
    std::vector<uint32_t> pairs(m * k, 0);
    for (int64_t c = 0; c < k; ++c) {
      if (c % 4 == 1)
        pairs[c] = 0x00003f80u; // even k 1.0, odd k 0
      if (c % 4 == 2)
        pairs[k + c] = 0x3f800000u; // odd k 1.0 in the second row
      if (c % 4 == 3)
        pairs[2 * k + c] = 0x80008000u; // -0 and -0: zero
    }
    pairs[0] = 0x00000001u; // even k the smallest subnormal bfloat16
    RowTiles plan;
    planPairTiles(pairs.data(), m, k, true, plan, kNarrowTileRows);
    _mm_setcsr(saved);
    ASSERT_EQ(plan.tiles.size(), 2u); // rows 0-1, row 2
    std::vector<int32_t> want;
    for (int32_t c = 0; c < k; ++c)
      if (c == 0 || c % 4 == 1 || c % 4 == 2)
        want.push_back(c);
    EXPECT_EQ(stepsOf(plan, plan.tiles[0], k), want) << "mode " << mode;
    EXPECT_EQ(stepsOf(plan, plan.tiles[1], k), std::vector<int32_t>())
        << "mode " << mode;
  }
}

} // namespace
