//===- CacheDirectoryTest.cpp - one size for both kinds of cache entries --===//

#include "TestFiles.h"

#include "frontends/model/CacheDirectory.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <string>
#include <sys/stat.h>

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

/// A file of `kilobytes` KiB last used `ago` seconds before now.
std::string entry(const TempDir &dir, StringRef name, int kilobytes,
                  time_t ago) {
  std::string path = dir.write(name, std::string(kilobytes * 1024, 'x'));
  time_t when = time(nullptr) - ago;
  struct timespec times[2] = {{when, 0}, {when, 0}};
  EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  return path;
}

TEST(CacheDirectory, TheLeastRecentlyUsedEntriesOfEitherKindGoFirst) {
  TempDir dir;
  std::string oldWeights = entry(dir, "a-b.tfmw", 400, 5000);
  std::string oldCode = entry(dir, "c.tfmo", 400, 4000);
  std::string used = entry(dir, "d.tfmo", 400, 3000);
  std::string recent = entry(dir, "e-f.tfmw", 400, 2000);
  std::string kept = entry(dir, "g.tfmo", 400, 10000); // the one just stored
  std::string other = entry(dir, "notes.txt", 4000, 9000);
  markCacheEntryUsed(used);
  pruneCacheDirectory(dir.path(), kept, 1200 * 1024);
  EXPECT_FALSE(sys::fs::exists(oldWeights));
  EXPECT_FALSE(sys::fs::exists(oldCode));
  EXPECT_TRUE(sys::fs::exists(used));
  EXPECT_TRUE(sys::fs::exists(recent));
  EXPECT_TRUE(sys::fs::exists(kept));
  EXPECT_TRUE(sys::fs::exists(other)); // not the cache's
  // The entry just stored stays even when it alone is over the limit, and
  // so does one used in the last ten minutes.
  pruneCacheDirectory(dir.path(), kept, 1);
  EXPECT_TRUE(sys::fs::exists(kept));
  EXPECT_TRUE(sys::fs::exists(used));
  EXPECT_FALSE(sys::fs::exists(recent));
}

/// A model's weight copies are stored when it loads, its compiled entry a
/// moment later: with a limit below the two, neither store may remove the
/// other (each run would rewrite both).
TEST(CacheDirectory, AProcesssTwoEntriesDoNotPushEachOtherOut) {
  TempDir dir;
  std::string weights = entry(dir, "a-b.tfmw", 400, 0);
  std::string code = entry(dir, "c.tfmo", 100, 0);
  pruneCacheDirectory(dir.path(), code, 200 * 1024);
  EXPECT_TRUE(sys::fs::exists(weights));
  EXPECT_TRUE(sys::fs::exists(code));
  // Ten minutes later, another model's store makes room.
  std::string later = entry(dir, "d.tfmo", 100, 0);
  for (const std::string &path : {weights, code}) {
    time_t when = time(nullptr) - 60 * kCacheGraceMinutes - 5;
    struct timespec times[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  pruneCacheDirectory(dir.path(), later, 200 * 1024);
  EXPECT_FALSE(sys::fs::exists(weights));
  EXPECT_TRUE(sys::fs::exists(code));
  EXPECT_TRUE(sys::fs::exists(later));
}

TEST(CacheDirectory, TemporaryFilesOfKilledWritersGoAfterAnHour) {
  TempDir dir;
  std::string oldCode = entry(dir, "c.tfmo.tmp-12345678", 1, 2 * 3600);
  std::string oldWeights = entry(dir, "a-b.tfmw.temp-stream-abc123", 1, 7200);
  std::string writing = entry(dir, "d-e.tfmw.temp-stream-def456", 1, 60);
  pruneCacheDirectory(dir.path(), "", UINT64_MAX);
  EXPECT_FALSE(sys::fs::exists(oldCode));
  EXPECT_FALSE(sys::fs::exists(oldWeights));
  EXPECT_TRUE(sys::fs::exists(writing));
}

TEST(CacheDirectory, LimitValues) {
  EXPECT_EQ(parseCacheLimit("3"), uint64_t(3) << 20);
  EXPECT_EQ(parseCacheLimit(" 7 "), uint64_t(7) << 20);
  EXPECT_EQ(parseCacheLimit("0"), UINT64_MAX);
  for (const char *bad : {"", "abc", "-5", "0.5", "1e3", "2x",
                          "99999999999999999999", "17592186044416"})
    EXPECT_EQ(parseCacheLimit(bad), std::nullopt) << bad;
  EXPECT_EQ(parseCacheLimit("17592186044415"), uint64_t(17592186044415) << 20);
}

/// $TFMC_CACHE_LIMIT_MB for one test, restored after it.
class LimitVariable {
public:
  explicit LimitVariable(const char *value) {
    if (const char *old = ::getenv("TFMC_CACHE_LIMIT_MB"))
      saved = old;
    if (value)
      ::setenv("TFMC_CACHE_LIMIT_MB", value, 1);
    else
      ::unsetenv("TFMC_CACHE_LIMIT_MB");
  }
  ~LimitVariable() {
    if (saved)
      ::setenv("TFMC_CACHE_LIMIT_MB", saved->c_str(), 1);
    else
      ::unsetenv("TFMC_CACHE_LIMIT_MB");
  }

private:
  std::optional<std::string> saved;
};

TEST(CacheDirectory, TheLimitComesFromTheEnvironment) {
  std::string log;
  raw_string_ostream warnings(log);
  {
    LimitVariable unset(nullptr);
    EXPECT_EQ(cacheLimitBytes(warnings), kDefaultCacheMegabytes << 20);
  }
  {
    LimitVariable three(" 3 ");
    EXPECT_EQ(cacheLimitBytes(warnings), uint64_t(3) << 20);
  }
  EXPECT_EQ(log, "");
  // Refused: the default, and a warning the first time in the process
  // (each cache of a run reads the variable).
  LimitVariable bad("abc");
  EXPECT_EQ(cacheLimitBytes(warnings), kDefaultCacheMegabytes << 20);
  EXPECT_EQ(cacheLimitBytes(warnings), kDefaultCacheMegabytes << 20);
  // (No other test of this program refuses a value.)
  static bool firstInProcess = true;
  EXPECT_EQ(log, firstInProcess
                     ? "warning: TFMC_CACHE_LIMIT_MB='abc' is not a whole "
                       "number of megabytes (0: no limit); using 2048\n"
                     : "");
  firstInProcess = false;
}

} // namespace
