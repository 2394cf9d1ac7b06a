//===- CacheTest.cpp - the compiled-model cache through the runtime -------===//
//
// Every field of the cache key invalidates it; a hit runs no MLIR pass and
// gives byte-identical results to a fresh compile.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/Fixtures.h"
#include "frontends/model/Model.h"
#include "runtime/session/CompiledModel.h"
#include "runtime/session/Session.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

frontend::Architecture baseArchitecture() {
  auto model = frontend::loadModel(fixtureModel("post-relu-noscale"));
  EXPECT_TRUE(static_cast<bool>(model));
  if (!model) {
    llvm::consumeError(model.takeError());
    return {};
  }
  return model->desc.arch;
}

TEST(CacheKey, EveryFieldChangesTheKey) {
  frontend::Architecture base = baseArchitecture();
  CompileOptions baseOptions;
  std::string key = CompiledModel::cacheKey(base, 37, 41, baseOptions);
  // The build that compiles is named: the GNU build ID of the file holding
  // the compiler (this test's executable; our links all write one).
  EXPECT_NE(key.find("; build build-id "), std::string::npos) << key;
  EXPECT_EQ(key, CompiledModel::cacheKey(base, 37, 41, baseOptions))
      << "the key is deterministic";
  EXPECT_NE(key.find("target: "), std::string::npos);
  EXPECT_NE(key.find("llvm: "), std::string::npos);
  EXPECT_NE(key.find("tfmc: "), std::string::npos);

  using ArchEdit = std::function<void(frontend::Architecture &)>;
  std::pair<const char *, ArchEdit> archEdits[] = {
      {"d_model", [](auto &a) { a.dModel = 64; }},
      {"heads", [](auto &a) { a.numHeads = 2; }},
      {"encoder layers", [](auto &a) { a.numEncoderLayers = 3; }},
      {"decoder layers", [](auto &a) { a.numDecoderLayers = 1; }},
      {"d_ff", [](auto &a) { a.dFF = 128; }},
      {"max_len", [](auto &a) { a.maxLen = 65; }},
      {"activation",
       [](auto &a) { a.activation = frontend::Activation::Gelu; }},
      {"eps", [](auto &a) { a.layerNormEps = 1e-6; }},
      {"embedding scale", [](auto &a) { a.embeddingScale = true; }},
      {"norm", [](auto &a) { a.norm = frontend::NormPlacement::Pre; }},
      {"encoder recipe",
       [](auto &a) {
         a.encoderLayer = *frontend::parseLayerRecipe(
             "x = norm2(x + ffn(norm1(x + self_attn(x))))",
             frontend::LayerKind::Encoder);
       }},
      {"decoder recipe",
       [](auto &a) {
         a.decoderLayer = *frontend::parseLayerRecipe(
             "x = x + self_attn(x); x = x + ffn(norm1(x)); "
             "x = x + cross_attn(norm2(x)); x = norm3(x)",
             frontend::LayerKind::Decoder);
       }},
      {"encoder final norm", [](auto &a) { a.encoderFinalNormFlag = true; }},
      {"decoder final norm", [](auto &a) { a.decoderFinalNormFlag = true; }},
  };
  for (auto &[what, edit] : archEdits) {
    frontend::Architecture a = base;
    edit(a);
    EXPECT_NE(CompiledModel::cacheKey(a, 37, 41, baseOptions), key) << what;
  }
  EXPECT_NE(CompiledModel::cacheKey(base, 38, 41, baseOptions), key)
      << "source vocabulary";
  EXPECT_NE(CompiledModel::cacheKey(base, 37, 42, baseOptions), key)
      << "target vocabulary";

  using OptionEdit = std::function<void(CompileOptions &)>;
  std::pair<const char *, OptionEdit> optionEdits[] = {
      {"kernels", [](auto &o) { o.useLibraryKernels = !o.useLibraryKernels; }},
      {"translation", [](auto &o) { o.translation = false; }},
      {"teacher forcing", [](auto &o) { o.teacherForcing = false; }},
      {"encoder states", [](auto &o) { o.encoderStates = true; }},
      {"profiled variant", [](auto &o) { o.profile = true; }},
      {"float16 keys and values",
       [](auto &o) { o.keyValueType = KeyValueType::Float16; }},
  };
  for (auto &[what, edit] : optionEdits) {
    CompileOptions o = baseOptions;
    edit(o);
    EXPECT_NE(CompiledModel::cacheKey(base, 37, 41, o), key) << what;
  }
  // Where the cache lives and whether timing is on change nothing.
  CompileOptions moved = baseOptions;
  moved.cacheDir = "/elsewhere";
  moved.dumpDir = "/dump";
  EXPECT_EQ(CompiledModel::cacheKey(base, 37, 41, moved), key);
  // The key holds the storage of keys and values as resolved: auto and the
  // type it stands for compile the same code.
  CompileOptions explicitFloat32 = baseOptions;
  explicitFloat32.keyValueType = KeyValueType::Float32;
  EXPECT_EQ(CompiledModel::cacheKey(base, 37, 41, explicitFloat32), key);
  CompileOptions int8Auto = baseOptions, int8Half = baseOptions;
  int8Auto.computeType = int8Half.computeType = frontend::ComputeType::Int8;
  int8Half.keyValueType = KeyValueType::Float16;
  EXPECT_EQ(CompiledModel::cacheKey(base, 37, 41, int8Auto),
            CompiledModel::cacheKey(base, 37, 41, int8Half));
}

class CacheSession : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tfmc-cache", path));
    dir = std::string(path);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::unique_ptr<Session> open(const std::string &fixture, bool library,
                                const std::string &cacheDir) {
    SessionOptions options;
    options.useLibraryKernels = library;
    options.cacheDir = cacheDir;
    auto session = Session::open(fixtureModel(fixture), options);
    if (!session) {
      ADD_FAILURE() << llvm::toString(session.takeError());
      return nullptr;
    }
    return std::move(*session);
  }
  std::string dir;
};

TEST_F(CacheSession, HitGivesTheSameResultsAsAFreshCompile) {
  TokenRows src = {{5, 6, 7, 8}, {9}, {10, 11, 12, 13, 14, 15, 16}};
  TokenRows tgt = {{1, 5}, {1}, {1, 7, 8}};
  for (bool library : {false, haveLibraryKernels()}) {
    std::unique_ptr<Session> fresh = open("pre-gelu-scale", library, "");
    std::unique_ptr<Session> cold = open("pre-gelu-scale", library, dir);
    std::unique_ptr<Session> warm = open("pre-gelu-scale", library, dir);
    ASSERT_TRUE(fresh && cold && warm);
    EXPECT_FALSE(fresh->compiled().fromCache());
    EXPECT_EQ(fresh->compiled().cacheEntry(), "");
    EXPECT_FALSE(cold->compiled().fromCache());
    EXPECT_TRUE(warm->compiled().fromCache());
    EXPECT_TRUE(llvm::sys::fs::exists(warm->compiled().cacheEntry()));
    SearchOptions search;
    search.maxLength = 12;
    auto a = fresh->translate(src, search);
    auto b = warm->translate(src, search);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    search.beamSize = 3;
    auto beamA = fresh->translateBeam(src, search);
    auto beamB = warm->translateBeam(src, search);
    ASSERT_TRUE(beamA && beamB);
    for (size_t i = 0; i < src.size(); ++i)
      for (size_t k = 0; k < (*beamA)[i].size(); ++k) {
        EXPECT_EQ((*beamA)[i][k].ids, (*beamB)[i][k].ids);
        EXPECT_EQ((*beamA)[i][k].score, (*beamB)[i][k].score)
            << "bit-identical scores";
      }
    auto logitsA = fresh->forward(src, tgt);
    auto logitsB = warm->forward(src, tgt);
    ASSERT_TRUE(logitsA && logitsB);
    EXPECT_EQ(logitsA->values, logitsB->values) << "bit-identical logits";
  }
}

TEST_F(CacheSession, EntriesAreKeyedByModelAndOptions) {
  std::unique_ptr<Session> post = open("post-relu-noscale", false, dir);
  std::unique_ptr<Session> pre = open("pre-relu-noscale", false, dir);
  ASSERT_TRUE(post && pre);
  EXPECT_FALSE(pre->compiled().fromCache()) << "another recipe: a miss";
  EXPECT_NE(post->compiled().cacheEntry(), pre->compiled().cacheEntry());
  // Same architecture as post-relu-noscale but other weights: a hit.
  std::unique_ptr<Session> again = open("post-relu-noscale", false, dir);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->compiled().fromCache());
  if (haveLibraryKernels()) {
    std::unique_ptr<Session> library = open("post-relu-noscale", true, dir);
    ASSERT_TRUE(library);
    EXPECT_FALSE(library->compiled().fromCache()) << "other kernel path";
  }
}

} // namespace
