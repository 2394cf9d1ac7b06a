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
// (24 MB) of them are kept idle; larger ones (the encoder's buffers, a
// wide batch's logits) are huge-page mappings (PageMemory.h), and up to
// kMostCachedMapped (64 MB) of those are kept idle too: the next batch's
// encoder then writes into pages it already has instead of pages the
// system must find and zero again (on a VM that hands freed memory back
// to its host, 1.5-2 ms per MB). Anything beyond goes back to the system,
// which bounds what the pool adds to peak memory.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"

#include "frontends/model/PageMemory.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeader = 64; // keeps payloads 64-byte aligned
constexpr size_t kLargestHeapBlock = size_t(2) << 20;
constexpr size_t kMostCachedHeap = size_t(24) << 20;
constexpr size_t kMostCachedMapped = size_t(64) << 20;

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
    bool mapped = cls > kLargestHeapBlock;
    {
      std::lock_guard<std::mutex> lock(mutex);
      std::vector<char *> &list = idle[cls];
      if (!list.empty()) {
        char *block = list.back();
        list.pop_back();
        (mapped ? cachedMapped : cachedHeap) -= kHeader + cls;
        return block + kHeader;
      }
    }
    auto *block =
        mapped ? static_cast<char *>(tfmc::pages::map(kHeader + cls))
               : static_cast<char *>(std::aligned_alloc(64, kHeader + cls));
    if (!block)
      return nullptr;
    *reinterpret_cast<size_t *>(block) = cls;
    return block + kHeader;
  }

  void release(void *payload) {
    if (!payload)
      return;
    char *block = static_cast<char *>(payload) - kHeader;
    size_t cls = *reinterpret_cast<size_t *>(block);
    bool mapped = cls > kLargestHeapBlock;
    {
      std::lock_guard<std::mutex> lock(mutex);
      size_t &cached = mapped ? cachedMapped : cachedHeap;
      if (cached + kHeader + cls <=
          (mapped ? kMostCachedMapped : kMostCachedHeap)) {
        idle[cls].push_back(block);
        cached += kHeader + cls;
        return;
      }
    }
    if (mapped)
      tfmc::pages::unmap(block, kHeader + cls);
    else
      std::free(block);
  }

private:
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<char *>> idle;
  size_t cachedHeap = 0, cachedMapped = 0;
};

void *poolMalloc(size_t size) { return BufferPool::get().allocate(size); }
void poolFree(void *p) { BufferPool::get().release(p); }

} // namespace

std::vector<std::pair<std::string, void *>>
tfmc::runtime::bufferPoolSymbols() {
  return {{"malloc", reinterpret_cast<void *>(&poolMalloc)},
          {"free", reinterpret_cast<void *>(&poolFree)}};
}
