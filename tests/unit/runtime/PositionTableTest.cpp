//===- PositionTableTest.cpp - sinusoidal encodings, filled on demand -----===//
//
// PositionTable against the closed form computed here in long double, and
// its promise: rows are computed only when ensure() reaches them (a table of
// 50 million positions costs nothing until used), callers on several
// threads at once all see finished rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/PositionTable.h"

#include "gtest/gtest.h"

#include <cmath>
#include <thread>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos of the same.
float expected(int64_t p, int64_t column, int64_t d) {
  int64_t even = column - column % 2;
  long double angle =
      (long double)p / std::pow(10000.0L, (long double)even / (long double)d);
  return static_cast<float>(column % 2 ? std::cos(angle) : std::sin(angle));
}

void expectRows(const PositionTable &t, int64_t from, int64_t to, int64_t d) {
  for (int64_t p = from; p < to; ++p)
    for (int64_t c = 0; c < d; ++c)
      ASSERT_NEAR(t.data()[p * d + c], expected(p, c, d), 2e-7)
          << "position " << p << " column " << c;
}

TEST(PositionTable, RowsMatchTheClosedForm) {
  for (int64_t d : {1, 2, 7, 64}) {
    PositionTable t(300, d);
    t.ensure(300);
    EXPECT_EQ(t.rows(), 300);
    expectRows(t, 0, 300, d);
  }
}

TEST(PositionTable, RowsAreComputedOnlyWhenFirstNeeded) {
  // 6.4 GB of address space; only what ensure() reaches is written.
  const int64_t maxLen = 50'000'000, d = 32;
  PositionTable t(maxLen, d);
  EXPECT_EQ(t.rows(), 0);
  t.ensure(10);
  EXPECT_EQ(t.rows(), 10);
  expectRows(t, 0, 10, d);
  // The row after the last one filled is still the fresh zeros.
  for (int64_t c = 0; c < d; ++c)
    EXPECT_EQ(t.data()[10 * d + c], 0.0f);
  // Fewer rows than there are: nothing changes; more: only the new ones.
  t.ensure(3);
  EXPECT_EQ(t.rows(), 10);
  t.ensure(4096);
  EXPECT_EQ(t.rows(), 4096);
  expectRows(t, 4000, 4096, d);
  // Beyond max_len: up to max_len.
  PositionTable small(5, 4);
  small.ensure(1'000'000);
  EXPECT_EQ(small.rows(), 5);
  expectRows(small, 0, 5, 4);
}

TEST(PositionTable, CallersOnSeveralThreadsSeeFinishedRows) {
  const int64_t d = 16;
  PositionTable t(20000, d);
  std::vector<std::thread> callers;
  std::vector<int> ok(8, 0);
  for (int i = 0; i < 8; ++i)
    callers.emplace_back([&, i] {
      int64_t need = 2500 * (i + 1);
      t.ensure(need);
      // Every row this caller asked for is finished when ensure() returns.
      bool good = t.rows() >= need;
      for (int64_t p = need - 1; good && p >= need - 50; --p)
        for (int64_t c = 0; c < d; ++c)
          good = good &&
                 std::fabs(t.data()[p * d + c] - expected(p, c, d)) <= 2e-7f;
      ok[i] = good;
    });
  for (std::thread &c : callers)
    c.join();
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(ok[i]) << "caller " << i;
  EXPECT_EQ(t.rows(), 20000);
  expectRows(t, 0, 20000, d);
}

} // namespace
