//===- CompileCacheTest.cpp - the compiled-object cache's failure modes ---===//

#include "compiler/JIT/CompileCache.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <thread>
#include <vector>

using namespace mlir::tfm;

namespace {

class CompileCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tfmc-cache-test", path));
    root = std::string(path);
    dir = root + "/cache";
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  std::string read(const std::string &path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    return buffer ? (*buffer)->getBuffer().str() : "";
  }
  void write(const std::string &path, llvm::StringRef text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << text;
  }

  std::string root, dir, warnings;
  llvm::raw_string_ostream warn{warnings};
};

// An object with a NUL byte and every byte value, to be sure nothing is
// treated as text.
std::string objectBytes() {
  std::string bytes = "\x7f"
                      "ELF";
  for (int i = 0; i < 512; ++i)
    bytes.push_back(static_cast<char>(i % 256));
  return bytes;
}

TEST_F(CompileCacheTest, MissThenHit) {
  CompileCache cache(dir, warn);
  EXPECT_FALSE(cache.lookup("key A").has_value());
  EXPECT_FALSE(llvm::sys::fs::exists(dir)) << "a lookup creates nothing";
  ASSERT_TRUE(cache.store("key A", "{\"meta\":1}", objectBytes()));
  std::optional<CompileCache::Entry> entry = cache.lookup("key A");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->metadata, "{\"meta\":1}");
  EXPECT_EQ(entry->object, objectBytes());
  // Another key misses; the file is named by the key's SHA-256.
  EXPECT_FALSE(cache.lookup("key B").has_value());
  EXPECT_EQ(cache.entryPath("key A"),
            dir + "/" + CompileCache::digest("key A") + ".tfmo");
  EXPECT_EQ(CompileCache::digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(warnings, "");
  // No temporary files are left behind.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(CompileCacheTest, CorruptEntryIsAWarningAndAMiss) {
  CompileCache cache(dir, warn);
  ASSERT_TRUE(cache.store("k", "meta", objectBytes()));
  std::string path = cache.entryPath("k");
  std::string text = read(path);
  text[text.size() - 10] ^= 0x20; // one flipped bit in the object
  write(path, text);
  EXPECT_FALSE(cache.lookup("k").has_value());
  EXPECT_EQ(warnings, "warning: compile cache: " + path +
                          ": checksum mismatch; recompiling\n");
  // Storing again repairs it.
  warnings.clear();
  ASSERT_TRUE(cache.store("k", "meta", objectBytes()));
  EXPECT_TRUE(cache.lookup("k").has_value());
  EXPECT_EQ(warnings, "");
}

TEST_F(CompileCacheTest, TruncatedEntries) {
  CompileCache cache(dir, warn);
  ASSERT_TRUE(cache.store("k", "meta", objectBytes()));
  std::string path = cache.entryPath("k");
  std::string text = read(path);
  // Cut inside the payload, inside the header, and to nothing.
  for (size_t keep :
       {text.size() - 1, text.size() / 2, size_t(40), size_t(0)}) {
    write(path, llvm::StringRef(text).take_front(keep));
    warnings.clear();
    EXPECT_FALSE(cache.lookup("k").has_value()) << keep;
    EXPECT_NE(warnings.find("recompiling"), std::string::npos) << keep;
  }
  write(path, llvm::StringRef(text).take_front(text.size() - 100));
  warnings.clear();
  cache.lookup("k");
  EXPECT_NE(warnings.find("truncated"), std::string::npos) << warnings;
}

TEST_F(CompileCacheTest, ForeignEntries) {
  CompileCache cache(dir, warn);
  ASSERT_TRUE(cache.store("key A", "meta", objectBytes()));
  // An entry of key A under key B's name (copied, or a hash collision).
  ASSERT_FALSE(llvm::sys::fs::copy_file(cache.entryPath("key A"),
                                        cache.entryPath("key B")));
  EXPECT_FALSE(cache.lookup("key B").has_value());
  EXPECT_NE(warnings.find("entry belongs to another key"), std::string::npos);
  // Something that is not a cache entry at all.
  write(cache.entryPath("key C"), "\x7f"
                                  "ELF not ours");
  warnings.clear();
  EXPECT_FALSE(cache.lookup("key C").has_value());
  EXPECT_NE(warnings.find("not a tfmc cache entry"), std::string::npos);
}

TEST_F(CompileCacheTest, UnusableDirectoryIsAWarning) {
  // A directory that cannot be created: its parent is a regular file.
  write(root + "/file", "x");
  CompileCache cache(root + "/file/cache", warn);
  EXPECT_FALSE(cache.lookup("k").has_value());
  EXPECT_EQ(warnings, "") << "a missing entry is a plain miss";
  EXPECT_FALSE(cache.store("k", "meta", objectBytes()));
  EXPECT_NE(warnings.find("cannot create " + root + "/file/cache"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("continuing without caching"), std::string::npos);
  // An entry path that is a directory cannot be read or replaced.
  CompileCache other(dir, warn);
  ASSERT_FALSE(llvm::sys::fs::create_directories(other.entryPath("k")));
  warnings.clear();
  EXPECT_FALSE(other.lookup("k").has_value());
  EXPECT_FALSE(other.store("k", "meta", objectBytes()));
  EXPECT_NE(warnings.find("cannot rename"), std::string::npos) << warnings;
}

TEST_F(CompileCacheTest, ConcurrentWritersOfOneKeyBothSucceed) {
  std::vector<std::thread> writers;
  std::vector<int> ok(8, 0);
  std::vector<std::string> logs(8);
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      llvm::raw_string_ostream os(logs[t]);
      CompileCache cache(dir, os);
      bool all = true;
      for (int i = 0; i < 20; ++i)
        all &= cache.store("shared", "meta", objectBytes());
      ok[t] = all;
    });
  for (std::thread &w : writers)
    w.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_TRUE(ok[t]) << logs[t];
    EXPECT_EQ(logs[t], "");
  }
  CompileCache cache(dir, warn);
  std::optional<CompileCache::Entry> entry = cache.lookup("shared");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->object, objectBytes());
}

/// Sets an entry's modification time (what marks it used) `age` seconds
/// back.
void age(const std::string &path, int seconds) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds;
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

/// Entries beyond the limit go least recently used first (a hit counts as
/// a use); the entry just stored always stays, and so do those used in the
/// last ten minutes (another process may be about to map them); a
/// temporary file a writer left an hour ago goes, a recent one stays.
TEST_F(CompileCacheTest, StoresKeepTheRecentlyUsedEntriesUnderTheLimit) {
  std::string object(100000, 'x');
  // Room for three entries of ~100 KB.
  CompileCache cache(dir, warn, 350000);
  for (const char *key : {"a", "b", "c"})
    ASSERT_TRUE(cache.store(key, "m", object));
  age(cache.entryPath("a"), 3000);
  age(cache.entryPath("b"), 2000);
  age(cache.entryPath("c"), 1000);
  // "a" is the oldest, but a hit makes it the most recently used.
  ASSERT_TRUE(cache.lookup("a").has_value());
  std::string stale = cache.entryPath("z") + ".tmp-12345678",
              fresh = cache.entryPath("y") + ".tmp-87654321";
  write(stale, "partial");
  write(fresh, "partial");
  age(stale, 7200);
  ASSERT_TRUE(cache.store("d", "m", object));
  EXPECT_TRUE(llvm::sys::fs::exists(cache.entryPath("a")));
  EXPECT_FALSE(llvm::sys::fs::exists(cache.entryPath("b")));
  EXPECT_TRUE(llvm::sys::fs::exists(cache.entryPath("c")));
  EXPECT_TRUE(llvm::sys::fs::exists(cache.entryPath("d")));
  EXPECT_FALSE(llvm::sys::fs::exists(stale));
  EXPECT_TRUE(llvm::sys::fs::exists(fresh));
  // An entry larger than the limit alone is still stored; what was used
  // in the last ten minutes ("a", "d") stays with it, the rest goes.
  CompileCache tiny(dir, warn, 1000);
  ASSERT_TRUE(tiny.store("e", "m", object));
  EXPECT_TRUE(tiny.lookup("e").has_value());
  EXPECT_FALSE(llvm::sys::fs::exists(tiny.entryPath("c")));
  for (const char *key : {"a", "d"})
    EXPECT_TRUE(llvm::sys::fs::exists(tiny.entryPath(key))) << key;
  EXPECT_EQ(warnings, "");
}

TEST_F(CompileCacheTest, NoDirectoryMeansNoCache) {
  CompileCache cache("", warn);
  EXPECT_FALSE(cache.store("k", "m", "o"));
  EXPECT_FALSE(cache.lookup("k").has_value());
  EXPECT_EQ(warnings, "");
}

} // namespace
