//===- BufferPoolTest.cpp - the pool behind compiled code's malloc/free ---===//
//
// Compiled code's malloc and free (bufferPoolSymbols) keep freed blocks for
// reuse. Blocks above 2 MB are mappings, all kept idle while the pool's
// mappings, in use and idle together, stay within max(64 MB, the most ever
// in use at once); a new mapping beyond that unmaps idle blocks first.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace tfmc::runtime;

namespace {

using MallocFn = void *(*)(size_t);
using FreeFn = void (*)(void *);

/// Compiled code's malloc and free, on a pool with nothing idle (tests in
/// one process share it).
struct Pool {
  MallocFn allocate = nullptr;
  FreeFn release = nullptr;
  Pool() {
    poolTrim();
    for (auto &[name, fn] : bufferPoolSymbols()) {
      if (name == "malloc")
        allocate = reinterpret_cast<MallocFn>(fn);
      else if (name == "free")
        release = reinterpret_cast<FreeFn>(fn);
    }
  }
};

constexpr size_t MB = size_t(1) << 20;

/// The pool's promise on memory: never more mapped than its peak in use.
void expectWithinPeak(const char *when) {
  PoolCounters c = bufferPoolCounters();
  EXPECT_LE(c.liveMapped + c.idleMapped, std::max(64 * MB, c.highWater))
      << when << ": in use " << c.liveMapped << ", idle " << c.idleMapped
      << ", peak " << c.highWater;
  EXPECT_LE(c.liveMapped, c.highWater) << when;
}

} // namespace

TEST(BufferPool, HandsAFreedBlockOutAgain) {
  Pool pool;
  ASSERT_TRUE(pool.allocate && pool.release);
  for (size_t bytes : {size_t(1000), 8 * MB}) {
    void *p = pool.allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 1, bytes);
    pool.release(p);
    void *q = pool.allocate(bytes);
    EXPECT_EQ(q, p) << bytes << " bytes";
    pool.release(q);
  }
  pool.release(nullptr);
}

TEST(BufferPool, KeepsWhatABatchUsedAtItsPeak) {
  Pool pool;
  PoolCounters before = bufferPoolCounters();
  // Three blocks of 40 MB at once, as a wide batch's encoder holds its
  // buffers: all three stay idle after they are freed (more than 64 MB).
  void *blocks[3];
  for (void *&b : blocks) {
    b = pool.allocate(40 * MB);
    ASSERT_NE(b, nullptr);
  }
  PoolCounters held = bufferPoolCounters();
  EXPECT_GE(held.liveMapped, before.liveMapped + 120 * MB);
  EXPECT_GE(held.highWater, held.liveMapped);
  expectWithinPeak("three blocks held");
  for (void *b : blocks)
    pool.release(b);
  PoolCounters idle = bufferPoolCounters();
  EXPECT_GE(idle.idleMapped, before.idleMapped + 120 * MB);
  expectWithinPeak("three blocks freed");
  // The next batch gets the same blocks back: no new mapping.
  for (void *&b : blocks)
    b = pool.allocate(40 * MB);
  EXPECT_EQ(bufferPoolCounters().highWater, held.highWater);
  for (void *b : blocks)
    pool.release(b);
}

TEST(BufferPool, UnmapsIdleBlocksRatherThanGrowPastItsPeak) {
  Pool pool;
  void *a = pool.allocate(50 * MB), *b = pool.allocate(50 * MB);
  ASSERT_TRUE(a && b);
  pool.release(a);
  pool.release(b);
  size_t peak = bufferPoolCounters().highWater;
  // Blocks of another size class, one at a time: each needs a mapping of
  // its own, which the idle 50 MB blocks make room for.
  for (size_t size : {70 * MB, 90 * MB, 30 * MB}) {
    void *c = pool.allocate(size);
    ASSERT_NE(c, nullptr);
    expectWithinPeak(("holding " + std::to_string(size >> 20) + " MB").c_str());
    pool.release(c);
    expectWithinPeak("after freeing it");
  }
  EXPECT_EQ(bufferPoolCounters().highWater, peak);
}

TEST(BufferPool, MappedBlocksAreWholeHugePagesWithoutAHeader) {
  Pool pool;
  // 4 MiB is two huge pages: a header in front would make its last bytes
  // touch a third.
  PoolCounters before = bufferPoolCounters();
  void *p = pool.allocate(4 * MB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2 * MB), 0u);
  PoolCounters held = bufferPoolCounters();
  EXPECT_EQ(held.liveMapped, before.liveMapped + 4 * MB);
  std::memset(p, 3, 4 * MB);
  pool.release(p);
  EXPECT_EQ(bufferPoolCounters().liveMapped, before.liveMapped);
}

TEST(BufferPool, KeepsHeapBlocksUpToTheirPeak) {
  Pool pool;
  // Forty 1 MB blocks at once (a batch of 16's self-attention caches): all
  // of them come back for the next batch, not only the first 24 MB.
  std::vector<void *> first(40), second(40);
  for (void *&p : first) {
    p = pool.allocate(MB);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  }
  for (void *p : first)
    pool.release(p);
  PoolCounters idle = bufferPoolCounters();
  EXPECT_LE(idle.liveHeap + idle.idleHeap,
            std::max(24 * MB, idle.heapHighWater));
  for (void *&p : second)
    p = pool.allocate(MB);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  EXPECT_EQ(first, second);
  for (void *p : second)
    pool.release(p);
}

TEST(BufferPool, SmallerBlocksTakeThePagesOfALargerIdleOne) {
  Pool pool;
  // A batch's FFN rows (24 MB) freed, then blocks of another class, as the
  // next layer's attention asks for them: they take the idle block's pages
  // piece by piece (moved, so they still hold what was written there)
  // rather than map fresh pages, and nothing is unmapped to make room.
  constexpr size_t kBig = 24 * MB, kSmall = 6 * MB;
  auto *big = static_cast<unsigned char *>(pool.allocate(kBig));
  ASSERT_NE(big, nullptr);
  for (size_t i = 0; i < kBig; i += 4096)
    big[i] = static_cast<unsigned char>(1 + (i / kSmall));
  pool.release(big);
  PoolCounters before = bufferPoolCounters();
  std::vector<unsigned char *> small;
  std::vector<int> seen;
  for (int b = 0; b < 4; ++b) {
    auto *p = static_cast<unsigned char *>(pool.allocate(kSmall));
    ASSERT_NE(p, nullptr);
    small.push_back(p);
    // Fresh pages read as zero; moved ones hold one piece's mark.
    unsigned char mark = p[0];
    for (size_t i = 0; i < kSmall; i += 4096)
      ASSERT_EQ(p[i], mark) << "block " << b << " byte " << i;
    seen.push_back(mark);
    PoolCounters c = bufferPoolCounters();
    EXPECT_EQ(c.liveMapped + c.idleMapped,
              before.liveMapped + before.idleMapped)
        << "after block " << b;
  }
  // Split in place, the front first: no page moved, no mapping made.
  EXPECT_EQ(small[0], big);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
  for (unsigned char *p : small)
    pool.release(p);
  expectWithinPeak("after the small blocks");
}

TEST(BufferPool, ALargerBlockGathersSmallerIdleOnesAndPartOfAnother) {
  Pool pool;
  // Two idle 6 MB blocks (the encoder's rows) and an 8 MB request (a
  // decoder cache): one moves in whole, the other gives its front 2 MB;
  // no fresh page, nothing unmapped.
  constexpr size_t kSmall = 6 * MB, kCache = 8 * MB;
  unsigned char *blocks[2];
  for (int b = 0; b < 2; ++b) {
    blocks[b] = static_cast<unsigned char *>(pool.allocate(kSmall));
    ASSERT_NE(blocks[b], nullptr);
    for (size_t i = 0; i < kSmall; i += 4096)
      blocks[b][i] = static_cast<unsigned char>(1 + b);
  }
  for (unsigned char *b : blocks)
    pool.release(b);
  PoolCounters before = bufferPoolCounters();
  auto *cache = static_cast<unsigned char *>(pool.allocate(kCache));
  ASSERT_NE(cache, nullptr);
  for (size_t i = 0; i < kCache; i += 4096)
    ASSERT_NE(cache[i], 0) << "a fresh page at byte " << i;
  EXPECT_NE(cache[0], cache[kCache - 4096]) << "both blocks give pages";
  PoolCounters after = bufferPoolCounters();
  EXPECT_EQ(after.liveMapped + after.idleMapped,
            before.liveMapped + before.idleMapped);
  EXPECT_EQ(after.idleMapped, before.idleMapped - kCache);
  pool.release(cache);
  expectWithinPeak("after the cache");
}
