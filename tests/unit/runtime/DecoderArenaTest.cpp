//===- DecoderArenaTest.cpp - buffers reused and grown across batches -----===//
#include "runtime/session/DecoderArena.h"

#include <gtest/gtest.h>

using namespace tfmc::runtime;

namespace {

// Floats in a buffer large enough to be a mapping of its own (>= 1 MB).
constexpr size_t kLarge = 1 << 19;

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
