//===- ReferenceCases.h - the reference's fixtures, read --------*- C++ -*-===//
//
// What the e2e suites share: reading a fixture's cases (tests/reference
// wrote them: token rows, n-best lists, decoding options), one compiled
// Session per fixture, kernel path, compute type and initial cache size,
// and the checks that decoded outputs are the reference's.
//
//===----------------------------------------------------------------------===//
#ifndef TESTS_E2E_REFERENCECASES_H
#define TESTS_E2E_REFERENCECASES_H

#include "runtime/io/Npy.h"
#include "runtime/session/Session.h"
#include "tests/e2e/Fixtures.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace tfmc::testing {

using runtime::Hypothesis;
using runtime::SearchOptions;
using runtime::Session;
using runtime::TokenRows;

/// Space-separated ids, one row per line.
TokenRows readRows(const std::string &path);
/// The file's JSON, or null when it cannot be read or parsed.
llvm::json::Value readJson(const std::string &path);
/// The fixtures of index.json whose cases.json has `key`: "forward" for
/// translation models (logits, greedy, beam), "encode" for encoder states.
std::vector<std::string> fixtureNames(llvm::StringRef key);

/// A fixture's teacher-forcing case: its sources and targets and the
/// reference's logits for them (src.ids, tgt.ids, logits.npy).
struct ForcedCase {
  TokenRows src, tgt;
  runtime::NpyArray logits;
};
/// Reads fixture `name`'s ForcedCase into `out`; a fatal failure where the
/// logits cannot be read (call under ASSERT_NO_FATAL_FAILURE).
void readForcedCase(const std::string &name, ForcedCase &out);

/// The decoding options of a greedy/beam case (absent keys: off).
void readDecodingOptions(const llvm::json::Object &o, SearchOptions &options);
/// A beam case's options (its n-best: all K unless it says otherwise).
SearchOptions beamCaseOptions(const llvm::json::Object &o);
/// A beam fixture's expected results: "i ||| ids ||| score" lines, best
/// first per input.
std::vector<std::vector<Hypothesis>> readNBest(const std::string &path,
                                               size_t inputs);

/// A fixture run on one kernel path: oneDNN library calls or compiled loops.
using Case = std::tuple<std::string, bool>;

/// The fixture's Session for these options, compiled once per process and
/// shared by the tests (released before static destruction).
Session &
session(const Case &c,
        frontend::ComputeType computeType = frontend::ComputeType::Float32,
        int64_t initialCachePositions =
            runtime::SessionOptions().initialCachePositions,
        runtime::KeyValueType keyValueType = runtime::KeyValueType::Auto);

/// The kernel paths this build has: loops, and the library where built
/// with oneDNN.
std::vector<bool> kernelPaths();
/// "fixture_name_onednn" / "fixture_name_loops".
std::string caseName(const ::testing::TestParamInfo<Case> &info);

/// A fixture's greedy case: its options, the file of the reference's
/// output and that output (a line per source line).
struct GreedyCase {
  SearchOptions options;
  std::string file;
  TokenRows expected;
};
/// Greedy case `o` (an entry of cases.json's "greedy") of fixture `name`.
GreedyCase readGreedyCase(const std::string &name, const llvm::json::Object &o);

class Reference : public ::testing::TestWithParam<Case> {
protected:
  std::string name() const { return std::get<0>(GetParam()); }
  Session &model() { return session(GetParam()); }
  llvm::json::Object cases() {
    llvm::json::Value v = readJson(fixturePath(name(), "cases.json"));
    EXPECT_NE(v.getAsObject(), nullptr);
    return v.getAsObject() ? *v.getAsObject() : llvm::json::Object();
  }
  /// The fixture's first greedy case into `out`; a fatal failure where it
  /// has none (call under ASSERT_NO_FATAL_FAILURE).
  void readFirstGreedyCase(GreedyCase &out) {
    llvm::json::Object c = cases();
    const llvm::json::Array *greedy = c.getArray("greedy");
    ASSERT_TRUE(greedy && !greedy->empty() && (*greedy)[0].getAsObject());
    out = readGreedyCase(name(), *(*greedy)[0].getAsObject());
  }
};

/// Every greedy case of fixture `name` decoded by `session` equals the
/// reference's output.
void expectGreedyCases(Session &session, const std::string &name,
                       const llvm::json::Object &cases);

/// A fixture's beam cases: options, the file of the reference's results
/// and those results.
struct BeamCase {
  SearchOptions options;
  std::string file;
  std::vector<std::vector<Hypothesis>> expected;
};
std::vector<BeamCase> readBeamCases(const llvm::json::Object &cases,
                                    const std::string &fixture, size_t inputs);
/// The first `count` hypotheses of every input equal the reference's.
void expectFirstHypotheses(const std::vector<std::vector<Hypothesis>> &got,
                           const BeamCase &c, size_t count,
                           const std::string &label);

/// `got` holds, input by input, the same hypotheses as `want`: the same
/// ids and the same scores, bit for bit.
void expectSameHypotheses(const std::vector<std::vector<Hypothesis>> &got,
                          const std::vector<std::vector<Hypothesis>> &want,
                          const std::string &label);

/// Beam search with `options` through decode_beam (the projection fused
/// with the log_softmax and top 2K) and through decode_step's logits gives
/// the same hypotheses, bit for bit (expectSameHypotheses; call under
/// ASSERT_NO_FATAL_FAILURE).
void expectFusedBeamEqualsUnfused(Session &s, const TokenRows &rows,
                                  const SearchOptions &options,
                                  const std::string &label);

/// Greedy through decode_greedy (the projection fused with the choice) and
/// through decode_step's logits give the same tokens, with and without a
/// minimum length.
void expectFusedGreedyEqualsUnfused(Session &s, const TokenRows &rows,
                                    const std::string &label);

} // namespace tfmc::testing

#endif // TESTS_E2E_REFERENCECASES_H
