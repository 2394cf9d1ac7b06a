//===- GreedySearchTest.cpp - the greedy step's argmax --------------------===//
#include "runtime/decoding/GreedySearch.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// Rows without banned tokens take a vectorised argmax; a banned id beyond
/// the vocabulary bans nothing but takes the token-by-token scan of
/// DESIGN.md's rule. Both must agree on every row: ties (lowest id), NaN
/// (kept only when it is the first allowed token), infinities, signed
/// zeros, special ids inside and outside 8-wide blocks, eos allowed or not.
TEST(GreedySearch, VectorArgmaxAgreesWithTheTokenByTokenScan) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(0, 9);
  const float inf = std::numeric_limits<float>::infinity();
  const float values[] = {-inf, -1.5f, -0.0f, 0.0f, 0.25f, 2.0f, 2.0f, inf};
  std::vector<SpecialIds> layouts = {SpecialIds::classic(0, 1, 2, 3),
                                     SpecialIds::classic(5, 9, 17, 0),
                                     SpecialIds::classic(3, 2, 1, 0)};
  // Marian's: no bos, only pad (the last id) never chosen, eos 0.
  SpecialIds marian = SpecialIds::classic(18, 0, 0, 1);
  marian.never = {18};
  layouts.push_back(marian);
  // Three banned ids in one 8-wide block and one in the next.
  SpecialIds many = SpecialIds::classic(3, 4, 9, 0);
  many.never = {3, 4, 6, 12};
  layouts.push_back(many);
  int checked = 0;
  for (int64_t vocab : {1, 2, 3, 4, 7, 8, 9, 16, 19, 33, 4000})
    for (SpecialIds special : layouts)
      for (int trial = 0; trial < 200; ++trial)
        for (bool allowEos : {false, true}) {
          std::vector<float> row(vocab);
          for (float &x : row) {
            int p = pick(rng);
            x = p < 8 ? values[p] : p == 8 ? std::nanf("") : 0.125f * pick(rng);
          }
          if (trial % 3 == 0) // mostly plain numbers, as a model gives
            for (float &x : row)
              x = 0.5f * pick(rng);
          std::vector<int32_t> noBan = {static_cast<int32_t>(vocab)};
          int32_t fast = bestToken(row.data(), vocab, special, allowEos);
          int32_t scan = bestToken(row.data(), vocab, special, allowEos, noBan);
          ASSERT_EQ(fast, scan)
              << "vocab " << vocab << " trial " << trial << " pad "
              << special.pad << " eos allowed " << allowEos;
          ++checked;
        }
  EXPECT_GT(checked, 10000);
}

TEST(GreedySearch, NothingAllowedGivesMinusOne) {
  std::vector<float> row = {1.0f, 2.0f};
  EXPECT_EQ(bestToken(row.data(), 2, SpecialIds::classic(0, 1, 2, 3), false), -1);
  EXPECT_EQ(bestToken(row.data(), 0, SpecialIds::classic(0, 1, 2, 3), true), -1);
}

TEST(GreedySearch, TiesGoToTheLowestAllowedId) {
  std::vector<float> row(40, 1.0f);
  row[0] = row[1] = 9.0f; // pad and bos: never chosen
  row[21] = row[30] = 5.0f;
  EXPECT_EQ(bestToken(row.data(), 40, SpecialIds::classic(0, 1, 2, 3), true), 21);
  row[2] = 5.0f; // eos, when allowed, is lower
  EXPECT_EQ(bestToken(row.data(), 40, SpecialIds::classic(0, 1, 2, 3), true), 2);
  EXPECT_EQ(bestToken(row.data(), 40, SpecialIds::classic(0, 1, 2, 3), false), 21);
}

} // namespace
