//===- ApiTest.cpp - the public C++ API (include/tfmc) on the bundled model
//===//
//
// What an embedder relies on beyond the translations themselves (those are
// checked against the reference through the sessions underneath):
// translateStream's failures to write come back as an error result (an
// llvm stream left in error ended the process), greedy scores on request
// equal `tfmc translate --scores`' (a beam of one), the stream counts
// unreadable lines, one Translator serves several threads at once with
// the results of one, and compiled code out of memory is an error result.
//
//===----------------------------------------------------------------------===//
#include "tfmc/Translator.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

const std::vector<std::string> kSentences = {
    "我们明天去公园吧。", "谢谢。", "他昨天晚上没有睡觉。", "这本书很有意思。"};

tfmc::Translator &bundled() {
  static std::unique_ptr<tfmc::Translator> translator = [] {
    tfmc::LoadOptions load;
    load.cacheDir = TFMC_E2E_CACHE_DIR;
    auto t = tfmc::Translator::load(
        std::string(TFMC_SOURCE_DIR) + "/examples/zh-en/model.json", load);
    if (!t) {
      ADD_FAILURE() << t.error();
      return std::unique_ptr<tfmc::Translator>();
    }
    return std::move(*t);
  }();
  return *translator;
}

/// A scratch file holding `text`; removed with the object.
struct ScratchFile {
  explicit ScratchFile(const std::string &text) {
    char name[] = "/tmp/tfmc-api-test-XXXXXX";
    int fd = mkstemp(name);
    path = name;
    if (fd >= 0) {
      ssize_t written = write(fd, text.data(), text.size());
      (void)written;
      close(fd);
    }
  }
  ~ScratchFile() { std::remove(path.c_str()); }
  std::string read() const { return readPath(path); }
  static std::string readPath(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string path;
};

/// The process's address space now (VmSize), in bytes.
size_t virtualBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0)
      return std::stoull(line.substr(7)) * 1024;
  return 0;
}

/// While it lives, the process may take `more` bytes of address space
/// beyond what it has now (RLIMIT_AS; never above the limit it had).
class AddressSpaceLimit {
public:
  explicit AddressSpaceLimit(size_t more) {
    held = getrlimit(RLIMIT_AS, &saved) == 0;
    rlimit limited = saved;
    limited.rlim_cur = virtualBytes() + more;
    if (saved.rlim_cur != RLIM_INFINITY)
      limited.rlim_cur = std::min(limited.rlim_cur, saved.rlim_cur);
    held = held && setrlimit(RLIMIT_AS, &limited) == 0;
    EXPECT_TRUE(held) << "the address-space limit could not be set";
  }
  ~AddressSpaceLimit() {
    if (held)
      EXPECT_EQ(setrlimit(RLIMIT_AS, &saved), 0);
  }

private:
  rlimit saved;
  bool held = false;
};

std::string lines(const std::vector<std::string> &sentences) {
  std::string text;
  for (const std::string &s : sentences)
    text += s + "\n";
  return text;
}

TEST(Api, StreamOutputThatCannotBeWrittenIsAnError) {
  tfmc::Translator &t = bundled();
  ScratchFile input(lines(kSentences));
  int devNull = open("/dev/null", O_WRONLY);
  ASSERT_GE(devNull, 0);
  // A full disk.
  {
    int in = open(input.path.c_str(), O_RDONLY);
    int full = open("/dev/full", O_WRONLY);
    ASSERT_GE(in, 0);
    ASSERT_GE(full, 0);
    auto stats = t.translateStream(in, full, devNull, t.defaultOptions());
    EXPECT_FALSE(stats);
    EXPECT_NE(stats.error().find("output: cannot write to file descriptor"),
              std::string::npos)
        << stats.error();
    close(in);
    close(full);
  }
  // A descriptor that is not open (diagnostics too), then the same
  // Translator still works.
  {
    int in = open(input.path.c_str(), O_RDONLY);
    int closed = dup(devNull);
    close(closed);
    auto stats = t.translateStream(in, closed, closed, t.defaultOptions());
    EXPECT_FALSE(stats);
    EXPECT_NE(stats.error().find("output: cannot write"), std::string::npos)
        << stats.error();
    close(in);
  }
  ScratchFile output("");
  int in = open(input.path.c_str(), O_RDONLY);
  int out = open(output.path.c_str(), O_WRONLY | O_TRUNC);
  auto stats = t.translateStream(in, out, devNull, t.defaultOptions());
  close(in);
  close(out);
  close(devNull);
  ASSERT_TRUE(stats) << stats.error();
  EXPECT_EQ(stats->lines, static_cast<int64_t>(kSentences.size()));
  auto best = t.translate(kSentences, t.defaultOptions());
  ASSERT_TRUE(best) << best.error();
  std::string want;
  for (const tfmc::Translation &tr : *best)
    want += tr.best().text + "\n";
  EXPECT_EQ(output.read(), want);
}

TEST(Api, GreedyScoresOnRequestAreTheStreamScores) {
  tfmc::Translator &t = bundled();
  tfmc::TranslateOptions greedy = t.defaultOptions();
  greedy.beamSize = 1;
  auto plain = t.translate(kSentences, greedy);
  ASSERT_TRUE(plain) << plain.error();
  greedy.scores = true;
  auto scored = t.translate(kSentences, greedy);
  ASSERT_TRUE(scored) << scored.error();

  // The stream's "i ||| text ||| score" lines, as `tfmc translate --scores`.
  ScratchFile input(lines(kSentences)), output("");
  int in = open(input.path.c_str(), O_RDONLY);
  int out = open(output.path.c_str(), O_WRONLY | O_TRUNC);
  int devNull = open("/dev/null", O_WRONLY);
  tfmc::StreamOptions stream;
  stream.scores = true;
  greedy.scores = false;
  auto stats = t.translateStream(in, out, devNull, greedy, stream);
  close(in);
  close(out);
  close(devNull);
  ASSERT_TRUE(stats) << stats.error();
  std::istringstream streamed(output.read());
  std::string line;
  for (size_t i = 0; i < kSentences.size(); ++i) {
    const tfmc::Hypothesis &h = (*scored)[i].best();
    EXPECT_EQ(h.text, (*plain)[i].best().text) << i;
    EXPECT_EQ((*plain)[i].best().score, 0) << i;
    EXPECT_LT(h.score, 0) << i;
    ASSERT_TRUE(std::getline(streamed, line));
    char score[32];
    std::snprintf(score, sizeof(score), "%.6f", h.score);
    EXPECT_EQ(line, std::to_string(i) + " ||| " + h.text + " ||| " + score);
  }

  // With sentences split "on", scores are refused (one translation a line).
  tfmc::TranslateOptions split = t.defaultOptions();
  split.splitSentences = "on";
  split.scores = true;
  auto refused = t.translate(kSentences, split);
  EXPECT_FALSE(refused);
  EXPECT_NE(refused.error().find("scores"), std::string::npos)
      << refused.error();
}

TEST(Api, StreamCountsUnreadableLines) {
  tfmc::Translator &t = bundled();
  ScratchFile input("谢谢。\n\xff\xfe\n\n我们明天去公园吧。\n");
  int in = open(input.path.c_str(), O_RDONLY);
  int out = open("/dev/null", O_WRONLY);
  auto stats = t.translateStream(in, out, out, t.defaultOptions());
  close(in);
  close(out);
  ASSERT_TRUE(stats) << stats.error();
  EXPECT_EQ(stats->lines, 4);
  EXPECT_EQ(stats->unreadableLines, 1);
  EXPECT_EQ(stats->badLines, 0);
}

/// One Translator, four threads, greedy and beam calls interleaved: every
/// result equals the one thread's.
TEST(Api, ConcurrentCallersGetTheResultsOfOne) {
  tfmc::Translator &t = bundled();
  tfmc::TranslateOptions greedy = t.defaultOptions(), beam = greedy;
  greedy.beamSize = 1;
  beam.beamSize = 3;
  beam.nBest = 2;
  auto wantGreedy = t.translate(kSentences, greedy);
  auto wantBeam = t.translate(kSentences, beam);
  ASSERT_TRUE(wantGreedy && wantBeam);
  auto same = [](const std::vector<tfmc::Translation> &a,
                 const std::vector<tfmc::Translation> &b) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].hypotheses.size() != b[i].hypotheses.size())
        return false;
      for (size_t k = 0; k < a[i].hypotheses.size(); ++k)
        if (a[i].hypotheses[k].text != b[i].hypotheses[k].text ||
            a[i].hypotheses[k].score != b[i].hypotheses[k].score)
          return false;
    }
    return true;
  };
  std::vector<std::string> failures(4);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 3; ++round) {
        bool useBeam = (c + round) % 2 == 1;
        auto got = t.translate(kSentences, useBeam ? beam : greedy);
        if (!got || !same(*got, useBeam ? *wantBeam : *wantGreedy))
          failures[c] = useBeam ? "beam differs" : "greedy differs";
      }
    });
  for (std::thread &c : callers)
    c.join();
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(failures[c], "") << "thread " << c;
}

/// loadOptionsError and optionsError say what load and translate would
/// refuse, without loading or running, in the same words.
TEST(Api, OptionsAreCheckedWithoutRunning) {
  tfmc::LoadOptions load;
  EXPECT_EQ(tfmc::loadOptionsError(load), "");
  load.threads = 0;
  EXPECT_EQ(tfmc::loadOptionsError(load), "threads must be between 1 and 256");
  load.threads = 1;
  load.kvType = "int8";
  EXPECT_EQ(tfmc::loadOptionsError(load),
            "kv type: expected 'auto', 'float32' or 'float16', got 'int8'");
  tfmc::Translator &t = bundled();
  tfmc::TranslateOptions o = t.defaultOptions();
  EXPECT_EQ(t.optionsError(o), "");
  o.beamSize = 0;
  EXPECT_EQ(t.optionsError(o), "beam size must be between 1 and 256");
  // What the options say is what translate() says.
  auto refused = t.translate({"谢谢。"}, o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), t.optionsError(o));
  o = t.defaultOptions();
  o.minLength = 257;
  o.maxLength = 300;
  EXPECT_EQ(t.optionsError(o), "min length must not exceed the model's "
                               "max_len (256)");
}

/// LoadOptions::kvType: a bad name is a load error that says what it
/// expects; "float16" reaches the compiled model (its fused stage, dumped,
/// keeps the self caches as f16 under float32 weights) and translates these
/// sentences as float32 keys/values do (both checked against the reference
/// in the e2e fixtures' tests).
TEST(Api, KeyValueTypeIsALoadOption) {
  tfmc::LoadOptions load;
  load.cacheDir = TFMC_E2E_CACHE_DIR;
  std::string model =
      std::string(TFMC_SOURCE_DIR) + "/examples/zh-en/model.json";
  load.kvType = "bfloat16";
  auto refused = tfmc::Translator::load(model, load);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "kv type: expected 'auto', 'float32' or "
                             "'float16', got 'bfloat16'");
  char dir[] = "/tmp/tfmc-api-dump-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  load.kvType = "float16";
  load.dumpDir = dir;
  auto half = tfmc::Translator::load(model, load);
  ASSERT_TRUE(half) << half.error();
  EXPECT_EQ((*half)->configuration().rfind(
                "float32 weights, float16 keys/values, ", 0),
            0u)
      << (*half)->configuration();
  std::string fused =
      ScratchFile::readPath(std::string(dir) + "/02-fused.mlir");
  std::filesystem::remove_all(dir);
  EXPECT_NE(fused.find("xf16> {tfm.cache = \"self_key.0\"}"), std::string::npos)
      << "the fused stage of a float32 model loaded with kvType float16";
  auto want = bundled().translate(kSentences);
  auto got = (*half)->translate(kSentences);
  ASSERT_TRUE(want) << want.error();
  ASSERT_TRUE(got) << got.error();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i)
    EXPECT_EQ((*got)[i].best().text, (*want)[i].best().text) << "line " << i;
}

/// Compiled code that cannot get a buffer (here: a batch too large for the
/// address space the test leaves the process) makes the call an error that
/// says so, where it was a segfault inside JIT code (CompiledCall.h); so
/// does a batch whose decoder caches cannot be had (LLVM's abort before);
/// the translator then works as before.
TEST(Api, OutOfMemoryInCompiledCodeIsAnError) {
  tfmc::LoadOptions load;
  load.cacheDir = TFMC_E2E_CACHE_DIR;
  load.encoderStates = true;
  auto t = tfmc::Translator::load(
      std::string(TFMC_SOURCE_DIR) + "/examples/zh-en/model.json", load);
  ASSERT_TRUE(t) << t.error();
  std::vector<std::vector<int32_t>> small = {{10, 20, 30}, {40, 50}};
  auto before = (*t)->encode(small);
  ASSERT_TRUE(before) << before.error();
  // 5,000 rows of 200 tokens: states of ~1 GB, which the runtime allocates
  // before the call (within the limit below), and ~4 GB of feed-forward
  // rows, which the compiled encoder allocates (beyond it).
  std::vector<std::vector<int32_t>> huge(5000, std::vector<int32_t>(200));
  for (size_t r = 0; r < huge.size(); ++r)
    for (size_t i = 0; i < huge[r].size(); ++i)
      huge[r][i] = static_cast<int32_t>(5 + (r * 7 + i * 13) % 3000);
  tfmc::Result<tfmc::EncoderStates> refused =
      tfmc::Result<tfmc::EncoderStates>::failure("");
  {
    AddressSpaceLimit limit(size_t(5) << 29);
    refused = (*t)->encode(huge);
  }
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("out of memory"), std::string::npos)
      << refused.error();
  // The states themselves (~1 GB, a std::vector the runtime fills) beyond
  // 256 MB more: an error result too (the process ended before).
  tfmc::Result<tfmc::EncoderStates> noStates =
      tfmc::Result<tfmc::EncoderStates>::failure("");
  {
    AddressSpaceLimit limit(size_t(1) << 28);
    noStates = (*t)->encode(huge);
  }
  ASSERT_FALSE(noStates);
  EXPECT_NE(noStates.error().find("out of memory (the encoder states"),
            std::string::npos)
      << noStates.error();
  // A batch of 1,500 sources of 120 tokens: the decoder's cross-attention
  // keys and values (~1.1 GB), which the runtime takes, do not fit in
  // 512 MB more either.
  std::vector<std::vector<int32_t>> wide(1500, std::vector<int32_t>(120));
  for (size_t r = 0; r < wide.size(); ++r)
    for (size_t i = 0; i < wide[r].size(); ++i)
      wide[r][i] = static_cast<int32_t>(5 + (r * 11 + i * 17) % 3000);
  tfmc::TranslateOptions options = (*t)->defaultOptions();
  options.batchSize = 1500;
  tfmc::Result<std::vector<tfmc::Translation>> untranslated =
      tfmc::Result<std::vector<tfmc::Translation>>::failure("");
  {
    AddressSpaceLimit limit(size_t(1) << 29);
    untranslated = (*t)->translateIds(wide, options);
  }
  ASSERT_FALSE(untranslated);
  EXPECT_NE(untranslated.error().find("out of memory"), std::string::npos)
      << untranslated.error();
  auto after = (*t)->encode(small);
  ASSERT_TRUE(after) << after.error();
  EXPECT_EQ(after->values, before->values);
  auto translated = (*t)->translate(kSentences);
  auto want = bundled().translate(kSentences);
  ASSERT_TRUE(translated) << translated.error();
  ASSERT_TRUE(want) << want.error();
  for (size_t i = 0; i < want->size(); ++i)
    EXPECT_EQ((*translated)[i].best().text, (*want)[i].best().text);
}

} // namespace
