//===- ArgmaxScanTest.cpp - greedy choice over blocks of logits -----------===//
#include "runtime/kernels/ArgmaxScan.h"
#include "compiler/Conversion/Passes.h"
#include "runtime/decoding/GreedySearch.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// The fused projection's scan, fed in blocks of any width, chooses what
/// greedy search's bestToken() chooses over the whole row: ties (lowest
/// id), NaN (kept only when it is the first allowed token), infinities,
/// special ids inside and outside the 64-wide vector chunks, eos allowed
/// or not.
TEST(ArgmaxScan, BlocksChooseWhatTheWholeRowScanChooses) {
  std::mt19937 rng(11);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {-inf, -1.5f, -0.0f, 0.0f, 0.25f, 2.0f, 2.0f, inf, nan};
  std::uniform_int_distribution<int> pick(0, 8);
  std::vector<SpecialIds> layouts = {SpecialIds::classic(0, 1, 2, 3),
                                     SpecialIds::classic(70, 130, 65, 0)};
  SpecialIds marian = SpecialIds::classic(299, 0, 0, 1);
  marian.never = {299};
  layouts.push_back(marian);
  for (int trial = 0; trial < 600; ++trial) {
    int64_t vocab = 1 + rng() % 300;
    std::vector<float> row(vocab);
    // Mostly one ordinary value each, sometimes the corner cases.
    std::normal_distribution<float> normal;
    for (float &v : row)
      v = rng() % 8 == 0 ? values[pick(rng)] : normal(rng);
    if (trial % 3 == 0)
      for (float &v : row)
        v = v == v ? v : 0.5f; // no NaN in a third of the rows
    const SpecialIds &special = layouts[trial % layouts.size()];
    bool allowEos = trial % 2 == 0;
    int32_t expected = bestToken(row.data(), vocab, special, allowEos, {});
    ScanExclusions excluded;
    excluded.never = special.never.data();
    excluded.neverCount = static_cast<int64_t>(special.never.size());
    excluded.eos = special.eos;
    excluded.allowEos = allowEos;
    for (int64_t width : {int64_t(1), int64_t(7), int64_t(64), int64_t(96),
                          vocab}) {
      ArgmaxScan scan;
      for (int64_t first = 0; first < vocab; first += width)
        scan.add(row.data() + first, first,
                 std::min(width, vocab - first), excluded);
      EXPECT_EQ(scan.best, expected)
          << "trial " << trial << ", vocab " << vocab << ", blocks of "
          << width;
      // The choice handed to the search: the same id, unless its value
      // is NaN or infinite.
      bool finite = expected >= 0 && std::isfinite(row[expected]);
      EXPECT_EQ(scan.choice(),
                expected < 0 || finite ? expected : kNotFiniteChoice)
          << "trial " << trial;
    }
  }
}

/// The compiled scan (tfm-to-loops' argmax_scan) writes the same code.
TEST(ArgmaxScan, NotFiniteChoiceIsTheCompilersCode) {
  EXPECT_EQ(kNotFiniteChoice, mlir::tfm::kNotFiniteChoice);
  EXPECT_LT(kNotFiniteChoice, -1); // never an id, nor "nothing allowed"
}

TEST(ArgmaxScan, NothingAllowedChoosesNothing) {
  const int32_t never[] = {0, 1};
  ScanExclusions excluded{never, 2, /*eos=*/2, /*allowEos=*/false};
  float row[3] = {1.0f, 2.0f, 3.0f};
  ArgmaxScan scan;
  scan.add(row, 0, 3, excluded);
  EXPECT_EQ(scan.best, -1);
  EXPECT_EQ(scan.choice(), -1);
}

/// A block's excluded ids, as the shortlist cuts its bound runs at them:
/// from all three lists, unsorted and repeated, in increasing order, each
/// once, only those inside [first, end), eos only when it is barred.
TEST(ArgmaxScan, ExcludedIdsOfABlockAreSortedAndDistinct) {
  const int32_t never[] = {40, 3, 40, 9, 0};
  const int32_t banned[] = {9, 12, 39, 100};
  ScanExclusions excluded{never, 5, /*eos=*/20, /*allowEos=*/false, banned, 4};
  std::vector<int64_t> ids = {77}; // replaced, not appended to
  excluded.excludedIn(3, 40, ids);
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 9, 12, 20, 39}));
  excluded.allowEos = true;
  excluded.excludedIn(0, 41, ids);
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 3, 9, 12, 39, 40}));
  excluded.excludedIn(41, 100, ids);
  EXPECT_TRUE(ids.empty());
  // Whatever excludedIn lists, excludes() says, and nothing else.
  excluded.allowEos = false;
  excluded.excludedIn(0, 128, ids);
  for (int64_t id = 0; id < 128; ++id)
    EXPECT_EQ(std::count(ids.begin(), ids.end(), id), excluded.excludes(id))
        << id;
}

} // namespace
