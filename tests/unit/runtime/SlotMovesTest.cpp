//===- SlotMovesTest.cpp - a reorder of decoder slots as copies -----------===//
//
// planSlotMoves() against the parallel move it stands for: applied to slots
// holding their own numbers (and a one-slot spare), every destination must
// end up holding its source's number, each copied once, with a save only
// where a cycle needs one, and nothing beyond the destinations written.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/SlotMoves.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <random>

using namespace tfmc::runtime;

namespace {

/// Applies `sources` through planSlotMoves() to slots 0..active-1 holding
/// their own numbers; checks the outcome.
void expectMoves(const std::vector<int64_t> &sources, int64_t active) {
  SCOPED_TRACE(::testing::PrintToString(sources));
  int64_t n = static_cast<int64_t>(sources.size());
  std::vector<int64_t> slot(std::max(active, n));
  std::iota(slot.begin(), slot.end(), 0);
  int64_t spare = -100, spareHolds = -1;
  std::vector<int> writes(slot.size(), 0);
  int saves = 0;
  for (const SlotMove &m : planSlotMoves(sources, active)) {
    if (m.to == kSpareSlot) {
      ASSERT_GE(m.from, 0);
      // The spare holds one slot at a time: the last save has been read.
      spare = slot[m.from];
      spareHolds = m.from;
      ++saves;
      continue;
    }
    ASSERT_GE(m.to, 0);
    ASSERT_LT(m.to, n) << "only destinations are written";
    ASSERT_NE(sources[m.to], m.to) << "a slot that stays is not copied";
    if (m.from == kSpareSlot) {
      ASSERT_EQ(sources[m.to], spareHolds);
      slot[m.to] = spare;
    } else {
      slot[m.to] = slot[m.from];
    }
    ++writes[m.to];
  }
  int64_t moved = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(slot[i], sources[i]) << "slot " << i;
    EXPECT_EQ(writes[i], sources[i] != i ? 1 : 0) << "slot " << i;
    moved += sources[i] != i;
  }
  // A save breaks a cycle of at least two slots.
  EXPECT_LE(2 * saves, moved);
}

TEST(SlotMoves, ForksChainsAndCycles) {
  expectMoves({}, 3);
  expectMoves({0, 1, 2}, 3);
  expectMoves({1, 0}, 2);             // a swap: one save
  expectMoves({1, 2, 0}, 3);          // a 3-cycle
  expectMoves({0, 0, 0, 0}, 4);       // one hypothesis forks into four
  expectMoves({1, 1, 3, 3}, 4);       // two forks overwrite their sources
  expectMoves({2, 3}, 5);             // greedy compaction: rows leave
  expectMoves({1, 0, 3, 2, 2}, 5);    // two swaps, one with a fork
  expectMoves({3, 0, 1, 2, 0, 4}, 6); // a cycle with a tree on it
}

TEST(SlotMoves, RandomReorders) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    int64_t active = 1 + rng() % 40, n = rng() % (active + 8);
    std::vector<int64_t> sources(n);
    int kind = trial % 3;
    for (int64_t i = 0; i < n; ++i) {
      if (kind == 0) // any source
        sources[i] = rng() % active;
      else if (kind == 1) // mostly staying, some forks
        sources[i] = i < active && rng() % 3 ? i : rng() % active;
      else // a permutation of the first n (where there are that many)
        sources[i] = i;
    }
    if (kind == 2 && n <= active)
      std::shuffle(sources.begin(), sources.end(), rng);
    for (int64_t &s : sources)
      s = std::min(s, active - 1);
    expectMoves(sources, active);
    if (HasFatalFailure())
      return;
  }
}

} // namespace
