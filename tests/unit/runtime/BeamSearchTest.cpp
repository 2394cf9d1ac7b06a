//===- BeamSearchTest.cpp - beam search against scripted decoders -------===//
//
// A scripted decoder whose logits go NaN after the first step (a model
// whose arithmetic overflows): the row's NaN-scored hypotheses rank above
// the one that finished with a finite score before, as torch.sort ranks
// NaN, so the line's result is NaN and gets its warning.
//
// A decoder whose logits are a function of each slot's row and of the
// tokens fed to that slot so far (what a KV cache holds): a batch whose
// rows finish at different steps gives each row the results it gets
// alone, and its reorders keep every hypothesis whose parent's slot is
// still in range there unless a sibling took it.
//
//===----------------------------------------------------------------------===//
#include "runtime/decoding/BeamSearch.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// Step 0: eos has the highest logit, tokens 4 and 5 follow; every later
/// step: all logits NaN.
class OverflowingDecoder : public IncrementalDecoder {
public:
  int64_t vocabSize() const override { return kVocab; }
  int64_t activeSlots() const override { return slots; }
  const float *step(llvm::ArrayRef<int32_t> tokens) override {
    slots = static_cast<int64_t>(tokens.size());
    logits.assign(slots * kVocab, NAN);
    if (steps++ == 0)
      for (int64_t s = 0; s < slots; ++s)
        for (int64_t v = 0; v < kVocab; ++v)
          logits[s * kVocab + v] = v == 2   ? 3.0f
                                   : v == 4 ? 2.0f
                                   : v == 5 ? 1.5f
                                            : 0.0f;
    return logits.data();
  }
  void reorder(llvm::ArrayRef<int64_t> sources) override {
    slots = static_cast<int64_t>(sources.size());
  }
  int64_t sourceTokens(int64_t) const override { return 4; }

private:
  static constexpr int64_t kVocab = 8;
  int64_t slots = 1, steps = 0;
  std::vector<float> logits;
};

TEST(BeamSearch, NotANumberRanksAboveAFiniteScore) {
  SearchOptions options;
  options.beamSize = 2;
  options.nBest = 2;
  options.maxLength = 6;
  OverflowingDecoder decoder;
  std::vector<std::vector<Hypothesis>> results =
      beamSearch(decoder, options, SpecialIds::classic(0, 1, 2, 3));
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].size(), 2u);
  EXPECT_TRUE(std::isnan(results[0][0].score));
  // The empty hypothesis that finished at step 0 ranks below it.
  EXPECT_TRUE(results[0][1].ids.empty());
  EXPECT_TRUE(std::isfinite(results[0][1].score));
  EXPECT_LT(results[0][1].score, 0);

  // The best alone is the NaN one, so the line is said to be not numbers.
  options.nBest = 1;
  OverflowingDecoder again;
  results = beamSearch(again, options, SpecialIds::classic(0, 1, 2, 3));
  ASSERT_EQ(results[0].size(), 1u);
  EXPECT_TRUE(std::isnan(results[0][0].score));
}

/// Logits from each slot's row and history (the tokens fed to it, as a KV
/// cache holds them); reorder() moves histories as BatchDecoder moves
/// caches, and checks what it is asked to move.
class HistoryDecoder : public IncrementalDecoder {
public:
  HistoryDecoder(int64_t rows, int64_t firstRow = 0) {
    for (int64_t r = 0; r < rows; ++r) {
      slotRow.push_back(firstRow + r);
      history.emplace_back();
    }
  }
  int64_t vocabSize() const override { return kVocab; }
  int64_t activeSlots() const override {
    return static_cast<int64_t>(slotRow.size());
  }
  const float *step(llvm::ArrayRef<int32_t> tokens) override {
    EXPECT_EQ(tokens.size(), slotRow.size());
    logits.assign(slotRow.size() * kVocab, 0.0f);
    for (size_t s = 0; s < slotRow.size(); ++s) {
      history[s].push_back(tokens[s]);
      uint64_t h = 1469598103934665603ull ^ uint64_t(slotRow[s]);
      for (int32_t t : history[s])
        h = (h ^ uint64_t(t)) * 1099511628211ull;
      for (int64_t v = 0; v < kVocab; ++v) {
        uint64_t x = (h ^ uint64_t(v)) * 0x9E3779B97F4A7C15ull;
        float value = static_cast<float>((x >> 40) % 1000) / 250.0f;
        // eos grows likelier with length, sooner in some rows than others.
        if (v == 2)
          value += 0.9f * static_cast<float>(history[s].size()) -
                   static_cast<float>(slotRow[s] % 4);
        logits[s * kVocab + v] = value;
      }
    }
    return logits.data();
  }
  void reorder(llvm::ArrayRef<int64_t> sources) override {
    auto n = static_cast<int64_t>(sources.size());
    for (int64_t i = 0; i < n; ++i) {
      int64_t from = sources[i];
      ASSERT_TRUE(from >= 0 && from < activeSlots());
      if (from != i) {
        ++moves;
        // A copy only for a fork (the parent's slot kept by a sibling)
        // or a parent past the new end.
        EXPECT_TRUE(from >= n || sources[from] == from)
            << "slot " << i << " copies slot " << from << " of " << n;
      }
    }
    std::vector<int64_t> rows;
    std::vector<std::vector<int32_t>> moved;
    for (int64_t from : sources) {
      rows.push_back(slotRow[from]);
      moved.push_back(history[from]);
    }
    slotRow = std::move(rows);
    history = std::move(moved);
  }
  int64_t sourceTokens(int64_t row) const override { return 3 + row % 3; }

  int64_t moves = 0;

private:
  static constexpr int64_t kVocab = 12;
  std::vector<int64_t> slotRow;
  std::vector<std::vector<int32_t>> history;
  std::vector<float> logits;
};

/// Rows that finish at different steps: each row's results are those it
/// gets alone (the slots each hypothesis's history went to were the
/// right ones), and no slot was copied but for forks and parents past the
/// batch's new end (reorder() checks).
TEST(BeamSearch, RowsFinishingApartKeepTheirSlots) {
  SearchOptions options;
  options.beamSize = 3;
  options.nBest = 3;
  options.maxLength = 12;
  SpecialIds special = SpecialIds::classic(0, 1, 2, 3);
  const int64_t rows = 9;
  HistoryDecoder batch(rows);
  std::vector<std::vector<Hypothesis>> together =
      beamSearch(batch, options, special);
  ASSERT_EQ(together.size(), static_cast<size_t>(rows));
  EXPECT_GT(batch.moves, 0);
  std::vector<size_t> lengths;
  for (int64_t r = 0; r < rows; ++r) {
    HistoryDecoder one(1, r);
    std::vector<std::vector<Hypothesis>> alone =
        beamSearch(one, options, special);
    ASSERT_EQ(alone.size(), 1u);
    ASSERT_EQ(together[r].size(), alone[0].size()) << "row " << r;
    for (size_t i = 0; i < alone[0].size(); ++i) {
      EXPECT_EQ(together[r][i].ids, alone[0][i].ids) << "row " << r;
      EXPECT_EQ(together[r][i].score, alone[0][i].score) << "row " << r;
    }
    lengths.push_back(together[r][0].ids.size());
  }
  // The rows did finish apart (the test covers rows leaving mid-batch).
  EXPECT_NE(*std::min_element(lengths.begin(), lengths.end()),
            *std::max_element(lengths.begin(), lengths.end()));
}

} // namespace
