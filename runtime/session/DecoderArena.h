//===- DecoderArena.h - a batch decoder's buffers ---------------*- C++ -*-===//
//
// The float buffers of a batch decoder (KV caches, cross-attention rows,
// scratch) go back to the arena when the batch is done and are reused by
// the next one; contents are unspecified: every user writes before it
// reads (the attention kernels read cache positions below the current step
// only).
//
// Buffers above 2 MB (kPooledBytes) come from the buffer pool compiled code
// allocates from (KernelAbi.h, poolAllocate), so they share pages with it:
// the encoder's intermediate buffers, idle once it has run, become the
// decoder's self-attention caches (a larger cache takes smaller idle
// blocks' pages, moved into place), and the next batch's encoder reuses
// what the decoder gave back. A one-batch process then faults in only what
// its peak needs and holds the larger of the two phases' buffers rather
// than both: batch 64 of the base model, one batch, decoded in 1.52 s
// instead of 1.71 s at 712 MB peak instead of 825 (before, 17% of its
// decoding samples were the kernel clearing fresh cache pages while the
// encoder's ~200 MB lay idle; docs/architecture.md).
//
// Smaller buffers (a small batch's caches, whose sizes change from batch
// to batch with the source lengths) stay in the arena's own buffers: a
// request nothing free holds grows the largest free one in place
// (Buffer::growUninitialized, mremap), keeping its touched pages, where
// the pool's size classes would hand out new blocks. BatchDecoder asks
// for all layers' caches of one kind at once where each is 2 MB or less
// (acquireGroup, through acquireOwn whatever the total), so a batch of 16
// takes one 12 MB buffer of huge pages rather than twelve 1 MB buffers of
// 4 KiB pages (each of which costs ~10 us to fault in on a virtual
// machine), and keeps it for the next batch.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_DECODERARENA_H
#define RUNTIME_SESSION_DECODERARENA_H

#include "runtime/kernels/KernelAbi.h"
#include "runtime/session/Buffer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace tfmc::runtime {

class DecoderArena {
public:
  static constexpr size_t kPooledBytes = size_t(2) << 20;

  /// The size above which buffers come from the buffer pool: kPooledBytes,
  /// unless a test lowered it (setPooledBytesForTesting) so that a small
  /// model's caches take the paths a large batch's take.
  static size_t pooledBytes() {
    return pooledLimit().load(std::memory_order_relaxed);
  }
  /// Sets pooledBytes() for the whole process (the test's decoders must
  /// not be running); returns the previous value.
  static size_t setPooledBytesForTesting(size_t bytes) {
    return pooledLimit().exchange(bytes, std::memory_order_relaxed);
  }

  DecoderArena() = default;
  DecoderArena(const DecoderArena &) = delete;
  DecoderArena &operator=(const DecoderArena &) = delete;
  ~DecoderArena() { releasePooled(); }

  /// `count` floats, 64-byte aligned, until releaseAll(); nullptr when the
  /// memory is not there.
  float *acquire(size_t count) {
    if (count > pooledBytes() / sizeof(float)) {
      if (count > SIZE_MAX / sizeof(float))
        return nullptr;
      void *p = poolAllocate(count * sizeof(float));
      if (!p)
        return nullptr;
      pooled.push_back(static_cast<float *>(p));
      return pooled.back();
    }
    return acquireOwn(count);
  }
  /// `count` floats from the arena's own buffers whatever the size (kept
  /// from batch to batch and grown in place; from 2 MB huge pages), until
  /// releaseAll(); nullptr when the memory is not there.
  float *acquireOwn(size_t count) {
    Slot *best = nullptr;
    for (auto &slot : slots)
      if (!slot->used && slot->buffer.size() >= count &&
          (!best || slot->buffer.size() < best->buffer.size()))
        best = slot.get();
    if (!best) {
      // Nothing free is large enough: grow the largest free buffer rather
      // than keep it beside a new one, so the arena holds no more buffers
      // than a batch uses at once. It grows by half again at least: sizes
      // creep up from batch to batch, and each growth costs the new pages'
      // faults (reserved pages that are never touched cost no memory).
      for (auto &slot : slots)
        if (!slot->used && (!best || slot->buffer.size() > best->buffer.size()))
          best = slot.get();
      if (!best) {
        slots.push_back(std::make_unique<Slot>());
        best = slots.back().get();
      }
      size_t held = best->buffer.size();
      if (!best->buffer.tryGrowUninitialized(
              std::max(count, held + held / 2)) &&
          !best->buffer.tryGrowUninitialized(count))
        return nullptr;
    }
    best->used = true;
    return best->buffer.data();
  }
  /// Gives back one buffer from acquire() before releaseAll(); a pointer
  /// that is not the start of one is ignored.
  void release(const float *buffer) {
    auto it = std::find(pooled.begin(), pooled.end(), buffer);
    if (it != pooled.end()) {
      poolRelease(*it);
      pooled.erase(it);
      return;
    }
    for (auto &slot : slots)
      if (slot->buffer.data() == buffer)
        slot->used = false;
  }
  void releaseAll() {
    releasePooled();
    for (auto &slot : slots)
      slot->used = false;
  }
  /// Bytes of the arena's own buffers, in use or not (pooled ones are the
  /// pool's: bufferPoolCounters).
  size_t bytes() const {
    size_t total = 0;
    for (const auto &slot : slots)
      total += slot->buffer.size() * sizeof(float);
    return total;
  }
  /// Frees every own buffer not in use.
  void trim() {
    std::vector<std::unique_ptr<Slot>> kept;
    for (auto &slot : slots)
      if (slot->used)
        kept.push_back(std::move(slot));
    slots = std::move(kept);
  }

private:
  static std::atomic<size_t> &pooledLimit() {
    static std::atomic<size_t> limit{kPooledBytes};
    return limit;
  }

  void releasePooled() {
    for (float *buffer : pooled)
      poolRelease(buffer);
    pooled.clear();
  }
  /// Buffers from the pool, in use (they go back at release).
  std::vector<float *> pooled;
  struct Slot {
    Buffer<float> buffer;
    bool used = false;
  };
  std::vector<std::unique_ptr<Slot>> slots;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_DECODERARENA_H
