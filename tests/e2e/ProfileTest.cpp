//===- ProfileTest.cpp - the profiled variant and its counts --------------===//
//
// A profiled session translates exactly as a plain one; its counts agree
// with what the runtime independently knows (decoder rows, steps, the
// output projection's FLOP); the table survives the compile cache; the
// formats carry every row.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/Fixtures.h"
#include "frontends/model/Model.h"
#include "runtime/kernels/ProfileProbes.h"
#include "runtime/profile/Profiler.h"
#include "runtime/session/Session.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

std::unique_ptr<Session>
openSession(bool library, bool profile, const std::string &cacheDir = "",
            std::optional<frontend::ComputeType> computeType = std::nullopt) {
  SessionOptions options;
  options.useLibraryKernels = library;
  options.profile = profile;
  options.cacheDir = cacheDir;
  options.computeType = computeType;
  auto session = Session::open(fixtureModel("pre-relu-scale"), options);
  if (!session) {
    ADD_FAILURE() << llvm::toString(session.takeError());
    return nullptr;
  }
  return std::move(*session);
}

const TokenRows kSources = {{5, 6, 7, 8}, {9}, {10, 11, 12, 13, 14, 15, 16},
                            {20, 21, 22}, {30, 31, 32, 33, 34, 35}};

class ProfiledSession : public ::testing::TestWithParam<bool> {};

TEST_P(ProfiledSession, TranslatesAsThePlainVariantAndCountsWhatRan) {
  bool library = GetParam();
  if (library && !haveLibraryKernels())
    GTEST_SKIP() << "built without oneDNN";
  std::unique_ptr<Session> plain = openSession(library, false);
  std::unique_ptr<Session> profiled = openSession(library, true);
  ASSERT_TRUE(plain && profiled);
  EXPECT_TRUE(plain->compiled().profiledOps().empty());
  ASSERT_FALSE(profiled->compiled().profiledOps().empty());

  auto profiler = Profiler::start(profiled->compiled(), 1);
  ASSERT_TRUE(static_cast<bool>(profiler)) << llvm::toString(profiler.takeError());
  // One profiler at a time in a process.
  auto second = Profiler::start(profiled->compiled(), 1);
  EXPECT_FALSE(static_cast<bool>(second));
  llvm::consumeError(second.takeError());
  auto notProfiled = Profiler::start(plain->compiled(), 1);
  EXPECT_FALSE(static_cast<bool>(notProfiled));
  llvm::consumeError(notProfiled.takeError());

  SearchOptions search;
  search.maxLength = 20;
  auto expected = plain->translate(kSources, search);
  ASSERT_TRUE(static_cast<bool>(expected));
  llvm::Expected<TokenRows> got = TokenRows();
  {
    profile::Scope whole(profile::Region::Translate);
    got = profiled->translate(kSources, search);
  }
  ASSERT_TRUE(static_cast<bool>(got));
  EXPECT_EQ(*expected, *got) << "the probes change nothing computed";

  Profile p = (*profiler)->snapshot();
  EXPECT_GT(p.wallSeconds, 0);
  if (haveLibraryKernels())
    EXPECT_GT(p.peakGflops, 0) << "sgemm measured with oneDNN";
  EXPECT_GT(p.bandwidthGBs, 0);

  std::map<std::string, ProfileFunction> functions;
  for (const ProfileFunction &f : p.functions)
    functions[f.name] = f;
  ASSERT_EQ(functions.count("encode"), 1u);
  // Greedy search without guards runs decode_greedy (tfm-greedy-head).
  ASSERT_EQ(functions.count("decode_greedy"), 1u);
  EXPECT_EQ(functions.count("decode_step"), 0u);
  EXPECT_EQ(functions["encode"].calls, 1);

  // Every op of the compiled functions that ran has a row, called once per
  // call of its function.
  std::map<std::string, int64_t> tableOps;
  for (const ProfiledOp &op : profiled->compiled().profiledOps())
    if (op.kind != "function" &&
        (op.function == "encode" || op.function == "decode_greedy"))
      ++tableOps[op.function];
  std::map<std::string, int64_t> rowOps;
  double opSeconds = 0, rowSeconds = 0;
  const ProfileRow *outputProjection = nullptr;
  for (const ProfileRow &row : p.rows) {
    rowSeconds += row.seconds;
    if (row.category != "op")
      continue;
    ++rowOps[row.function];
    opSeconds += row.seconds;
    EXPECT_EQ(row.calls, functions[row.function].calls)
        << row.function << " " << row.kind << " " << row.name;
    EXPECT_GE(row.seconds, 0);
    if (row.function == "decode_greedy" && row.kind == "tfm.linear_argmax" &&
        row.detail.find("weight 41x32") != std::string::npos)
      outputProjection = &row;
  }
  EXPECT_EQ(rowOps, tableOps);
  EXPECT_LE(opSeconds, functions["encode"].seconds +
                           functions["decode_greedy"].seconds + 1e-9);
  // The rows (ops, the functions' rest, the runtime) add up to the wall
  // time on one thread.
  EXPECT_NEAR(rowSeconds, p.wallSeconds, 1e-6 + 1e-3 * p.wallSeconds);

  // The output projection (fused with the choice) ran once per decoder
  // row: its FLOP are
  // 2 x vocabulary x d_model x the rows the session counted.
  ASSERT_NE(outputProjection, nullptr);
  EXPECT_EQ(outputProjection->flop,
            2.0 * 41 * 32 * static_cast<double>(profiled->decodedRows()));
  EXPECT_EQ(outputProjection->calls, functions["decode_greedy"].calls);

  (*profiler)->reset();
  Profile zero = (*profiler)->snapshot();
  EXPECT_EQ(zero.wallSeconds, 0);
  EXPECT_TRUE(zero.functions.empty());
}

INSTANTIATE_TEST_SUITE_P(Kernels, ProfiledSession, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "library" : "loops";
                         });

/// int8 and bfloat16 layers' rooflines are set against their own
/// arithmetic's peak (the AMX tiles' or the vector instruction's rate,
/// measured when profiling starts), everything else against sgemm; a host
/// without bfloat16 instructions runs bfloat16 layers at the float32 rate
/// and sets them against sgemm too.
TEST(ProfiledVariant, Int8AndBFloat16LayersAreSetAgainstTheirOwnRates) {
  if (!haveLibraryKernels())
    GTEST_SKIP() << "built without oneDNN (no sgemm rate)";
  for (auto [type, name] :
       {std::pair{frontend::ComputeType::Int8, "int8"},
        std::pair{frontend::ComputeType::BFloat16, "bfloat16"}}) {
    std::unique_ptr<Session> session = openSession(true, true, "", type);
    ASSERT_TRUE(session);
    auto profiler = Profiler::start(session->compiled(), 1);
    ASSERT_TRUE(static_cast<bool>(profiler))
        << llvm::toString(profiler.takeError());
    SearchOptions search;
    search.maxLength = 20;
    {
      profile::Scope whole(profile::Region::Translate);
      ASSERT_TRUE(static_cast<bool>(session->translate(kSources, search)));
    }
    Profile p = (*profiler)->snapshot();
    double peak =
        type == frontend::ComputeType::Int8 ? p.int8Gops : p.bfloat16Gflops;
    if (type == frontend::ComputeType::Int8)
      EXPECT_GT(peak, 0) << "every host with the library kernels has AVX2";
    else
      EXPECT_EQ(p.int8Gops, 0) << "no int8 layer to measure for";
    int typed = 0;
    for (const ProfileRow &row : p.rows) {
      if (row.category != "op") {
        EXPECT_EQ(row.arithmetic, "");
        continue;
      }
      bool linear = row.kind.rfind("tfm.linear", 0) == 0;
      EXPECT_EQ(row.arithmetic, linear ? name : "float32")
          << row.kind << " " << row.name << " " << row.detail;
      if (row.seconds <= 0)
        continue;
      double rate =
          (row.arithmetic == name && peak > 0 ? peak : p.peakGflops) * 1e9;
      double bound =
          std::max(row.flop / rate, row.bytes / (p.bandwidthGBs * 1e9));
      EXPECT_NEAR(row.roofline, bound / row.seconds, 1e-9 + 1e-9 * row.roofline)
          << row.kind << " " << row.name;
      typed += row.arithmetic == name;
    }
    EXPECT_GT(typed, 0) << name;
  }
}

TEST(ProfiledVariant, TheTableComesBackFromTheCompileCache) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tfmc-profile", dir));
  std::unique_ptr<Session> cold = openSession(false, true, std::string(dir));
  std::unique_ptr<Session> warm = openSession(false, true, std::string(dir));
  std::unique_ptr<Session> plain = openSession(false, false, std::string(dir));
  ASSERT_TRUE(cold && warm && plain);
  EXPECT_FALSE(cold->compiled().fromCache());
  EXPECT_TRUE(warm->compiled().fromCache());
  EXPECT_FALSE(plain->compiled().fromCache()) << "its own cache entry";
  const auto &a = cold->compiled().profiledOps();
  const auto &b = warm->compiled().profiledOps();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].function, b[i].function);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].detail, b[i].detail);
    EXPECT_EQ(a[i].arithmetic, b[i].arithmetic);
    EXPECT_EQ(a[i].flopRows, b[i].flopRows);
    EXPECT_EQ(a[i].bytesCall, b[i].bytesCall);
    EXPECT_EQ(a[i].bytesBatchKeys, b[i].bytesBatchKeys);
  }
  EXPECT_TRUE(plain->compiled().profiledOps().empty());
  llvm::sys::fs::remove_directories(dir);
}

TEST(ProfileFormats, EveryRowInEveryFormat) {
  Profile p;
  p.host = "cpu: test, AVX2 + FMA";
  p.configuration = "int8 weights, float16 keys/values, library kernels";
  p.peakGflops = 100;
  p.bandwidthGBs = 10;
  p.wallSeconds = 2;
  p.functions = {{"decode_step", 10, 1.5}};
  ProfileRow op;
  op.category = "op";
  op.function = "decode_step";
  op.kind = "tfm.linear";
  op.name = "decoder_layers.0.<b>";
  op.detail = "relu, weight 64x32 f32, \"quoted\"";
  op.calls = 10;
  op.seconds = 1;
  op.share = 0.5;
  op.flop = 4e9;
  op.bytes = 1e9;
  op.gflops = 4;
  op.gbs = 1;
  op.roofline = 0.1;
  op.arithmetic = "int8";
  p.int8Gops = 500;
  ProfileRow rest = op;
  rest.arithmetic = "";
  rest.category = "runtime";
  rest.function = "";
  rest.kind = "runtime: search and the rest";
  rest.name = "";
  rest.seconds = 0.5;
  p.rows = {op, rest};

  auto json = formatProfile(p, "json");
  ASSERT_TRUE(static_cast<bool>(json));
  auto parsed = llvm::json::parse(*json);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Array *rows = parsed->getAsObject()->getArray("rows");
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(*(*rows)[0].getAsObject()->getString("detail"), op.detail);
  EXPECT_EQ(*parsed->getAsObject()->getNumber("wall_seconds"), 2.0);
  EXPECT_EQ(*(*rows)[0].getAsObject()->getNumber("flop_per_call"), 4e8);
  EXPECT_EQ(*(*rows)[0].getAsObject()->getNumber("bytes_per_call"), 1e8);
  EXPECT_EQ(*(*rows)[0].getAsObject()->getString("arithmetic"), "int8");
  EXPECT_EQ(*parsed->getAsObject()->getNumber("int8_peak_gops"), 500.0);
  EXPECT_EQ(*parsed->getAsObject()->getNumber("bfloat16_peak_gflops"), 0.0);
  EXPECT_EQ(*parsed->getAsObject()->getString("configuration"),
            p.configuration);

  auto csv = formatProfile(p, "csv");
  ASSERT_TRUE(static_cast<bool>(csv));
  EXPECT_EQ(std::count(csv->begin(), csv->end(), '\n'), 3);
  EXPECT_NE(csv->find("\"relu, weight 64x32 f32, \"\"quoted\"\"\""),
            std::string::npos)
      << *csv;
  EXPECT_NE(csv->find(",roofline,arithmetic\n"), std::string::npos) << *csv;
  EXPECT_NE(csv->find(",int8\n"), std::string::npos) << *csv;

  auto md = formatProfile(p, "md");
  ASSERT_TRUE(static_cast<bool>(md));
  EXPECT_NE(md->find("| 50.0% | 1.0000 | 10 | 100000.0 | decode_step | "
                     "tfm.linear | decoder_layers.0.<b> | relu, weight 64x32 "
                     "f32, \"quoted\" | 400.00 | 100.00 | 4.00 | 1.00 | 10% |"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("cpu: test, AVX2 + FMA; 1 thread\nrun: int8 weights, "
                     "float16 keys/values, library kernels\nlimits"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("memory read 10.0 GB/s, int8 products 500.0 GOP/s\n"),
            std::string::npos)
      << *md;

  auto svg = formatProfile(p, "svg");
  ASSERT_TRUE(static_cast<bool>(svg));
  EXPECT_EQ(svg->rfind("</svg>\n"), svg->size() - 7);
  EXPECT_EQ(svg->find("<b>"), std::string::npos) << "text is escaped";
  EXPECT_NE(svg->find("&lt;b&gt;"), std::string::npos);
  EXPECT_NE(svg->find("AVX2 + FMA; int8 weights, float16 keys/values, "
                      "library kernels; sgemm"),
            std::string::npos)
      << *svg;

  EXPECT_FALSE(static_cast<bool>(formatProfile(p, "xml")));
}

} // namespace
