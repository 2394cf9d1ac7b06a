//===- EncoderTest.cpp - encoder states against the reference -------------===//
//
// Fixtures whose cases.json has "encode" (encoder-only models among them):
// the encoder's states against the reference's, on both kernel paths.
//
//===----------------------------------------------------------------------===//
#include "runtime/io/Npy.h"
#include "tests/e2e/ReferenceCases.h"

#include <cmath>
#include <string>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

/// Encoder states of `src.ids` (encoder-only fixtures, and any fixture
/// whose cases.json has "encode"): every position, padding included (zero).
class Encoder : public Reference {};

TEST_P(Encoder, StatesMatch) {
  llvm::json::Object c = cases();
  const llvm::json::Object *enc = c.getObject("encode");
  ASSERT_NE(enc, nullptr);
  double atol = enc->getNumber("atol").value_or(1e-4);
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  auto expected = readNpy(fixturePath(name(), enc->getString("file")->str()));
  ASSERT_TRUE(static_cast<bool>(expected))
      << llvm::toString(expected.takeError());
  auto states = model().encode(src);
  ASSERT_TRUE(static_cast<bool>(states)) << llvm::toString(states.takeError());
  ASSERT_EQ(
      expected->shape,
      (std::vector<int64_t>{states->batch, states->length, states->dModel}));
  double worst = 0;
  for (size_t i = 0; i < states->values.size(); ++i)
    worst = std::max<double>(
        worst, std::fabs(states->values[i] - expected->values[i]));
  EXPECT_LE(worst, atol) << "largest |tfmc - reference| state difference";
  // Padding positions are exactly zero, and a row alone equals its row in
  // the batch.
  for (int64_t r = 0; r < states->batch; ++r) {
    for (int64_t t = states->lengths[r]; t < states->length; ++t)
      for (int64_t k = 0; k < states->dModel; ++k)
        ASSERT_EQ(states->values[(r * states->length + t) * states->dModel + k],
                  0.0f);
    auto alone = model().encode({src[r]});
    ASSERT_TRUE(static_cast<bool>(alone));
    for (int64_t t = 0; t < alone->length; ++t)
      for (int64_t k = 0; k < states->dModel; ++k)
        EXPECT_NEAR(
            alone->values[t * states->dModel + k],
            states->values[(r * states->length + t) * states->dModel + k], 1e-5)
            << "row " << r << " position " << t;
  }
}

/// Decoding and teacher forcing are refused for an encoder-only model, with
/// an error that says why; a translation model's session does both.
TEST_P(Encoder, DecoderWorkOnlyWithADecoder) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  SearchOptions options;
  options.maxLength = 3;
  auto out = model().translate(src, options);
  TokenRows targets(src.size(),
                    TokenRows::value_type{model().specialIds().start});
  auto logits = model().forward(src, targets);
  if (!model().model().desc.arch.encoderOnly()) {
    EXPECT_TRUE(static_cast<bool>(out));
    EXPECT_TRUE(static_cast<bool>(logits));
    if (!out)
      llvm::consumeError(out.takeError());
    if (!logits)
      llvm::consumeError(logits.takeError());
    return;
  }
  ASSERT_FALSE(static_cast<bool>(out));
  EXPECT_NE(llvm::toString(out.takeError()).find("encoder-only"),
            std::string::npos);
  ASSERT_FALSE(static_cast<bool>(logits));
  EXPECT_NE(llvm::toString(logits.takeError()).find("encoder-only"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Encoder,
    ::testing::Combine(::testing::ValuesIn(fixtureNames("encode")),
                       ::testing::ValuesIn(kernelPaths())),
    caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Encoder);

} // namespace
