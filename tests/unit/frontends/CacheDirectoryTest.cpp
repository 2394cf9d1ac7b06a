//===- CacheDirectoryTest.cpp - one size for both kinds of cache entries --===//

#include "TestFiles.h"

#include "frontends/model/CacheDirectory.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <ctime>
#include <fcntl.h>
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
  std::string oldWeights = entry(dir, "a-b.tfmw", 400, 500);
  std::string oldCode = entry(dir, "c.tfmo", 400, 400);
  std::string used = entry(dir, "d.tfmo", 400, 300);
  std::string recent = entry(dir, "e-f.tfmw", 400, 200);
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
  // The entry just stored stays even when it alone is over the limit.
  pruneCacheDirectory(dir.path(), kept, 1);
  EXPECT_TRUE(sys::fs::exists(kept));
  EXPECT_FALSE(sys::fs::exists(used));
  EXPECT_FALSE(sys::fs::exists(recent));
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

TEST(CacheDirectory, TheLimitComesFromTheEnvironment) {
  std::string log;
  raw_string_ostream warnings(log);
  ASSERT_EQ(::unsetenv("TFMC_CACHE_LIMIT_MB"), 0);
  EXPECT_EQ(cacheLimitBytes(warnings), uint64_t(512) << 20);
  ASSERT_EQ(::setenv("TFMC_CACHE_LIMIT_MB", " 3 ", 1), 0);
  EXPECT_EQ(cacheLimitBytes(warnings), uint64_t(3) << 20);
  ASSERT_EQ(::setenv("TFMC_CACHE_LIMIT_MB", "0", 1), 0);
  EXPECT_EQ(cacheLimitBytes(warnings), UINT64_MAX);
  EXPECT_EQ(log, "");
  // Not a whole number: the default, and one warning however often asked.
  for (const char *bad : {"abc", "-5", "0.5", "2x"}) {
    ASSERT_EQ(::setenv("TFMC_CACHE_LIMIT_MB", bad, 1), 0);
    EXPECT_EQ(cacheLimitBytes(warnings), uint64_t(512) << 20) << bad;
  }
  ASSERT_EQ(::unsetenv("TFMC_CACHE_LIMIT_MB"), 0);
  EXPECT_EQ(log, "warning: TFMC_CACHE_LIMIT_MB='abc' is not a whole number "
                 "of megabytes; using 512\n");
}

} // namespace
