//===- PageMemoryTest.cpp - large arrays on huge pages
//---------------------===//

#include "frontends/model/PageMemory.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace tfmc;

namespace {

bool aligned(const void *p, size_t to) {
  return reinterpret_cast<uintptr_t>(p) % to == 0;
}

/// The VmFlags of the mapping that holds `p` ("hg": advised MADV_HUGEPAGE),
/// from /proc/self/smaps.
std::string vmFlagsOf(const void *p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find('-') != std::string::npos &&
        (head >> std::hex >> begin >> dash >> end) && dash == '-' &&
        line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

/// Whether mappings are advised: the kernel has transparent huge pages
/// (then MADV_HUGEPAGE marks the mapping "hg" whatever the policy; without
/// them it is refused) and TFMC_HUGE_PAGES is not "never".
bool expectAdvice() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good() &&
         pages::adviseHugePages();
}

bool advised(const void *p) {
  return vmFlagsOf(p).find(" hg") != std::string::npos;
}

TEST(PageMemory, LargeArraysAreHugePageMappingsOfTheirOwn) {
  size_t bytes = 5 * pages::kHugePageBytes + 123;
  pages::Array<float> a(bytes / sizeof(float));
  ASSERT_TRUE(a);
  EXPECT_TRUE(aligned(a.get(), pages::kHugePageBytes));
  // Fresh mappings read as zero; every byte is usable.
  for (size_t i = 0; i < a.size(); i += 4096)
    EXPECT_EQ(a.get()[i], 0.0f);
  std::memset(a.get(), 0x7f, a.size() * sizeof(float));
  EXPECT_EQ(advised(a.get()), expectAdvice()) << vmFlagsOf(a.get());
}

TEST(PageMemory, MediumArraysShareAdvisedChunks) {
  std::vector<pages::Array<char>> arrays;
  std::set<uintptr_t> seen;
  for (size_t kb : {64, 100, 1024, 2047, 300, 64}) {
    arrays.emplace_back(kb << 10);
    char *p = arrays.back().get();
    EXPECT_TRUE(aligned(p, pages::kSmallPageBytes));
    std::memset(p, int(kb), kb << 10);
    EXPECT_EQ(advised(p), expectAdvice()) << vmFlagsOf(p);
    seen.insert(reinterpret_cast<uintptr_t>(p));
  }
  EXPECT_EQ(seen.size(), arrays.size());
  // No block overlaps another: each still holds its own fill.
  for (pages::Array<char> &a : arrays)
    for (size_t i = 0; i < a.size(); i += 997)
      ASSERT_EQ(static_cast<unsigned char>(a.get()[i]),
                static_cast<unsigned char>(a.size() >> 10));
}

TEST(PageMemory, FreedBlocksAreReusedAndChunksGoBack) {
  pages::Array<char> keep(256 << 10);
  char *base = keep.get();
  char *middle;
  {
    pages::Array<char> a(512 << 10), b(512 << 10);
    middle = a.get();
    std::memset(a.get(), 1, a.size());
    pages::Array<char> c(128 << 10);
    a.reset(); // freed out of order: kept for a block of its size
    pages::Array<char> d(512 << 10);
    EXPECT_EQ(d.get(), middle);
    // Its pages were given back: it reads as zero again.
    EXPECT_EQ(d.get()[0], 0);
    EXPECT_EQ(d.get()[(512 << 10) - 1], 0);
    std::memset(b.get(), 2, b.size());
    d.reset(); // idle again when the chunk empties below
  }
  // The mapping is there (the smaps reader works) ...
  EXPECT_NE(vmFlagsOf(base), "");
  keep.reset();
  // ... and once every block is freed the chunk blocks are carved from
  // starts again at its base, its pages given back, its idle list empty.
  pages::Array<char> again(512 << 10);
  EXPECT_EQ(again.get(), base);
  for (size_t i = 0; i < again.size(); i += 4096)
    ASSERT_EQ(again.get()[i], 0) << i;
  std::memset(again.get(), 3, again.size());
  pages::Array<char> next(512 << 10);
  EXPECT_EQ(next.get(), base + (512 << 10)); // not the stale idle block
}

TEST(PageMemory, FullChunksAreFollowedByNewOnes) {
  std::vector<pages::Array<char>> arrays;
  int jumps = 0; // blocks not right after the one before: a new chunk
  for (int i = 0; i < 40; ++i) { // 40 MiB: more than one 32 MiB chunk
    arrays.emplace_back(size_t(1) << 20);
    std::memset(arrays.back().get(), i, arrays.back().size());
    if (i && arrays[i].get() != arrays[i - 1].get() + (size_t(1) << 20))
      ++jumps;
  }
  EXPECT_EQ(jumps, 1);
  EXPECT_EQ(arrays[32].get() - arrays[0].get() >= 0 &&
                arrays[32].get() - arrays[0].get() < 32 << 20,
            false); // block 32 is not in the first chunk
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(arrays[i].get()[12345], char(i));
  // The first chunk, emptied while another is current, is unmapped.
  char *first = arrays[0].get();
  arrays.erase(arrays.begin(), arrays.begin() + 32);
  EXPECT_EQ(vmFlagsOf(first), "");
}

TEST(PageMemory, VectorsUseThePages) {
  pages::Vector<float> v(3 << 20, 1.5f);
  EXPECT_TRUE(aligned(v.data(), pages::kHugePageBytes));
  EXPECT_EQ(v[(3 << 20) - 1], 1.5f);
  pages::Vector<float> w(v);
  EXPECT_NE(w.data(), v.data());
  EXPECT_EQ(w, v);
  pages::Vector<int8_t> small(10, 3);
  EXPECT_TRUE(aligned(small.data(), 64));
  EXPECT_EQ(small[9], 3);
}

} // namespace
