//===- BufferPool.cpp - reused buffers for compiled code ------------------===//
//
// Compiled code allocates every intermediate buffer with malloc and frees it
// after its last use, so a decoder step would otherwise call the system
// allocator for each op, and buffers above glibc's mmap threshold (FFN
// hidden rows, logits) would be mapped, faulted in and unmapped every step.
// The JIT resolves compiled code's `malloc`/`free` to this pool instead:
// freed blocks are kept per size class and handed out again, so from the
// second step on a decoder step makes no system allocation. Blocks up to
// kLargestHeapBlock (2 MB) come from the heap, and up to kMostCachedHeap
// (24 MB) of them are kept idle. Larger ones (the encoder's buffers, the
// cross-attention keys and values, a wide batch's logits) are huge-page
// mappings (PageMemory.h), all of them kept idle while the pool's mappings,
// in use and idle together, stay within the most that were ever in use at
// once (or kMappedFloor): the next batch's encoder then writes into pages
// the process already has instead of pages the system must find and zero
// again (on a VM that hands freed memory back to its host, 1.5-2 ms per
// MB). A new mapping that would go beyond that first unmaps idle blocks,
// the largest first, so the pool never holds more than a batch needed at
// its peak: idle blocks cost no peak memory.
//
// The bound was 64 MB of idle blocks before (2026-12-04): batch 64 of the
// base model (32-token sources) maps ~200 MB in its encoder, so most of a
// batch's mappings were unmapped and the next batch faulted them in again.
// 256 sentences at batch 64, one thread: `tfmc profile` put the encoder's
// slices of the merged cross-attention projection at 425 ms (0.64 GB/s:
// first touches) and its linear layers at 2.89 s; with blocks kept up to
// the peak, 174 ms and 2.05 s; peak RSS level (two threads: 896-899 MB
// before, 872-913 MB after, two runs each).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"

#include "frontends/model/PageMemory.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeader = 64; // keeps payloads 64-byte aligned
constexpr size_t kLargestHeapBlock = size_t(2) << 20;
constexpr size_t kMostCachedHeap = size_t(24) << 20;
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

class BufferPool {
public:
  static BufferPool &get() {
    // Never destroyed: compiled code of a session torn down during static
    // destruction may still free into it.
    static BufferPool *pool = new BufferPool();
    return *pool;
  }

  /// A mapped block's class fills whole huge pages with its header: a
  /// class of 4 MiB would otherwise map (and, advised, fault in) a third
  /// huge page for 64 bytes.
  static size_t blockClass(size_t size) {
    size_t cls = sizeClass(size);
    if (cls <= kLargestHeapBlock)
      return cls;
    return tfmc::pages::mappingBytes(cls + kHeader) - kHeader;
  }

  void *allocate(size_t size) {
    if (size > (size_t(1) << 46))
      return nullptr;
    size_t cls = blockClass(size);
    if (cls <= kLargestHeapBlock) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        std::vector<char *> &list = idleHeap[cls];
        if (!list.empty()) {
          char *block = list.back();
          list.pop_back();
          cachedHeap -= kHeader + cls;
          return block + kHeader;
        }
      }
      auto *block = static_cast<char *>(std::aligned_alloc(64, kHeader + cls));
      return block ? label(block, cls) : nullptr;
    }
    size_t bytes = kHeader + cls;
    std::vector<std::pair<char *, size_t>> unmapping;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = idleMapped.find(cls);
      if (it != idleMapped.end() && !it->second.empty()) {
        char *block = it->second.back();
        it->second.pop_back();
        cachedMapped -= bytes;
        noteLive(bytes);
        return block + kHeader;
      }
      // Make room: in use, idle and new together within the budget.
      size_t budget = std::max({kMappedFloor, highWater, liveMapped + bytes});
      while (!idleMapped.empty() &&
             liveMapped + cachedMapped + bytes > budget) {
        auto largest = std::prev(idleMapped.end());
        if (largest->second.empty()) {
          idleMapped.erase(largest);
          continue;
        }
        size_t victim = kHeader + largest->first;
        unmapping.push_back({largest->second.back(), victim});
        largest->second.pop_back();
        cachedMapped -= victim;
      }
      noteLive(bytes);
    }
    for (auto [block, length] : unmapping)
      tfmc::pages::unmap(block, length);
    auto *block = static_cast<char *>(tfmc::pages::map(bytes));
    if (!block) {
      std::lock_guard<std::mutex> lock(mutex);
      liveMapped -= bytes;
      return nullptr;
    }
    return label(block, cls);
  }

  void release(void *payload) {
    if (!payload)
      return;
    char *block = static_cast<char *>(payload) - kHeader;
    size_t cls = *reinterpret_cast<size_t *>(block);
    std::lock_guard<std::mutex> lock(mutex);
    if (cls > kLargestHeapBlock) {
      // In use and idle together stay as they were: always kept.
      liveMapped -= kHeader + cls;
      cachedMapped += kHeader + cls;
      idleMapped[cls].push_back(block);
      return;
    }
    if (cachedHeap + kHeader + cls <= kMostCachedHeap) {
      idleHeap[cls].push_back(block);
      cachedHeap += kHeader + cls;
      return;
    }
    std::free(block);
  }

  tfmc::runtime::PoolCounters counters() {
    std::lock_guard<std::mutex> lock(mutex);
    return {liveMapped, cachedMapped, highWater};
  }

private:
  static void *label(char *block, size_t cls) {
    *reinterpret_cast<size_t *>(block) = cls;
    return block + kHeader;
  }
  void noteLive(size_t bytes) {
    liveMapped += bytes;
    highWater = std::max(highWater, liveMapped);
  }

  std::mutex mutex;
  std::unordered_map<size_t, std::vector<char *>> idleHeap;
  std::map<size_t, std::vector<char *>> idleMapped;
  size_t cachedHeap = 0;
  // Bytes of mappings handed out, idle, and the most ever handed out.
  size_t liveMapped = 0, cachedMapped = 0, highWater = 0;
};

void *poolMalloc(size_t size) { return BufferPool::get().allocate(size); }
void poolFree(void *p) { BufferPool::get().release(p); }

} // namespace

tfmc::runtime::PoolCounters tfmc::runtime::bufferPoolCounters() {
  return BufferPool::get().counters();
}

std::vector<std::pair<std::string, void *>>
tfmc::runtime::bufferPoolSymbols() {
  return {{"malloc", reinterpret_cast<void *>(&poolMalloc)},
          {"free", reinterpret_cast<void *>(&poolFree)}};
}
