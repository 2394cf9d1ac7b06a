//===- DecoderArenaTest.cpp - buffers reused and grown across batches -----===//
//
// The arena's own buffers (2 MB and less) are reused best-fit and grown in
// place; larger ones come from the pool compiled code allocates from, so
// they reuse blocks (and pages) its encoder left idle, and a block larger
// than any idle one takes the pages of smaller idle blocks.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/DecoderArena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using namespace tfmc::runtime;

namespace {

// Floats in a buffer large enough to be a mapping of its own (>= 1 MB),
// small enough to be the arena's own (<= 2 MB).
constexpr size_t kLarge = 1 << 18;
constexpr size_t MB = size_t(1) << 20;

/// Resident pages of [p, p + bytes), from mincore.
size_t residentBytes(const void *p, size_t bytes) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<uintptr_t>(p) / page * page;
  auto end = reinterpret_cast<uintptr_t>(p) + bytes;
  std::vector<unsigned char> in((end - begin + page - 1) / page);
  if (::mincore(reinterpret_cast<void *>(begin), end - begin, in.data()) != 0)
    return 0;
  size_t resident = 0;
  for (unsigned char v : in)
    resident += (v & 1) ? page : 0;
  return resident;
}

TEST(BufferTest, GrowingAMappingKeepsItsPages) {
  Buffer<float> buffer;
  buffer.resize(kLarge);
  for (size_t i = 0; i < kLarge; ++i)
    buffer[i] = static_cast<float>(i);
  buffer.growUninitialized(3 * kLarge);
  ASSERT_EQ(buffer.size(), 3 * kLarge);
  // mremap moved the touched pages along rather than handing out new ones.
  for (size_t i = 0; i < kLarge; i += 4096)
    ASSERT_EQ(buffer[i], static_cast<float>(i)) << i;
  buffer[3 * kLarge - 1] = 1.0f; // the new tail is writable
  buffer.growUninitialized(kLarge); // never shrinks
  EXPECT_EQ(buffer.size(), 3 * kLarge);
}

TEST(BufferTest, GrowingASmallBufferIntoAMapping) {
  Buffer<float> buffer(16);
  buffer.growUninitialized(kLarge);
  ASSERT_EQ(buffer.size(), kLarge);
  buffer[0] = buffer[kLarge - 1] = 2.0f;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);
}

TEST(DecoderArenaTest, ReusesReleasedBuffers) {
  DecoderArena arena;
  float *a = arena.acquire(1000);
  float *b = arena.acquire(kLarge);
  EXPECT_NE(a, b);
  size_t held = arena.bytes();
  arena.releaseAll();
  // Best fit: each request gets the smallest free buffer that holds it.
  EXPECT_EQ(arena.acquire(kLarge), b);
  EXPECT_EQ(arena.acquire(900), a);
  EXPECT_EQ(arena.bytes(), held);
}

TEST(DecoderArenaTest, GrowsWithHeadroom) {
  DecoderArena arena;
  arena.acquire(kLarge);
  arena.releaseAll();
  // A little more than the free buffer holds: it grows by half at least,
  // so the next slightly larger batch needs no growth.
  arena.acquire(kLarge + 1000);
  size_t grown = arena.bytes();
  EXPECT_GE(grown, (kLarge + kLarge / 2) * sizeof(float));
  arena.releaseAll();
  arena.acquire(kLarge + kLarge / 3);
  EXPECT_EQ(arena.bytes(), grown);
  // Held buffers are never handed out twice.
  float *held = arena.acquire(10);
  EXPECT_NE(arena.acquire(10), held);
}

TEST(DecoderArenaTest, EmptyBuffersAreDistinct) {
  DecoderArena arena;
  float *a = arena.acquire(0), *b = arena.acquire(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
}

TEST(DecoderArenaTest, ReleaseOneAndTrim) {
  DecoderArena arena;
  float *a = arena.acquire(kLarge);
  float *b = arena.acquire(kLarge);
  arena.release(a);
  EXPECT_EQ(arena.acquire(kLarge), a);
  arena.release(b);
  arena.trim(); // frees b only
  EXPECT_EQ(arena.bytes(), kLarge * sizeof(float));
}

} // namespace

TEST(DecoderArenaTest, LargeBuffersComeFromThePool) {
  poolTrim();
  DecoderArena arena;
  PoolCounters before = bufferPoolCounters();
  float *a = arena.acquire(3 * MB);
  EXPECT_EQ(bufferPoolCounters().liveMapped, before.liveMapped + 12 * MB);
  EXPECT_EQ(arena.bytes(), 0u);
  arena.releaseAll();
  EXPECT_EQ(bufferPoolCounters().liveMapped, before.liveMapped);
  EXPECT_EQ(arena.acquire(3 * MB), a);
  arena.release(a);
  EXPECT_EQ(bufferPoolCounters().liveMapped, before.liveMapped);
}

TEST(DecoderArenaTest, TakesBlocksCompiledCodeFreed) {
  poolTrim();
  // As an encoder's buffer, freed once the encoder has run: a request of
  // its size, or of more than half of it, gets it whole.
  void *encoder = poolAllocate(24 * MB);
  ASSERT_NE(encoder, nullptr);
  poolRelease(encoder);
  DecoderArena arena;
  EXPECT_EQ(static_cast<void *>(arena.acquire(14 * MB / sizeof(float))),
            encoder);
}

TEST(DecoderArenaTest, ALargerBufferKeepsSmallerBlocksPages) {
  poolTrim();
  // Two idle 10 MB blocks, written (so resident), and nothing else idle of
  // their size or up to twice it: a 40 MB buffer takes their pages.
  std::vector<void *> blocks;
  for (int i = 0; i < 2; ++i) {
    void *p = poolAllocate(10 * MB);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5a, 10 * MB);
    blocks.push_back(p);
  }
  PoolCounters before = bufferPoolCounters();
  for (void *p : blocks)
    poolRelease(p);
  DecoderArena arena;
  float *big = arena.acquire(40 * MB / sizeof(float));
  PoolCounters after = bufferPoolCounters();
  // The idle blocks became part of it: the pool maps no more than before.
  EXPECT_LE(after.liveMapped + after.idleMapped,
            before.liveMapped + before.idleMapped + 40 * MB);
  EXPECT_GE(residentBytes(big, 40 * MB), 20 * MB);
  EXPECT_EQ(after.idleMapped, 0u);
  // Every byte is usable.
  std::memset(big, 1, 40 * MB);
  arena.release(big);
}
