//===- BundledTest.cpp - the bundled model against the reference ----------===//
//
// The bundled zh->en model's teacher-forced choices against the
// reference's (tests/e2e/bundled-topk.json), every compute type and path.
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/ReferenceCases.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>

using namespace tfmc;
using namespace tfmc::runtime;
using namespace tfmc::testing;

namespace {

/// The bundled zh->en model against the reference's teacher-forced
/// decisions (tests/reference/make_bundled_topk.py): float32 and float16
/// agree wherever the reference's margin is above rounding noise; int8 and
/// bfloat16 at 99% of the positions at least.
class Bundled
    : public ::testing::TestWithParam<std::tuple<bool, frontend::ComputeType>> {
};

TEST_P(Bundled, TeacherForcedArgmaxAgreesWithTheReference) {
  auto [library, type] = GetParam();
  llvm::json::Value v = readJson(TFMC_E2E_DIR "/bundled-topk.json");
  const llvm::json::Object *o = v.getAsObject();
  ASSERT_NE(o, nullptr);
  auto rows = [&](const char *key) {
    TokenRows out;
    for (const llvm::json::Value &line : *o->getArray(key)) {
      std::vector<int32_t> ids;
      llvm::SmallVector<llvm::StringRef> fields;
      line.getAsString()->split(fields, ' ', -1, false);
      for (llvm::StringRef f : fields) {
        int32_t id = 0;
        EXPECT_FALSE(f.getAsInteger(10, id));
        ids.push_back(id);
      }
      out.push_back(std::move(ids));
    }
    return out;
  };
  TokenRows src = rows("source"), tgt = rows("target");
  static std::map<std::string, std::unique_ptr<Session>> bundled;
  std::string key = std::string(library ? "library/" : "loops/") +
                    frontend::stringifyComputeType(type).str();
  if (!bundled[key]) {
    SessionOptions options;
    options.useLibraryKernels = library;
    options.computeType = type;
    options.translation = false;
    options.cacheDir = TFMC_E2E_CACHE_DIR;
    auto opened =
        Session::open(TFMC_SOURCE_DIR "/examples/zh-en/model.json", options);
    ASSERT_TRUE(static_cast<bool>(opened))
        << llvm::toString(opened.takeError());
    bundled[key] = std::move(*opened);
  }
  auto logits = bundled[key]->forward(src, tgt);
  ASSERT_TRUE(static_cast<bool>(logits)) << llvm::toString(logits.takeError());
  const llvm::json::Array *positions = o->getArray("positions");
  ASSERT_EQ(positions->size(), tgt.size());
  int64_t total = 0, agree = 0, clearDisagree = 0;
  for (size_t b = 0; b < tgt.size(); ++b) {
    const llvm::json::Object *p = (*positions)[b].getAsObject();
    const llvm::json::Array &argmax = *p->getArray("argmax");
    const llvm::json::Array &margin = *p->getArray("margin");
    for (size_t t = 0; t < tgt[b].size(); ++t) {
      const float *row =
          logits->values.data() + (b * logits->steps + t) * logits->vocab;
      int64_t best = std::max_element(row, row + logits->vocab) - row;
      ++total;
      if (best == *argmax[t].getAsInteger())
        ++agree;
      else if (*margin[t].getAsNumber() > 1e-3)
        ++clearDisagree;
    }
  }
  if (type == frontend::ComputeType::Int8 ||
      type == frontend::ComputeType::BFloat16)
    EXPECT_GE(agree, 0.99 * total) << agree << " of " << total;
  else
    EXPECT_EQ(clearDisagree, 0) << agree << " of " << total;
  RecordProperty("agreement",
                 std::to_string(agree) + "/" + std::to_string(total));
  std::printf("%s: argmax agreement %lld/%lld\n", key.c_str(),
              static_cast<long long>(agree), static_cast<long long>(total));
  bundled.erase(key);
}

INSTANTIATE_TEST_SUITE_P(
    ComputeTypes, Bundled,
    ::testing::Combine(::testing::ValuesIn(kernelPaths()),
                       ::testing::Values(frontend::ComputeType::Float32,
                                         frontend::ComputeType::Float16,
                                         frontend::ComputeType::BFloat16,
                                         frontend::ComputeType::Int8)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param) ? "onednn_" : "loops_") +
             frontend::stringifyComputeType(std::get<1>(info.param)).str();
    });

} // namespace
