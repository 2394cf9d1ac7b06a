//===- ReferenceTest.cpp - tfmc against the PyTorch reference -------------===//
//
// Every fixture in tests/e2e/fixtures was produced by tests/reference (the
// PyTorch oracle): teacher-forced logits and greedy and beam outputs for
// several settings. These tests run the same models through the compiled
// path in float32, on both kernel paths. The other suites over the same
// fixtures: EncoderTest, ThreadsTest, QuantizedTest, BundledTest.
//
//===----------------------------------------------------------------------===//
#include "runtime/decoding/GreedySearch.h"
#include "runtime/io/Npy.h"
#include "runtime/session/DecoderArena.h"
#include "tests/e2e/ReferenceCases.h"

#include <algorithm>
#include <cmath>
#include <string>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

TEST_P(Reference, ForwardLogitsMatch) {
  llvm::json::Object c = cases();
  const llvm::json::Object *fwd = c.getObject("forward");
  ASSERT_NE(fwd, nullptr);
  double atol = fwd->getNumber("atol").value_or(1e-4);
  ForcedCase forced;
  ASSERT_NO_FATAL_FAILURE(readForcedCase(name(), forced));
  const TokenRows &tgt = forced.tgt;
  const NpyArray &expected = forced.logits;
  auto logits = model().forward(forced.src, tgt);
  ASSERT_TRUE(static_cast<bool>(logits)) << llvm::toString(logits.takeError());
  ASSERT_EQ(expected.shape, (std::vector<int64_t>{logits->batch, logits->steps,
                                                  logits->vocab}));
  double worst = 0;
  for (int64_t b = 0; b < logits->batch; ++b)
    for (size_t t = 0; t < tgt[b].size(); ++t)
      for (int64_t v = 0; v < logits->vocab; ++v) {
        size_t i = (b * logits->steps + t) * logits->vocab + v;
        worst = std::max<double>(
            worst, std::fabs(logits->values[i] - expected.values[i]));
      }
  EXPECT_LE(worst, atol) << "largest |tfmc - reference| logit difference";
}

TEST_P(Reference, GreedyMatches) {
  expectGreedyCases(model(), name(), cases());
}

TEST_P(Reference, BeamMatches) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  for (const BeamCase &c : readBeamCases(cases(), name(), src.size())) {
    auto out = model().translateBeam(src, c.options);
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    expectFirstHypotheses(*out, c, c.options.nBest, c.file);
  }
}

/// Steps that end in the search's choices (decode_greedy, decode_beam:
/// the output projection fused with the argmax / the log_softmax and top
/// 2K) give exactly what the searches over decode_step's logits give:
/// the same ids and the same scores, bit for bit, for every beam case
/// (beam sizes, minimum lengths, n-best) and greedy with a minimum length.
TEST_P(Reference, FusedStepsEqualSearchesOverTheLogits) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  for (const BeamCase &c : readBeamCases(cases(), name(), src.size()))
    ASSERT_NO_FATAL_FAILURE(
        expectFusedBeamEqualsUnfused(model(), src, c.options, c.file));
  expectFusedGreedyEqualsUnfused(model(), src, "greedy");
}

/// Self-attention caches that start with one position and double at every
/// power of two (moving their filled positions each time, beams forking in
/// between) decode exactly what the reference does.
TEST_P(Reference, GrowingCachesMatch) {
  Session &grown =
      session(GetParam(), frontend::ComputeType::Float32, /*positions=*/1);
  llvm::json::Object c = cases();
  expectGreedyCases(grown, name(), c);
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  for (const BeamCase &b : readBeamCases(c, name(), src.size())) {
    auto out = grown.translateBeam(src, b.options);
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    expectFirstHypotheses(*out, b, b.options.nBest, b.file + " (grown)");
  }
}

/// A layer's caches above DecoderArena::pooledBytes() (2 MiB: a batch of
/// 64 of a base model reaches it) are each a buffer of the buffer pool,
/// and a growth may move caches that shared one arena buffer to such
/// buffers. The fixtures' caches are a few KB, so the limit is lowered:
/// to nothing (every cache its own pool buffer from the first step, grown
/// one at a time) and to 1 KiB (caches that start shared and outgrow it).
TEST_P(Reference, PoolBufferCachesMatch) {
  struct Limit {
    size_t before;
    explicit Limit(size_t bytes)
        : before(DecoderArena::setPooledBytesForTesting(bytes)) {}
    ~Limit() { DecoderArena::setPooledBytesForTesting(before); }
  };
  llvm::json::Object c = cases();
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  for (size_t bytes : {size_t(0), size_t(1024)}) {
    Limit lowered(bytes);
    for (int64_t positions :
         {int64_t(1), SessionOptions().initialCachePositions}) {
      Session &s =
          session(GetParam(), frontend::ComputeType::Float32, positions);
      SCOPED_TRACE("pooled above " + std::to_string(bytes) + " bytes, " +
                   std::to_string(positions) + " positions at first");
      expectGreedyCases(s, name(), c);
      for (const BeamCase &b : readBeamCases(c, name(), src.size())) {
        auto out = s.translateBeam(src, b.options);
        ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
        expectFirstHypotheses(*out, b, b.options.nBest, b.file);
      }
    }
  }
}

/// With fewer results wanted than the beam holds, a row stops as soon as no
/// active hypothesis can change them; what it returns must still be the
/// reference's first hypotheses, which ran every row to its K-th finished
/// one.
TEST_P(Reference, BeamStoppedEarlyKeepsTheBest) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  bool stoppedEarly = false;
  for (const BeamCase &c : readBeamCases(cases(), name(), src.size())) {
    SearchOptions options = c.options;
    options.nBest = options.beamSize; // the full rule
    int64_t before = model().decodedRows();
    ASSERT_TRUE(static_cast<bool>(model().translateBeam(src, options)));
    int64_t fullRows = model().decodedRows() - before;
    for (int64_t wanted = 1; wanted < options.beamSize; ++wanted) {
      options.nBest = wanted;
      before = model().decodedRows();
      auto out = model().translateBeam(src, options);
      int64_t rows = model().decodedRows() - before;
      EXPECT_LE(rows, fullRows) << c.file << " n-best " << wanted;
      stoppedEarly = stoppedEarly || rows < fullRows;
      ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
      expectFirstHypotheses(*out, c, wanted,
                            c.file + " n-best " + std::to_string(wanted));
    }
  }
  // Whether any row ended early depends on the fixture's scores (most do);
  // the lit test translate-beam-early-stop.test requires it on the bundled
  // model.
  RecordProperty("stopped_early", stoppedEarly ? "yes" : "no");
}

TEST_P(Reference, BeamOfOneIsGreedy) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  SearchOptions options;
  options.maxLength = 15;
  auto greedy = model().translate(src, options);
  options.beamSize = 1;
  auto beam = model().translateBeam(src, options);
  ASSERT_TRUE(greedy && beam);
  for (size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ((*beam)[i].size(), 1u);
    EXPECT_EQ((*beam)[i][0].ids, (*greedy)[i]) << "row " << i;
  }
}

TEST_P(Reference, RowsAreIndependentOfTheirBatch) {
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  SearchOptions options;
  options.maxLength = 12;
  auto together = model().translate(src, options);
  ASSERT_TRUE(static_cast<bool>(together));
  for (size_t i = 0; i < src.size(); ++i) {
    auto alone = model().translate({src[i]}, options);
    ASSERT_TRUE(static_cast<bool>(alone));
    EXPECT_EQ((*alone)[0], (*together)[i]) << "row " << i;
  }
  // The same rows in reverse order, with a long and a length-1 source.
  TokenRows reversed(src.rbegin(), src.rend());
  auto backwards = model().translate(reversed, options);
  ASSERT_TRUE(static_cast<bool>(backwards));
  for (size_t i = 0; i < src.size(); ++i)
    EXPECT_EQ((*backwards)[src.size() - 1 - i], (*together)[i]) << "row " << i;
}

TEST_P(Reference, BeamRowsAreIndependentOfTheirBatch) {
  // One row alone has more beam slots than rows: its forks fill slots that
  // held nothing before (and, from the arena, stale data of earlier
  // batches).
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  SearchOptions options;
  options.beamSize = 3;
  options.maxLength = 12;
  auto together = model().translateBeam(src, options);
  ASSERT_TRUE(static_cast<bool>(together));
  for (size_t i = 0; i < src.size(); ++i) {
    auto alone = model().translateBeam({src[i]}, options);
    ASSERT_TRUE(static_cast<bool>(alone));
    ASSERT_EQ((*alone)[0].size(), (*together)[i].size()) << "row " << i;
    for (size_t k = 0; k < (*alone)[0].size(); ++k) {
      EXPECT_EQ((*alone)[0][k].ids, (*together)[i][k].ids) << "row " << i;
      EXPECT_NEAR((*alone)[0][k].score, (*together)[i][k].score, 1e-4);
    }
  }
}

TEST_P(Reference, CachedDecodingEqualsTeacherForcedArgmax) {
  Session &s = model();
  SpecialIds special = s.specialIds();
  TokenRows src = readRows(fixturePath(name(), "src.ids"));
  SearchOptions options;
  options.maxLength = 10;
  auto out = s.translate(src, options);
  ASSERT_TRUE(static_cast<bool>(out));
  TokenRows targets;
  for (const auto &ids : *out) {
    std::vector<int32_t> t{special.start};
    t.insert(t.end(), ids.begin(), ids.end());
    targets.push_back(std::move(t));
  }
  auto logits = s.forward(src, targets);
  ASSERT_TRUE(static_cast<bool>(logits));
  for (size_t b = 0; b < src.size(); ++b) {
    const std::vector<int32_t> &ids = (*out)[b];
    for (size_t t = 0; t <= ids.size() && t < 10; ++t) {
      const float *row =
          logits->values.data() + (b * logits->steps + t) * logits->vocab;
      int32_t best = bestToken(row, logits->vocab, special, true);
      int32_t next = t < ids.size() ? ids[t] : special.eos;
      EXPECT_EQ(best, next) << "row " << b << " step " << t;
    }
  }
}

/// The warm-up translations open() runs (SessionOptions::prepareKernels,
/// one row and warmUpRows) leave no times or rows behind: the first
/// batch's figures are its own.
TEST(SessionOpen, WarmUpLeavesNoTimesOrRows) {
  for (auto [library, rows] :
       {std::pair{false, 1}, {false, 6}, {true, 1}, {true, 6}}) {
    if (library && !haveLibraryKernels())
      continue;
    SessionOptions options;
    options.useLibraryKernels = library;
    options.warmUpRows = rows;
    auto opened =
        Session::open(fixturePath("pre-relu-scale", "model.json"), options);
    ASSERT_TRUE(static_cast<bool>(opened))
        << llvm::toString(opened.takeError());
    Session &s = **opened;
    EXPECT_EQ(s.encodeSeconds(), 0.0);
    EXPECT_EQ(s.decodeSeconds(), 0.0);
    EXPECT_EQ(s.stepSeconds(), 0.0);
    EXPECT_EQ(s.decodedRows(), 0);
    SearchOptions search;
    search.maxLength = 3;
    search.minLength = 3;
    auto out = s.translate({{4, 5, 6}}, search);
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    EXPECT_EQ(s.decodedRows(), 3);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Reference,
    ::testing::Combine(::testing::ValuesIn(fixtureNames("forward")),
                       ::testing::ValuesIn(kernelPaths())),
    caseName);

} // namespace
