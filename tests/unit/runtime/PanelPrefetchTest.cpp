//===- PanelPrefetchTest.cpp - the row tiles' shares of the panels ahead --===//
#include "runtime/kernels/PanelPrefetch.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace tfmc::runtime::packed;

namespace {

/// The lines (offsets from the group's start) tile `index` of `tiles`
/// requests at each of its `steps` steps.
std::vector<std::vector<int64_t>> schedule(int64_t bytes, int64_t tiles,
                                           int64_t index, int64_t steps) {
  // Room for the last share, which may run past the group.
  std::vector<char> group(bytes + 64 * tiles);
  ShareAhead share(group.data(), bytes, tiles, index, steps);
  std::vector<std::vector<int64_t>> lines(steps);
  for (int64_t s = 0; s < steps; ++s)
    share.step(
        [&](const char *line) { lines[s].push_back(line - group.data()); });
  return lines;
}

// Every line of the group is requested once, by one tile, in order within
// a tile, and a tile's requests are spread over its steps: never more
// lines at a step than its share needs a step, rounded up.
TEST(PanelPrefetch, SharesCoverTheGroupOnceSpreadOverTheSteps) {
  struct Case {
    int64_t bytes, tiles, steps;
  };
  // A float32 pair at k = 512 over 8 tiles (64 rows) and 3 (24); k = 2048
  // over 11 AVX2 tiles; an int8 panel over 16 tiles; a sparse tile with
  // fewer steps than lines; shares that are not whole lines.
  for (Case c :
       {Case{65536, 8, 512}, Case{65536, 3, 512}, Case{131072, 11, 2048},
        Case{8192, 16, 128}, Case{65536, 3, 40}, Case{1000, 7, 13}}) {
    SCOPED_TRACE(testing::Message() << c.bytes << " bytes, " << c.tiles
                                    << " tiles, " << c.steps << " steps");
    std::vector<int64_t> all;
    for (int64_t t = 0; t < c.tiles; ++t) {
      auto lines = schedule(c.bytes, c.tiles, t, c.steps);
      int64_t share = (c.bytes / c.tiles + 63) / 64 * 64;
      int64_t most = (share / 64 + c.steps - 1) / c.steps;
      int64_t last = -1;
      for (const auto &step : lines) {
        EXPECT_LE(int64_t(step.size()), most);
        for (int64_t line : step) {
          EXPECT_EQ(line % 64, 0);
          EXPECT_GT(line, last);
          last = line;
          all.push_back(line);
        }
      }
      // The tile's whole share, starting where the tile before left off.
      ASSERT_FALSE(lines.empty());
      auto first = std::find_if(lines.begin(), lines.end(),
                                [](const auto &s) { return !s.empty(); });
      ASSERT_NE(first, lines.end());
      EXPECT_EQ(first->front(), t * share);
      EXPECT_EQ(last, t * share + share - 64);
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
    // Every line of the group (the last share may run past it).
    for (int64_t line = 0; line < c.bytes; line += 64)
      EXPECT_TRUE(std::binary_search(all.begin(), all.end(), line)) << line;
  }
}

// A share is requested evenly, not at the start: a line every 4 steps
// when it has a quarter as many lines as steps, the first at once.
TEST(PanelPrefetch, ASharesRequestsArePaced) {
  auto lines = schedule(65536, 8, 3, 512); // 128 lines over 512 steps
  int64_t firstHalf = 0;
  for (int64_t s = 0; s < 256; ++s)
    firstHalf += lines[s].size();
  EXPECT_EQ(firstHalf, 64);
  for (int64_t s = 0; s < 512; ++s)
    EXPECT_EQ(lines[s].size(), s % 4 == 0 ? 1u : 0u) << s;
}

// A tile with no steps (every row of its inputs zero) requests nothing.
TEST(PanelPrefetch, NoStepsNoRequests) {
  std::vector<char> group(65536);
  ShareAhead share(group.data(), 65536, 8, 0, 0);
  int requests = 0;
  share.step([&](const char *) { ++requests; });
  EXPECT_EQ(requests, 0);
}

} // namespace
