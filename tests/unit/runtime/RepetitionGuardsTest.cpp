//===- RepetitionGuardsTest.cpp - the repetition penalty's edges
//------------===//
#include "runtime/decoding/RepetitionGuards.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tfmc::runtime;

namespace {

constexpr float kMax = std::numeric_limits<float>::max();

TEST(RepetitionPenalty, DividesPositiveAndMultipliesOtherLogits) {
  std::vector<float> logits{2.0f, -2.0f, 0.0f, 5.0f};
  penalizeRepeats(logits.data(), {0, 1, 2, 0}, 2.0);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 0.0f, 5.0f}));
}

TEST(RepetitionPenalty, ExtremePenaltiesKeepLogitsFinite) {
  // Without the clamp these become +-inf, and the log-softmax NaN.
  std::vector<float> logits{1e10f, -1e10f, 3.0f};
  penalizeRepeats(logits.data(), {0, 1}, 1e-30);
  EXPECT_EQ(logits[0], kMax);
  EXPECT_FLOAT_EQ(logits[1], -1e-20f);
  EXPECT_EQ(logits[2], 3.0f);
  std::vector<float> big{1e10f, -1e10f};
  penalizeRepeats(big.data(), {0, 1}, 1e30);
  EXPECT_FLOAT_EQ(big[0], 1e-20f);
  EXPECT_EQ(big[1], -kMax);
}

TEST(RepetitionPenalty, OnlyNormalFloat32PenaltiesAreUsable) {
  EXPECT_TRUE(isUsablePenalty(1.0));
  EXPECT_TRUE(isUsablePenalty(1.2));
  EXPECT_TRUE(isUsablePenalty(0.5));
  EXPECT_TRUE(isUsablePenalty(1e-37));
  EXPECT_FALSE(isUsablePenalty(1e-40)); // subnormal in float32
  EXPECT_FALSE(isUsablePenalty(1e-50)); // rounds to zero
  EXPECT_FALSE(isUsablePenalty(1e39));  // rounds to infinity
  EXPECT_FALSE(isUsablePenalty(0.0));
  EXPECT_FALSE(isUsablePenalty(-1.5));
  EXPECT_FALSE(isUsablePenalty(std::nan("")));
  EXPECT_FALSE(isUsablePenalty(std::numeric_limits<double>::infinity()));
}

} // namespace
