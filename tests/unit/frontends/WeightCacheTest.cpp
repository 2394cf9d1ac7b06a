//===- WeightCacheTest.cpp - float32 copies of converted tensors on disk
//---===//

#include "TestFiles.h"

#include "frontends/model/FileSupport.h"
#include "frontends/model/SafeTensors.h"
#include "frontends/model/WeightCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

/// The .tfmw files in `dir`.
std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (StringRef(it->path()).ends_with(".tfmw"))
      out.push_back(it->path());
  return out;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// A safetensors file whose data section starts at a multiple of 4 bytes,
/// so that its float32 tensors at 4-byte offsets are read in place.
std::string alignedFile(const std::vector<RawTensor> &tensors) {
  size_t data = 0;
  for (const RawTensor &t : tensors)
    data += t.bytes.size();
  size_t header = safeTensorsBytes(tensors).size() - data;
  return safeTensorsBytes(tensors, (4 - header % 4) % 4);
}

class WeightCacheTest : public ::testing::Test {
protected:
  WeightCacheTest() {
    // Halves with every kind of value (subnormals, infinities, NaN, -0),
    // a bfloat16 tensor, a float32 one read in place, and sizes that are not
    // multiples of the entry's 64-byte slots.
    std::vector<uint16_t> halves;
    for (int i = 0; i < 1000; ++i)
      halves.push_back(uint16_t(i * 65.537));
    halves.push_back(0x7C00);
    halves.push_back(0x8000);
    tensors = {{"c", "F32", {2}, f32Bytes({1.5f, -2})},
               {"a", "F16", {2, 501}, u16Bytes(halves)},
               {"b", "BF16", {3}, u16Bytes({0x3F80, 0xC000, 0x0001})},
               {"d", "F16", {1}, u16Bytes({0x3555})}};
    model = dir.write("m.safetensors", alignedFile(tensors));
    cache = dir.file("cache");
  }

  std::unique_ptr<SafeTensorsFile> open(StringRef cacheDir) {
    auto file = SafeTensorsFile::open(model, cacheDir, &warnings);
    EXPECT_TRUE(bool(file)) << toString(file.takeError());
    return file ? std::move(*file) : nullptr;
  }

  /// Every value of every tensor, as bits, equal in `got` and `want`.
  static void expectSameFloats(const SafeTensorsFile &got,
                               const SafeTensorsFile &want) {
    ASSERT_EQ(got.tensors().size(), want.tensors().size());
    ASSERT_EQ(got.find("c")->data[1], -2.0f);
    for (size_t t = 0; t < want.tensors().size(); ++t) {
      const TensorView &g = got.tensors()[t], &w = want.tensors()[t];
      ASSERT_EQ(g.name, w.name);
      ASSERT_EQ(g.numElements(), w.numElements());
      ASSERT_TRUE(g.data && w.data);
      EXPECT_EQ(std::memcmp(g.data, w.data, w.numElements() * sizeof(float)), 0)
          << g.name;
    }
  }

  /// After tensor d was rewritten as -2 (0xC000): an open reads the new
  /// value, and the cache holds one entry, not `before`.
  void expectChangedValuesInANewEntry(const std::string &before) {
    std::unique_ptr<SafeTensorsFile> file = open(cache);
    ASSERT_TRUE(file);
    EXPECT_EQ(file->find("d")->data[0], -2.0f);
    std::vector<std::string> after = entries(cache);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_NE(after[0], before);
  }

  TempDir dir;
  std::vector<RawTensor> tensors;
  std::string model, cache, log;
  raw_string_ostream warnings{log};
};

TEST_F(WeightCacheTest, ALaterOpenMapsTheCopiesTheFirstStored) {
  std::unique_ptr<SafeTensorsFile> plain = open("");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(entries(cache).empty());

  std::unique_ptr<SafeTensorsFile> first = open(cache);
  ASSERT_TRUE(first);
  std::vector<std::string> stored = entries(cache);
  ASSERT_EQ(stored.size(), 1u);
  // Header, 1002 + 3 + 1 floats in 64-byte slots, the model's real path.
  SmallString<256> real;
  ASSERT_FALSE(sys::fs::real_path(model, real));
  std::string bytes = readAll(stored[0]);
  EXPECT_EQ(bytes.size(), 64u + 4032 + 64 + 64 + real.size());
  EXPECT_EQ(bytes.substr(64 + 4032 + 64 + 64), std::string(real));
  expectSameFloats(*first, *plain);

  std::unique_ptr<SafeTensorsFile> second = open(cache);
  ASSERT_TRUE(second);
  expectSameFloats(*second, *plain);
  // The copies are the entry's pages, not memory of the reader's own: the
  // entry is rewritten below while `second` still maps the original.
  std::string entry = readAll(stored[0]);
  float a0 = second->find("a")->data[7];
  size_t at =
      entry.find(std::string(reinterpret_cast<const char *>(&a0), 4), 64);
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(log, "");
  // Float32 read in place from the model file either way.
  EXPECT_EQ(second->find("c")->data[0], 1.5f);
}

TEST_F(WeightCacheTest, ACorruptEntryIsAWarningAndIsRewritten) {
  std::unique_ptr<SafeTensorsFile> plain = open("");
  open(cache);
  std::string path = entries(cache).at(0);
  std::string bytes = readAll(path);
  bytes[64 + 4 * 5] ^= 0x10; // one bit of a's sixth value
  writeAll(path, bytes);
  std::unique_ptr<SafeTensorsFile> reopened = open(cache);
  ASSERT_TRUE(reopened);
  EXPECT_NE(log.find("warning: weight cache: " + path +
                     ": checksum mismatch; converting the weights again"),
            std::string::npos)
      << log;
  expectSameFloats(*reopened, *plain);
  log.clear();
  std::unique_ptr<SafeTensorsFile> again = open(cache);
  EXPECT_EQ(log, "");
  expectSameFloats(*again, *plain);

  writeAll(path, bytes.substr(0, 100)); // truncated
  std::unique_ptr<SafeTensorsFile> truncated = open(cache);
  EXPECT_NE(log.find("bytes, expected"), std::string::npos) << log;
  expectSameFloats(*truncated, *plain);

  writeAll(path, std::string(bytes.size(), 'x')); // the right size only
  log.clear();
  std::unique_ptr<SafeTensorsFile> foreign = open(cache);
  EXPECT_NE(log.find("not a tfmc weight cache entry"), std::string::npos)
      << log;
  expectSameFloats(*foreign, *plain);
}

TEST_F(WeightCacheTest, AModelWrittenAgainGetsANewEntryAndTheOldOneGoes) {
  open(cache);
  std::vector<std::string> before = entries(cache);
  ASSERT_EQ(before.size(), 1u);
  // Other values, same names and shapes, same size: only the file's
  // identity (its modification time, maybe its inode) tells them apart.
  std::vector<RawTensor> changed = tensors;
  changed[3].bytes = u16Bytes({0xC000});
  sleep(0); // modification times have nanoseconds
  std::string bytes = alignedFile(changed);
  std::string temp = dir.write("m.new", bytes);
  ASSERT_FALSE(sys::fs::rename(temp, model));
  expectChangedValuesInANewEntry(before[0]);
  EXPECT_EQ(log, "");
}

/// Sets the modification time of `path` to `seconds` since the epoch.
void setModified(const std::string &path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST_F(WeightCacheTest, AModelRewrittenInPlaceWithItsOldTimeGetsANewEntry) {
  // `cp -p`, `rsync --inplace -t`, archives with one fixed time: the same
  // inode, size and modification time, other values. The change time
  // still tells them apart.
  setModified(model, 1765000000);
  open(cache);
  std::vector<std::string> before = entries(cache);
  ASSERT_EQ(before.size(), 1u);
  std::vector<RawTensor> changed = tensors;
  changed[3].bytes = u16Bytes({0xC000});
  std::string bytes = alignedFile(changed);
  ASSERT_EQ(bytes.size(), readAll(model).size());
  // (change times have nanoseconds, but a coarse clock may not)
  usleep(20000);
  writeAll(model, bytes);
  setModified(model, 1765000000);
  expectChangedValuesInANewEntry(before[0]);
  // ... and the next open maps the new copies.
  std::unique_ptr<SafeTensorsFile> file = open(cache);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->find("d")->data[0], -2.0f);
  EXPECT_EQ(log, "");
}

TEST_F(WeightCacheTest, TheIdentityIsThatOfTheFileRead) {
  std::string original = readAll(model);
  FileIdentity read;
  auto buffer = openFile(model, &read);
  ASSERT_TRUE(bool(buffer));
  EXPECT_EQ(FileIdentity::of(model), read);
  // Other bytes renamed over the path: the path's identity changes, the
  // bytes read (and their identity) do not.
  std::vector<RawTensor> changed = tensors;
  changed[3].bytes = u16Bytes({0xC000});
  std::string temp = dir.write("m.new", alignedFile(changed));
  ASSERT_FALSE(sys::fs::rename(temp, model));
  EXPECT_NE(FileIdentity::of(model), read);
  EXPECT_EQ((*buffer)->getBuffer(), original);
  EXPECT_NE(readAll(model), original);
}

/// One slot of three floats, for WeightCache used directly.
struct OneSlot {
  std::vector<WeightCache::Slot> slots{{0, 3}};
  float values[3] = {1, 2, 3};
  std::vector<const float *> data{values};
  uint64_t bytes = WeightCache::layout(slots);
};

TEST_F(WeightCacheTest, NothingIsStoredForAFileChangedSinceItWasRead) {
  std::optional<FileIdentity> read = FileIdentity::of(model);
  ASSERT_TRUE(read);
  usleep(20000);
  writeAll(model, readAll(model)); // the same bytes, written again
  OneSlot one;
  WeightCache cache(this->cache, model, *read, warnings, 1 << 20);
  ASSERT_TRUE(cache.usable());
  EXPECT_FALSE(cache.store(one.slots, one.data, one.bytes));
  EXPECT_TRUE(entries(this->cache).empty());
  // Unchanged: stored.
  WeightCache now(this->cache, model, *FileIdentity::of(model), warnings,
                  1 << 20);
  EXPECT_TRUE(now.store(one.slots, one.data, one.bytes));
  EXPECT_EQ(entries(this->cache).size(), 1u);
  EXPECT_EQ(log, "");
}

TEST_F(WeightCacheTest, CopiesLargerThanHalfTheLimitAreNotKept) {
  OneSlot one;
  uint64_t entryBytes = WeightCache::kHeaderBytes + one.bytes;
  WeightCache small(cache, model, *FileIdentity::of(model), warnings,
                    2 * entryBytes - 1);
  EXPECT_FALSE(small.store(one.slots, one.data, one.bytes));
  EXPECT_TRUE(entries(cache).empty());
  WeightCache enough(cache, model, *FileIdentity::of(model), warnings,
                     2 * entryBytes);
  EXPECT_TRUE(enough.store(one.slots, one.data, one.bytes));
  EXPECT_EQ(log, "");
}

TEST_F(WeightCacheTest, AHitMarksTheEntryUsed) {
  open(cache);
  std::vector<std::string> stored = entries(cache);
  ASSERT_EQ(stored.size(), 1u);
  setModified(stored[0], 1000000000);
  open(cache);
  EXPECT_EQ(log, "");
  struct stat st;
  ASSERT_EQ(::stat(stored[0].c_str(), &st), 0);
  EXPECT_GT(st.st_mtime, time(nullptr) - 600);
}

TEST_F(WeightCacheTest, AKilledWritersTemporaryFileGoesAfterAnHour) {
  ASSERT_FALSE(sys::fs::create_directories(cache));
  std::string old = cache + "/x.tfmw.temp-stream-a1b2c3";
  std::string young = cache + "/y.tfmw.temp-stream-d4e5f6";
  writeAll(old, "half an entry");
  writeAll(young, "another writer's, still writing");
  setModified(old, time(nullptr) - 2 * 3600);
  open(cache);
  EXPECT_FALSE(sys::fs::exists(old));
  EXPECT_TRUE(sys::fs::exists(young));
  EXPECT_EQ(entries(cache).size(), 1u);
}

TEST_F(WeightCacheTest, StoringRemovesTheEntriesOfDeletedModels) {
  std::string other = dir.write("other.safetensors", alignedFile(tensors));
  ASSERT_TRUE(bool(SafeTensorsFile::open(other, cache, &warnings)));
  std::vector<std::string> before = entries(cache);
  open(cache);
  std::vector<std::string> mine = entries(cache);
  ASSERT_EQ(mine.size(), 2u);
  std::string ours = llvm::is_contained(before, mine[0]) ? mine[1] : mine[0];
  // A lookup prunes nothing: only storing does.
  ASSERT_FALSE(sys::fs::remove(other));
  open(cache);
  EXPECT_EQ(entries(cache).size(), 2u);
  // A third model's entry: the deleted one's goes, the live one's stays.
  std::string third = dir.write("third.safetensors", alignedFile(tensors));
  ASSERT_TRUE(bool(SafeTensorsFile::open(third, cache, &warnings)));
  std::vector<std::string> after = entries(cache);
  EXPECT_EQ(after.size(), 2u);
  EXPECT_TRUE(llvm::is_contained(after, ours)); // the live model's stays
  EXPECT_FALSE(llvm::is_contained(after, before[0]));
}

TEST_F(WeightCacheTest, ReleasingAMappedCopy) {
  open(cache);
  std::unique_ptr<SafeTensorsFile> file = open(cache);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->releaseFloatCopy("a"), 1002 * int64_t(sizeof(float)));
  EXPECT_EQ(file->find("a")->data, nullptr);
  EXPECT_EQ(file->releaseFloatCopy("a"), 0);
  EXPECT_EQ(file->releaseFloatCopy("c"), 0); // read in place
  EXPECT_EQ(file->find("d")->data[0], 0.333251953125f);
}

TEST_F(WeightCacheTest, ADirectoryThatCannotBeWrittenIsAWarning) {
  std::string blocker = dir.write("blocker", "a file where the directory goes");
  std::unique_ptr<SafeTensorsFile> plain = open("");
  std::unique_ptr<SafeTensorsFile> file = open(blocker + "/cache");
  ASSERT_TRUE(file);
  EXPECT_NE(log.find("warning: weight cache: cannot create"), std::string::npos)
      << log;
  expectSameFloats(*file, *plain);
}

TEST_F(WeightCacheTest, AFloat32ModelNeedsNoEntry) {
  std::string f32 = dir.write(
      "f.safetensors", alignedFile({{"c", "F32", {2}, f32Bytes({1, 2})}}));
  auto file = SafeTensorsFile::open(f32, cache, &warnings);
  ASSERT_TRUE(bool(file));
  EXPECT_TRUE(entries(cache).empty());
}

} // namespace
