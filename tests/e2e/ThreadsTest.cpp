//===- ThreadsTest.cpp - more threads, the same translations --------------===//
//
// Worker slices, step teams and concurrent callers of one Session decode
// what one thread decodes: the reference's outputs.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ReferenceCases.h"

#include <string>
#include <thread>
#include <vector>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

/// With threads, a batch of at least Session::kMinRowsPerWorker rows per
/// thread is decoded as slices on worker threads at once; the translations
/// must still be the reference's. Enough copies of the fixture's sources for
/// three workers on 3 threads.
/// (Two fixtures, both kernel paths: enough to cover slicing, and short.)
class Threads : public Reference {};

TEST_P(Threads, WorkerThreadsMatchTheReference) {
  const auto &[fixture, library] = GetParam();
  SessionOptions sessionOptions;
  sessionOptions.useLibraryKernels = library;
  sessionOptions.threads = 3;
  auto opened =
      Session::open(fixturePath(fixture, "model.json"), sessionOptions);
  ASSERT_TRUE(static_cast<bool>(opened)) << llvm::toString(opened.takeError());
  std::unique_ptr<Session> threaded = std::move(*opened);
  TokenRows src = readRows(fixturePath(fixture, "src.ids"));
  TokenRows tripled;
  while (tripled.size() < 3 * Session::kMinRowsPerWorker)
    tripled.insert(tripled.end(), src.begin(), src.end());

  GreedyCase g;
  ASSERT_NO_FATAL_FAILURE(readFirstGreedyCase(g));
  SearchOptions options = g.options;
  const TokenRows &expected = g.expected;
  auto out = threaded->translate(tripled, options);
  ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), tripled.size());
  for (size_t i = 0; i < tripled.size(); ++i) {
    size_t row = i % src.size();
    EXPECT_EQ((*out)[i],
              row < expected.size() ? expected[row] : std::vector<int32_t>())
        << "row " << i;
  }

  // Beam search through the workers equals the single-threaded session.
  options = SearchOptions();
  options.beamSize = 3;
  options.maxLength = 12;
  auto single = model().translateBeam(src, options);
  auto beams = threaded->translateBeam(tripled, options);
  ASSERT_TRUE(single && beams);
  for (size_t i = 0; i < tripled.size(); ++i) {
    const auto &want = (*single)[i % src.size()];
    ASSERT_EQ((*beams)[i].size(), want.size()) << "row " << i;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ((*beams)[i][k].ids, want[k].ids) << "row " << i;
      EXPECT_NEAR((*beams)[i][k].score, want[k].score, 1e-4) << "row " << i;
    }
  }
  EXPECT_GT(threaded->decodeSeconds(), 0.0);
}

/// With threads and StepTeams::Always (Auto keeps teams for large models),
/// a batch runs every encoder call and decoder step on a StepTeam: its rows
/// cut between the threads, whose linear layers meet to share the weights
/// (StepTeam.h). Greedy and beam search, float32, int8
/// and float16 weights, 2 and 3 threads (3 splits the panels unevenly):
/// the same ids and scores, bit for bit, as one thread; greedy float32 also
/// the reference's. The same for StepTeams::Never (these few rows: one
/// thread whose library kernels split their columns between the threads).
/// Under TFMC_STEP_WIDTH=alternate (ctest e2e-threads-step-width) every
/// other decoder step runs on one thread instead (StepWidth.h).
TEST_P(Threads, TeamStepsEqualOneThread) {
  const auto &[fixture, library] = GetParam();
  TokenRows src = readRows(fixturePath(fixture, "src.ids"));
  GreedyCase g;
  ASSERT_NO_FATAL_FAILURE(readFirstGreedyCase(g));
  SearchOptions greedy = g.options;
  const TokenRows &expected = g.expected;
  SearchOptions beam;
  beam.beamSize = 3;
  beam.maxLength = 12;
  // Three rows of three hypotheses: 9 slots, a team at 2 and 3 threads.
  TokenRows few(src.begin(), src.begin() + 3);
  for (auto type : {frontend::ComputeType::Float32, frontend::ComputeType::Int8,
                    frontend::ComputeType::Float16}) {
    Session &one = session(GetParam(), type);
    auto greedyOne = one.translate(src, greedy);
    auto beamOne = one.translateBeam(few, beam);
    ASSERT_TRUE(greedyOne && beamOne);
    for (auto [threads, teams] :
         {std::pair(2, SessionOptions::StepTeams::Always),
          std::pair(3, SessionOptions::StepTeams::Always),
          std::pair(2, SessionOptions::StepTeams::Never)}) {
      SCOPED_TRACE(
          frontend::stringifyComputeType(type).str() + ", " +
          std::to_string(threads) + " threads" +
          (teams == SessionOptions::StepTeams::Never ? ", no team" : ""));
      SessionOptions options;
      options.useLibraryKernels = library;
      options.computeType = type;
      options.threads = threads;
      options.stepTeams = teams;
      options.cacheDir = TFMC_E2E_CACHE_DIR;
      auto opened = Session::open(fixturePath(fixture, "model.json"), options);
      ASSERT_TRUE(static_cast<bool>(opened))
          << llvm::toString(opened.takeError());
      auto out = (*opened)->translate(src, greedy);
      ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
      EXPECT_EQ(*out, *greedyOne);
      if (type == frontend::ComputeType::Float32)
        for (size_t i = 0; i < src.size(); ++i)
          EXPECT_EQ((*out)[i],
                    i < expected.size() ? expected[i] : std::vector<int32_t>())
              << "row " << i;
      auto beams = (*opened)->translateBeam(few, beam);
      ASSERT_TRUE(static_cast<bool>(beams))
          << llvm::toString(beams.takeError());
      ASSERT_NO_FATAL_FAILURE(expectSameHypotheses(*beams, *beamOne, "beam"));
      // Every step on all the threads, or (alternate) half on one where
      // they meet at every layer and the results cannot change (compiled
      // loops without a team run on one thread anyway; library kernels
      // move only where their packed kernels run).
      bool meet = library ? threadNeutralRows() > 0
                          : teams == SessionOptions::StepTeams::Always;
      if (StepWidth::environmentPolicy() == StepWidth::Policy::Alternate)
        EXPECT_EQ((*opened)->narrowSteps() > 0, meet);
      else if (StepWidth::environmentPolicy() == StepWidth::Policy::All)
        EXPECT_EQ((*opened)->narrowSteps(), 0);
    }
  }
}

/// One session used from four threads at once: each call leases its own
/// call frames and decoder buffers; the results equal one thread's.
TEST_P(Threads, ConcurrentCallersShareOneSession) {
  Session &s = model();
  TokenRows src = readRows(fixturePath(std::get<0>(GetParam()), "src.ids"));
  SearchOptions greedy;
  greedy.maxLength = 12;
  SearchOptions beam = greedy;
  beam.beamSize = 3;
  auto wantGreedy = s.translate(src, greedy);
  auto wantBeam = s.translateBeam(src, beam);
  ASSERT_TRUE(wantGreedy && wantBeam);
  std::vector<std::string> failures(4);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        if ((t + round) % 2 == 0) {
          auto got = s.translate(src, greedy);
          if (!got || *got != *wantGreedy)
            failures[t] = "greedy differs";
        } else {
          auto got = s.translateBeam(src, beam);
          if (!got) {
            failures[t] = "beam failed";
            continue;
          }
          for (size_t i = 0; i < src.size(); ++i)
            for (size_t k = 0; k < (*got)[i].size(); ++k)
              if ((*got)[i][k].ids != (*wantBeam)[i][k].ids ||
                  (*got)[i][k].score != (*wantBeam)[i][k].score)
                failures[t] = "beam differs";
        }
      }
    });
  for (std::thread &c : callers)
    c.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Threads,
                         ::testing::Combine(::testing::Values("wide",
                                                              "pre-gelu-scale"),
                                            ::testing::ValuesIn(kernelPaths())),
                         caseName);

} // namespace
