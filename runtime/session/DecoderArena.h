//===- DecoderArena.h - decoder buffers reused across batches ---*- C++ -*-===//
//
// The float buffers of a batch decoder (KV caches, cross-attention rows,
// scratch) come from an arena owned by the decoding thread's call frames and
// go back to it when the batch is done, so after the first batches a new
// batch needs no allocation, page faults or zeroing (buffers grow in place,
// keeping their pages; see Buffer::growUninitialized). Contents are
// unspecified: every user writes before it reads (the attention kernels
// read cache positions below the current step only).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_DECODERARENA_H
#define RUNTIME_SESSION_DECODERARENA_H

#include "runtime/session/Buffer.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace tfmc::runtime {

class DecoderArena {
public:
  /// `count` floats, 64-byte aligned, until releaseAll().
  float *acquire(size_t count) {
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
      best->buffer.growUninitialized(std::max(count, held + held / 2));
    }
    best->used = true;
    return best->buffer.data();
  }
  /// Gives back one buffer from acquire() before releaseAll().
  void release(const float *buffer) {
    for (auto &slot : slots)
      if (slot->buffer.data() == buffer)
        slot->used = false;
  }
  void releaseAll() {
    for (auto &slot : slots)
      slot->used = false;
  }
  /// Bytes held, in use or not.
  size_t bytes() const {
    size_t total = 0;
    for (const auto &slot : slots)
      total += slot->buffer.size() * sizeof(float);
    return total;
  }
  /// Frees every buffer not in use.
  void trim() {
    std::vector<std::unique_ptr<Slot>> kept;
    for (auto &slot : slots)
      if (slot->used)
        kept.push_back(std::move(slot));
    slots = std::move(kept);
  }

private:
  struct Slot {
    Buffer<float> buffer;
    bool used = false;
  };
  std::vector<std::unique_ptr<Slot>> slots;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_DECODERARENA_H
