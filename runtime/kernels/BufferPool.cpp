//===- BufferPool.cpp - reused buffers for compiled code ------------------===//
//
// Compiled code allocates every intermediate buffer with malloc and frees it
// after its last use, so a decoder step would otherwise call the system
// allocator for each op, and buffers above glibc's mmap threshold (FFN
// hidden rows, logits) would be mapped, faulted in and unmapped every step.
// The JIT resolves compiled code's `malloc`/`free` to this pool instead
// (through CompiledCall.h, which ends a call whose allocation fails),
// and the decoder's large buffers (KV caches above 2 MB, DecoderArena.h)
// come from it too: freed blocks are kept per size class and handed out
// again, so from the second step on a decoder step makes no system
// allocation, and the decoder's caches take the pages the encoder's
// buffers left idle. Blocks up to kLargestHeapBlock (2 MB) are "heap"
// blocks: malloc's below 64 KiB, else the page slab's (shared huge-page
// chunks, PageMemory.h); larger ones are huge-page mappings of whole huge
// pages, their class kept beside them rather than in a header (a header
// made a 4 MiB buffer touch a third huge page).
//
// Of each kind, every idle block is kept while the pool's blocks, in use
// and idle together, stay within the most that were ever in use at once
// (or a floor: 24 MB of heap blocks, 64 MB mapped): the next batch then
// writes into pages the process already has instead of pages the system
// must find and zero again (on a VM that hands freed memory back to its
// host, 1.5-2 ms per MB). A new block that would go beyond that first
// frees idle blocks, the largest first, so the pool never holds more than
// a batch needed at its peak: idle blocks cost no peak memory.
//
// A mapped request with no idle block of its class takes the front of the
// smallest larger idle block, whose tail stays idle in place; failing
// that, the new mapping takes the pages of smaller idle blocks, the
// largest first, moved into place with mremap (huge-page aligned at both
// ends, so page tables move, not bytes), and what they leave from the front
// of a larger idle one; only what no idle block covers is fresh. (Until
// 2026-12-05 a larger idle block was taken whole only up to twice the size
// and smaller ones never split: the rest was fresh pages, and the budget
// below then unmapped an idle block of the encoder's FFN rows to make room
// for them, which the next layer mapped afresh. Counted with a temporary
// log of the mappings: one batch of 64 base-model sentences mapped 510 MB,
// 306 of them fresh, and gave 162 MB back; now 366 MB, 144 fresh (the
// cross-attention caches and the first encoder layer's rows), none given
// back; four batches 396 MB fresh before, 144 now. Run times moved ~1%:
// the guest kernel hands pages given back to the next mapping at once.)
//
// History (2026-12-04): the mapped blocks' bound was 64 MB of idle blocks
// before the tenth session; batch 64 of the base model (32-token sources)
// maps ~200 MB in its encoder, so most of a batch's mappings were unmapped
// and the next batch faulted them in again (`tfmc profile`, 256 sentences
// at batch 64, one thread: the encoder's slices of the merged
// cross-attention projection 425 -> 174 ms, its linear layers 2.89 -> 2.05
// s). The eleventh session gave the decoder's caches the same pool (a
// one-batch run at batch 64 decoded in 1.52 s instead of 1.71, peak RSS
// 712 MB instead of 825), dropped the mapped blocks' header, and kept the
// heap blocks to their peak too (at most 24 MB idle before).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/CompiledCall.h"
#include "runtime/kernels/KernelAbi.h"

#include "frontends/model/PageMemory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeader = 64; // keeps heap payloads 64-byte aligned
constexpr size_t kLargestHeapBlock = size_t(2) << 20;
constexpr size_t kHeapFloor = size_t(24) << 20;
constexpr size_t kMappedFloor = size_t(64) << 20;

/// Sizes rounded up to 2^k or 1.5 * 2^k (at most a third wasted), at least
/// 128 bytes, so every class is a multiple of the 64-byte alignment.
size_t sizeClass(size_t size) {
  size_t c = 128;
  while (c < size) {
    size_t mid = c + c / 2;
    if (mid >= size)
      return mid;
    c *= 2;
  }
  return c;
}

/// Blocks of one kind (heap or mapped): idle ones by class, and the bytes
/// in use, idle, and most ever in use at once. A block of class c takes
/// `header` + c bytes.
struct Kind {
  explicit Kind(size_t header) : header(header) {}
  size_t header;
  std::map<size_t, std::vector<char *>> idle;
  size_t live = 0, cached = 0, highWater = 0;

  size_t length(size_t cls) const { return header + cls; }
  /// Counts `bytes` more in use; returns the peak before, for forgetLive().
  size_t noteLive(size_t bytes) {
    size_t peak = highWater;
    live += bytes;
    highWater = std::max(highWater, live);
    return peak;
  }
  /// Takes back noteLive(bytes) of a block that could not be had: nor does
  /// it count towards the peak, which bounds the idle blocks kept.
  void forgetLive(size_t bytes, size_t peakBefore) {
    live -= bytes;
    highWater = std::max(peakBefore, live);
  }
  /// Takes an idle block of class `cls` (nullptr: none).
  char *take(size_t cls) {
    auto it = idle.find(cls);
    if (it == idle.end() || it->second.empty())
      return nullptr;
    char *block = it->second.back();
    it->second.pop_back();
    cached -= length(cls);
    noteLive(length(cls));
    return block;
  }
  /// Idle blocks, the largest first, to give back so that `bytes` more fit
  /// within max(floor, the peak in use): (block, class) pairs.
  std::vector<std::pair<char *, size_t>> makeRoom(size_t bytes, size_t floor) {
    std::vector<std::pair<char *, size_t>> out;
    size_t budget = std::max({floor, highWater, live + bytes});
    while (!idle.empty() && live + cached + bytes > budget) {
      auto largest = std::prev(idle.end());
      if (largest->second.empty()) {
        idle.erase(largest);
        continue;
      }
      out.push_back({largest->second.back(), largest->first});
      largest->second.pop_back();
      cached -= length(largest->first);
    }
    return out;
  }
};

class BufferPool {
public:
  static BufferPool &get() {
    // Never destroyed: compiled code of a session torn down during static
    // destruction may still free into it.
    static BufferPool *pool = new BufferPool();
    return *pool;
  }

  void *allocate(size_t size) {
    if (size > (size_t(1) << 46))
      return nullptr;
    size_t cls = sizeClass(size);
    auto attempt = [&] {
      return cls <= kLargestHeapBlock ? allocateHeap(cls)
                                      : allocateMapped(mappedClass(cls));
    };
    if (void *block = attempt())
      return block;
    // The idle blocks hold memory (and address space, under `ulimit -v`)
    // the system may need for this one: give them back and try once more.
    trim();
    return attempt();
  }

  void release(void *payload) {
    if (!payload)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = liveMapped.find(static_cast<char *>(payload));
    if (it != liveMapped.end()) {
      // In use and idle together stay as they were: always kept.
      size_t cls = it->second;
      liveMapped.erase(it);
      mapped.live -= cls;
      mapped.cached += cls;
      mapped.idle[cls].push_back(static_cast<char *>(payload));
      return;
    }
    char *block = static_cast<char *>(payload) - kHeader;
    size_t cls = *reinterpret_cast<size_t *>(block);
    heap.live -= kHeader + cls;
    heap.cached += kHeader + cls;
    heap.idle[cls].push_back(block);
  }

  /// Unmaps or frees every idle block.
  void trim() {
    std::vector<std::pair<char *, size_t>> unmapping;
    std::vector<char *> freeing;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto &[cls, list] : mapped.idle)
        for (char *block : list)
          unmapping.push_back({block, cls});
      for (auto &[cls, list] : heap.idle)
        freeing.insert(freeing.end(), list.begin(), list.end());
      mapped.idle.clear();
      heap.idle.clear();
      mapped.cached = heap.cached = 0;
    }
    for (auto [block, length] : unmapping)
      tfmc::pages::unmap(block, length);
    for (char *block : freeing)
      freeHeapBlock(block);
  }

  tfmc::runtime::PoolCounters counters() {
    std::lock_guard<std::mutex> lock(mutex);
    return {mapped.live, mapped.cached, mapped.highWater,
            heap.live,   heap.cached,   heap.highWater};
  }

private:
  /// A mapped block is whole huge pages, with no header (its class is kept
  /// beside it): a header would make a 4 MiB buffer touch a third huge page.
  static size_t mappedClass(size_t cls) {
    return tfmc::pages::mappingBytes(cls);
  }

  /// Heap blocks from 64 KiB are the page slab's (huge-page chunks: a
  /// fresh 4 KiB page costs ~10 us to fault in on a virtual machine, a
  /// 2 MiB one less than its 512 would), smaller ones malloc's.
  static void freeHeapBlock(char *block) {
    size_t bytes = kHeader + *reinterpret_cast<size_t *>(block);
    if (bytes >= tfmc::pages::kSlabMinBytes)
      tfmc::pages::Slab::get().release(block, bytes);
    else
      std::free(block);
  }

  void *allocateHeap(size_t cls) {
    size_t bytes = kHeader + cls, peakBefore = 0;
    std::vector<std::pair<char *, size_t>> freeing;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (char *block = heap.take(cls))
        return block + kHeader;
      freeing = heap.makeRoom(bytes, kHeapFloor);
      peakBefore = heap.noteLive(bytes);
    }
    for (auto [block, c] : freeing)
      freeHeapBlock(block);
    auto *block =
        static_cast<char *>(bytes >= tfmc::pages::kSlabMinBytes
                                ? tfmc::pages::Slab::get().allocate(bytes)
                                : std::aligned_alloc(64, bytes));
    if (!block) {
      std::lock_guard<std::mutex> lock(mutex);
      heap.forgetLive(bytes, peakBefore);
      return nullptr;
    }
    *reinterpret_cast<size_t *>(block) = cls;
    return block + kHeader;
  }

  void *allocateMapped(size_t cls) {
    std::vector<std::pair<char *, size_t>> unmapping, moving;
    size_t peakBefore = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      // An idle block of this class, else the front of the smallest larger
      // one, whose tail stays idle in place (both are whole huge pages).
      if (char *block = mapped.take(cls)) {
        liveMapped[block] = cls;
        return block;
      }
      for (auto it = mapped.idle.upper_bound(cls); it != mapped.idle.end();
           ++it) {
        if (it->second.empty())
          continue;
        size_t whole = it->first;
        char *block = it->second.back();
        it->second.pop_back();
        mapped.idle[whole - cls].push_back(block + cls);
        mapped.cached -= cls;
        mapped.noteLive(cls);
        liveMapped[block] = cls;
        return block;
      }
      // Else the new block takes the pages of smaller idle blocks, the
      // largest first, moved into place (mremap) rather than faulted in.
      size_t taken = 0;
      while (taken < cls) {
        auto it = mapped.idle.upper_bound(cls - taken);
        while (it != mapped.idle.begin() && std::prev(it)->second.empty())
          it = mapped.idle.erase(std::prev(it));
        if (it == mapped.idle.begin())
          break;
        --it;
        moving.push_back({it->second.back(), it->first});
        it->second.pop_back();
        mapped.cached -= it->first;
        taken += it->first;
      }
      // ... and what they leave, from the front of the smallest larger idle
      // block, whose tail stays idle as a block of its own (every class is
      // whole huge pages, so both parts are).
      if (taken < cls) {
        size_t rest = cls - taken;
        auto it = mapped.idle.upper_bound(rest);
        while (it != mapped.idle.end() && it->second.empty())
          it = mapped.idle.erase(it);
        if (it != mapped.idle.end()) {
          size_t whole = it->first;
          char *from = it->second.back();
          it->second.pop_back();
          moving.push_back({from, rest});
          mapped.idle[whole - rest].push_back(from + rest);
          mapped.cached -= rest;
          taken = cls;
        }
      }
      // Make room: in use, idle and new together within the budget.
      unmapping = mapped.makeRoom(cls, kMappedFloor);
      peakBefore = mapped.noteLive(cls);
    }
    for (auto [block, length] : unmapping)
      tfmc::pages::unmap(block, length);
    auto *block = static_cast<char *>(tfmc::pages::map(cls));
    size_t offset = 0;
    for (auto [from, length] : moving) {
      // Both ends lie on huge-page boundaries (every mapped block is whole
      // huge pages), so whole huge pages move. Should a move fail, the
      // block keeps the fresh pages there and the old ones go.
      void *to = block ? block + offset : nullptr;
      if (!to || ::mremap(from, length, length, MREMAP_MAYMOVE | MREMAP_FIXED,
                          to) == MAP_FAILED)
        tfmc::pages::unmap(from, length);
      offset += length;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (!block) {
      mapped.forgetLive(cls, peakBefore);
      return nullptr;
    }
    liveMapped[block] = cls;
    return block;
  }

  std::mutex mutex;
  Kind heap{kHeader}, mapped{0};
  /// The class of every mapped block in use, by address.
  std::unordered_map<char *, size_t> liveMapped;
};

void *poolMalloc(size_t size) { return BufferPool::get().allocate(size); }
void poolFree(void *p) { BufferPool::get().release(p); }

} // namespace

tfmc::runtime::PoolCounters tfmc::runtime::bufferPoolCounters() {
  return BufferPool::get().counters();
}

std::vector<std::pair<std::string, void *>>
tfmc::runtime::bufferPoolSymbols() {
  return {{"malloc", reinterpret_cast<void *>(&tfmc::runtime::compiledMalloc)},
          {"free", reinterpret_cast<void *>(&tfmc::runtime::compiledFree)}};
}

void *tfmc::runtime::poolAllocate(size_t bytes) { return poolMalloc(bytes); }
void tfmc::runtime::poolRelease(void *buffer) { poolFree(buffer); }
void tfmc::runtime::poolTrim() { BufferPool::get().trim(); }
