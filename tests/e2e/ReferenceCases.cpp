//===- ReferenceCases.cpp - the PyTorch reference's fixtures, read --------===//
//
// ReferenceCases.h.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ReferenceCases.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <memory>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

/// Sessions are compiled once per fixture and shared by the tests. They are
/// released by the environment's TearDown, before static destruction: a JIT
/// torn down after LLVM's own statics crashes.
std::map<std::string, std::unique_ptr<Session>> &sessions() {
  static auto *map = new std::map<std::string, std::unique_ptr<Session>>();
  return *map;
}

class ReleaseSessions : public ::testing::Environment {
public:
  void TearDown() override { sessions().clear(); }
};
const auto *releaseSessions =
    ::testing::AddGlobalTestEnvironment(new ReleaseSessions());

} // namespace

namespace tfmc::testing {

TokenRows readRows(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(static_cast<bool>(buffer)) << path;
  TokenRows rows;
  if (!buffer)
    return rows;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  if (!lines.empty() && lines.back().empty())
    lines.pop_back();
  for (llvm::StringRef line : lines) {
    std::vector<int32_t> row;
    llvm::SmallVector<llvm::StringRef> fields;
    line.split(fields, ' ', -1, false);
    for (llvm::StringRef f : fields) {
      int32_t id;
      EXPECT_FALSE(f.getAsInteger(10, id)) << path << ": " << line.str();
      row.push_back(id);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

llvm::json::Value readJson(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return nullptr;
  auto value = llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    llvm::consumeError(value.takeError());
    return nullptr;
  }
  return std::move(*value);
}

std::vector<std::string> fixtureNames(llvm::StringRef key) {
  std::vector<std::string> names;
  llvm::SmallString<256> index(TFMC_FIXTURES_DIR);
  llvm::sys::path::append(index, "index.json");
  llvm::json::Value v = readJson(std::string(index));
  if (auto *obj = v.getAsObject())
    if (auto *list = obj->getArray("fixtures"))
      for (auto &n : *list)
        if (auto s = n.getAsString()) {
          llvm::json::Value c = readJson(fixturePath(s->str(), "cases.json"));
          if (c.getAsObject() && c.getAsObject()->get(key))
            names.push_back(s->str());
        }
  return names;
}

void readDecodingOptions(const llvm::json::Object &o, SearchOptions &options) {
  options.minLength = o.getInteger("min_length").value_or(0);
  options.maxLength = o.getInteger("max_length").value_or(20);
  options.maxLengthFactor = o.getNumber("max_length_factor").value_or(0.0);
  options.maxLengthOffset = o.getInteger("max_length_offset").value_or(10);
  options.noRepeatNgramSize = o.getInteger("no_repeat_ngram_size").value_or(0);
  options.repetitionPenalty = o.getNumber("repetition_penalty").value_or(1.0);
}

SearchOptions beamCaseOptions(const llvm::json::Object &o) {
  SearchOptions options;
  readDecodingOptions(o, options);
  options.beamSize = o.getInteger("beam_size").value_or(1);
  options.lengthPenalty = o.getNumber("length_penalty").value_or(1.0);
  options.nBest = o.getInteger("n_best").value_or(options.beamSize);
  return options;
}

std::vector<std::vector<Hypothesis>> readNBest(const std::string &path,
                                               size_t inputs) {
  std::vector<std::vector<Hypothesis>> expected(inputs);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(static_cast<bool>(buffer)) << path;
  if (!buffer)
    return expected;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> parts;
    line.split(parts, "|||");
    size_t index = 0;
    Hypothesis h;
    bool bad = parts.size() != 3 || parts[0].trim().getAsInteger(10, index) ||
               parts[2].trim().getAsDouble(h.score) || index >= inputs;
    llvm::SmallVector<llvm::StringRef> ids;
    if (!bad)
      parts[1].split(ids, ' ', -1, false);
    for (llvm::StringRef id : ids) {
      int32_t v;
      bad = bad || id.getAsInteger(10, v);
      h.ids.push_back(v);
    }
    EXPECT_FALSE(bad) << path << ": " << line.str();
    if (!bad)
      expected[index].push_back(std::move(h));
  }
  return expected;
}

Session &session(const Case &c, frontend::ComputeType computeType,
                 int64_t initialCachePositions,
                 runtime::KeyValueType keyValueType) {
  const auto &[name, library] = c;
  auto &slot = sessions()[name + (library ? "/library/" : "/loops/") +
                          frontend::stringifyComputeType(computeType).str() +
                          "/" + std::to_string(initialCachePositions) + "/" +
                          runtime::stringifyKeyValueType(keyValueType).str()];
  if (!slot) {
    SessionOptions options;
    options.useLibraryKernels = library;
    options.computeType = computeType;
    options.initialCachePositions = initialCachePositions;
    options.keyValueType = keyValueType;
    // Each test runs in its own process: share compiled code through a
    // cache in the build tree (CacheTest shows cached code behaves
    // identically).
    options.cacheDir = TFMC_E2E_CACHE_DIR;
    // encode_states too where the fixture has expected encoder states.
    llvm::json::Value c = readJson(fixturePath(name, "cases.json"));
    options.encoderStates = c.getAsObject() && c.getAsObject()->get("encode");
    auto opened = Session::open(fixturePath(name, "model.json"), options);
    if (!opened) {
      ADD_FAILURE() << llvm::toString(opened.takeError());
      std::abort();
    }
    slot = std::move(*opened);
  }
  return *slot;
}

GreedyCase readGreedyCase(const std::string &name,
                          const llvm::json::Object &o) {
  GreedyCase g;
  readDecodingOptions(o, g.options);
  g.file = o.getString("file")->str();
  g.expected = readRows(fixturePath(name, g.file));
  return g;
}

void expectGreedyCases(Session &session, const std::string &name,
                       const llvm::json::Object &cases) {
  const llvm::json::Array *greedy = cases.getArray("greedy");
  ASSERT_NE(greedy, nullptr);
  TokenRows src = readRows(fixturePath(name, "src.ids"));
  for (const llvm::json::Value &entry : *greedy) {
    const llvm::json::Object *o = entry.getAsObject();
    ASSERT_NE(o, nullptr);
    GreedyCase g = readGreedyCase(name, *o);
    auto out = session.translate(src, g.options);
    ASSERT_TRUE(static_cast<bool>(out)) << llvm::toString(out.takeError());
    ASSERT_EQ(out->size(), src.size());
    for (size_t i = 0; i < src.size(); ++i)
      EXPECT_EQ((*out)[i],
                i < g.expected.size() ? g.expected[i] : std::vector<int32_t>())
          << g.file << " line " << i;
  }
}

std::vector<BeamCase> readBeamCases(const llvm::json::Object &cases,
                                    const std::string &fixture, size_t inputs) {
  std::vector<BeamCase> out;
  const llvm::json::Array *beams = cases.getArray("beam");
  EXPECT_NE(beams, nullptr) << fixture << ": no beam cases";
  if (!beams)
    return out;
  for (const llvm::json::Value &b : *beams) {
    const llvm::json::Object *o = b.getAsObject();
    EXPECT_NE(o, nullptr) << fixture << ": a beam case is not an object";
    if (!o)
      continue;
    std::string file = o->getString("file")->str();
    out.push_back({beamCaseOptions(*o), file,
                   readNBest(fixturePath(fixture, file), inputs)});
  }
  return out;
}

void expectFirstHypotheses(const std::vector<std::vector<Hypothesis>> &got,
                           const BeamCase &c, size_t count,
                           const std::string &label) {
  ASSERT_EQ(got.size(), c.expected.size()) << label;
  for (size_t i = 0; i < got.size(); ++i) {
    size_t want = std::min(count, c.expected[i].size());
    ASSERT_EQ(got[i].size(), want) << label << " input " << i;
    for (size_t k = 0; k < want; ++k) {
      EXPECT_EQ(got[i][k].ids, c.expected[i][k].ids)
          << label << " input " << i << " rank " << k;
      EXPECT_NEAR(got[i][k].score, c.expected[i][k].score, 1e-4)
          << label << " input " << i << " rank " << k;
    }
  }
}

void expectSameHypotheses(const std::vector<std::vector<Hypothesis>> &got,
                          const std::vector<std::vector<Hypothesis>> &want,
                          const std::string &label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << label << " row " << r;
    for (size_t k = 0; k < want[r].size(); ++k) {
      EXPECT_EQ(got[r][k].ids, want[r][k].ids)
          << label << " row " << r << " rank " << k;
      EXPECT_EQ(got[r][k].score, want[r][k].score)
          << label << " row " << r << " rank " << k;
    }
  }
}

void readForcedCase(const std::string &name, ForcedCase &out) {
  out.src = readRows(fixturePath(name, "src.ids"));
  out.tgt = readRows(fixturePath(name, "tgt.ids"));
  auto logits = runtime::readNpy(fixturePath(name, "logits.npy"));
  ASSERT_TRUE(static_cast<bool>(logits)) << llvm::toString(logits.takeError());
  out.logits = std::move(*logits);
}

void expectFusedBeamEqualsUnfused(Session &s, const TokenRows &rows,
                                  const SearchOptions &options,
                                  const std::string &label) {
  SearchOptions unfused = options;
  unfused.fusedSteps = false;
  auto fused = s.translateBeam(rows, options);
  auto plain = s.translateBeam(rows, unfused);
  ASSERT_TRUE(static_cast<bool>(fused)) << llvm::toString(fused.takeError());
  ASSERT_TRUE(static_cast<bool>(plain)) << llvm::toString(plain.takeError());
  ASSERT_NO_FATAL_FAILURE(expectSameHypotheses(*fused, *plain, label));
}

void expectFusedGreedyEqualsUnfused(Session &s, const TokenRows &rows,
                                    const std::string &label) {
  for (int64_t minLength : {0, 4}) {
    SearchOptions options;
    options.maxLength = 12;
    options.minLength = minLength;
    SearchOptions unfused = options;
    unfused.fusedSteps = false;
    auto fused = s.translate(rows, options);
    auto plain = s.translate(rows, unfused);
    ASSERT_TRUE(static_cast<bool>(fused)) << llvm::toString(fused.takeError());
    ASSERT_TRUE(static_cast<bool>(plain)) << llvm::toString(plain.takeError());
    EXPECT_EQ(*fused, *plain) << label << ", min length " << minLength;
  }
}

std::vector<bool> kernelPaths() {
  if (haveLibraryKernels())
    return {false, true};
  return {false};
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string n = std::get<0>(info.param);
  std::replace(n.begin(), n.end(), '-', '_');
  return n + (std::get<1>(info.param) ? "_onednn" : "_loops");
}

} // namespace tfmc::testing
