//===- BeamSearchTest.cpp - beam search's ranking of NaN scores ----------===//
//
// A scripted decoder whose logits go NaN after the first step (a model
// whose arithmetic overflows): the row's NaN-scored hypotheses rank above
// the one that finished with a finite score before, as torch.sort ranks
// NaN, so the line's result is NaN and gets its warning.
//
//===----------------------------------------------------------------------===//
#include "runtime/decoding/BeamSearch.h"

#include "gtest/gtest.h"

#include <cmath>
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

} // namespace
