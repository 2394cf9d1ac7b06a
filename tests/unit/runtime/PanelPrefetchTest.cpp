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
// a tile, none past the group, and a tile's requests are spread over its
// steps: never more lines at a step than its share needs a step, rounded
// up.
TEST(PanelPrefetch, SharesCoverTheGroupOnceSpreadOverTheSteps) {
  struct Case {
    int64_t bytes, tiles, steps;
  };
  // A float32 pair at k = 512 over 8 tiles (64 rows) and 3 (24); k = 2048
  // over 11 AVX2 tiles; an int8 panel over 16 tiles; a sparse tile with
  // fewer steps than lines; a group that is not whole lines; more tiles
  // than a whole number of lines each (127 over 128 lines: the last tile
  // gets none) and more tiles than lines.
  for (Case c :
       {Case{65536, 8, 512}, Case{65536, 3, 512}, Case{131072, 11, 2048},
        Case{8192, 16, 128}, Case{65536, 3, 40}, Case{1000, 7, 13},
        Case{8192, 127, 128}, Case{16384, 85, 128}, Case{640, 16, 8}}) {
    SCOPED_TRACE(testing::Message() << c.bytes << " bytes, " << c.tiles
                                    << " tiles, " << c.steps << " steps");
    int64_t lines = (c.bytes + 63) / 64;
    int64_t perTile = (lines + c.tiles - 1) / c.tiles;
    std::vector<int64_t> all;
    for (int64_t t = 0; t < c.tiles; ++t) {
      auto steps = schedule(c.bytes, c.tiles, t, c.steps);
      int64_t mine =
          std::max<int64_t>(0, std::min(perTile, lines - t * perTile));
      int64_t most = (mine + c.steps - 1) / c.steps;
      std::vector<int64_t> got;
      for (const auto &step : steps) {
        EXPECT_LE(int64_t(step.size()), most);
        got.insert(got.end(), step.begin(), step.end());
      }
      // The tile's lines, in order: perTile from where the last tile's
      // ended.
      ASSERT_EQ(int64_t(got.size()), mine);
      for (int64_t i = 0; i < mine; ++i)
        EXPECT_EQ(got[i], (t * perTile + i) * 64);
      all.insert(all.end(), got.begin(), got.end());
    }
    // Every line of the group, once, and nothing past it.
    ASSERT_EQ(int64_t(all.size()), lines);
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < lines; ++i)
      EXPECT_EQ(all[i], i * 64);
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
