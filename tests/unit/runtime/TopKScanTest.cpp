//===- TopKScanTest.cpp - beam candidates over blocks of logits -----------===//
#include "runtime/kernels/TopKScan.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// The row's best `capacity` allowed ids, sorted by (value desc, id asc),
/// by a plain sort of every allowed id (no NaNs in the row).
std::vector<TopKCandidate> sortedAllowed(const std::vector<float> &row,
                                         const ScanExclusions &excluded,
                                         int64_t capacity) {
  std::vector<TopKCandidate> all;
  for (int64_t v = 0; v < static_cast<int64_t>(row.size()); ++v)
    if (!excluded.excludes(v))
      all.push_back({row[v], static_cast<int32_t>(v)});
  std::stable_sort(all.begin(), all.end(),
                   [](const TopKCandidate &x, const TopKCandidate &y) {
                     return x.value > y.value;
                   });
  all.resize(std::min<int64_t>(capacity, all.size()));
  return all;
}

double logSumExp(const std::vector<float> &row) {
  double max = -std::numeric_limits<double>::infinity();
  for (float v : row)
    max = std::max<double>(max, v);
  double sum = 0;
  for (float v : row)
    sum += std::exp(double(v) - max);
  return max + std::log(sum);
}

TopKScan scanInBlocks(const std::vector<float> &row, int64_t width,
                      const ScanExclusions &excluded, int64_t capacity) {
  TopKScan scan;
  scan.reset(capacity);
  auto vocab = static_cast<int64_t>(row.size());
  for (int64_t first = 0; first < vocab; first += width)
    scan.add(row.data() + first, first, std::min(width, vocab - first),
             excluded);
  return scan;
}

/// Candidates and shift against a plain sort and a double-precision
/// log-sum-exp; blocks of any multiple of the chunk give the same bits as
/// the whole row. Rows with ties (values on a coarse grid), exclusions
/// (never ids, eos barred or not, banned ids), capacities larger than
/// what is allowed.
TEST(TopKScan, MatchesASortAndBlocksGiveTheSameBits) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t vocab = 1 + rng() % 1500;
    std::vector<float> row(vocab);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (float &v : row)
      v = trial % 3 == 0 ? std::round(normal(rng)) : normal(rng);
    std::vector<int32_t> never = {0, 1};
    std::vector<int32_t> banned;
    if (trial % 4 == 0)
      banned = {static_cast<int32_t>(rng() % vocab),
                static_cast<int32_t>(rng() % vocab)};
    ScanExclusions excluded;
    excluded.never = never.data();
    excluded.neverCount = 2;
    excluded.eos = 2;
    excluded.allowEos = trial % 2 == 0;
    excluded.banned = banned.data();
    excluded.bannedCount = static_cast<int64_t>(banned.size());
    int64_t capacity = 1 + rng() % 12;

    TopKScan whole = scanInBlocks(row, vocab, excluded, capacity);
    std::vector<TopKCandidate> expected =
        sortedAllowed(row, excluded, capacity);
    ASSERT_EQ(whole.best().size(), expected.size()) << "trial " << trial;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(whole.best()[i].id, expected[i].id) << "trial " << trial;
      EXPECT_EQ(whole.best()[i].value, expected[i].value);
    }
    double reference = logSumExp(row);
    EXPECT_NEAR(whole.shift(), reference, 2e-6 * std::max(1.0, std::fabs(reference)))
        << "trial " << trial;
    for (int64_t width : {TopKScan::kChunk, 2 * TopKScan::kChunk,
                          5 * TopKScan::kChunk}) {
      TopKScan blocks = scanInBlocks(row, width, excluded, capacity);
      EXPECT_EQ(blocks.shift(), whole.shift())
          << "trial " << trial << ", blocks of " << width;
      ASSERT_EQ(blocks.best().size(), whole.best().size());
      for (size_t i = 0; i < whole.best().size(); ++i) {
        EXPECT_EQ(blocks.best()[i].id, whole.best()[i].id);
        EXPECT_EQ(blocks.best()[i].value, whole.best()[i].value);
      }
    }
  }
}

/// A chunk of -inf adds nothing to the sum (the row's shift is that of
/// its finite part); a NaN anywhere makes the shift NaN.
TEST(TopKScan, MinusInfinityChunksAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row(3 * TopKScan::kChunk, -inf);
  std::vector<float> finite;
  for (int64_t v = TopKScan::kChunk; v < 2 * TopKScan::kChunk; ++v) {
    row[v] = 0.01f * static_cast<float>(v % 97);
    finite.push_back(row[v]);
  }
  ScanExclusions none;
  TopKScan scan = scanInBlocks(row, TopKScan::kChunk, none, 3);
  EXPECT_NEAR(scan.shift(), logSumExp(finite), 1e-5);
  ASSERT_EQ(scan.best().size(), 3u);
  EXPECT_EQ(scan.best()[0].value, 0.96f);
  row[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(scanInBlocks(row, row.size(), none, 3).shift()));
}

/// The shift's chunk sums give the same bits in every variant this CPU
/// runs (the baseline's calls fmaf where the others have vfmadd): the
/// scan's sums do not depend on the host's instruction set. Rows of random
/// spread, some ids at -87 and below (exp's clamp) and counts that are not
/// multiples of the vectors' eight or sixteen.
TEST(TopKScan, ChunkSumsHaveTheSameBitsInEveryVariant) {
  using detail::SumExpVariant;
  std::vector<SumExpVariant> variants = {SumExpVariant::Generic};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    variants.push_back(SumExpVariant::Avx2);
  if (__builtin_cpu_supports("avx512f"))
    variants.push_back(SumExpVariant::Avx512);
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> counts(1, 256);
  for (int row = 0; row < 4000; ++row) {
    int count = row % 4 == 0 ? 256 : counts(rng);
    float spread = 0.5f + row % 7 * 4.0f;
    std::vector<float> values(count);
    for (float &v : values)
      v = normal(rng) * spread;
    if (row % 5 == 0)
      values[count / 2] = -200.0f;
    float max = *std::max_element(values.begin(), values.end());
    float want = detail::sumExpWith(variants[0], values.data(), count, max);
    for (size_t i = 1; i < variants.size(); ++i) {
      float got = detail::sumExpWith(variants[i], values.data(), count, max);
      ASSERT_EQ(0, std::memcmp(&got, &want, sizeof(float)))
          << "row " << row << " (" << count << " values), variant " << i << ": "
          << got << " against " << want;
    }
  }
}

} // namespace
