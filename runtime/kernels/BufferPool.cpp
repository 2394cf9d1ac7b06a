//===- BufferPool.cpp - reused buffers for compiled code ------------------===//
//
// Compiled code allocates every intermediate buffer with malloc and frees it
// after its last use, so a decoder step would otherwise call the system
// allocator for each op, and buffers above glibc's mmap threshold (FFN
// hidden rows, logits) would be mapped, faulted in and unmapped every step.
// The JIT resolves compiled code's `malloc`/`free` to this pool instead:
// freed blocks are kept per size class and handed out again, so from the
// second step on a decoder step makes no system allocation. Blocks above
// kLargestPooled (2 MB: encoder buffers of a long batch; huge-page mappings)
// and anything beyond kMostCached (24 MB) of idle blocks go back to the
// system, which bounds what the pool can add to peak memory.
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
constexpr size_t kLargestPooled = size_t(2) << 20;
constexpr size_t kMostCached = size_t(24) << 20;

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

  void *allocate(size_t size) {
    size_t cls = sizeClass(size);
    if (cls <= kLargestPooled) {
      std::lock_guard<std::mutex> lock(mutex);
      std::vector<char *> &list = idle[cls];
      if (!list.empty()) {
        char *block = list.back();
        list.pop_back();
        cached -= cls;
        return block + kHeader;
      }
    }
    if (cls > kLargestPooled) {
      // Never pooled: a huge-page mapping (PageMemory.h) of just the bytes
      // asked for, so an encoder buffer of a long batch faults in 2 MiB at
      // a time; the header holds that size.
      auto *block = static_cast<char *>(tfmc::pages::map(kHeader + size));
      if (!block)
        return nullptr;
      *reinterpret_cast<size_t *>(block) = size;
      return block + kHeader;
    }
    auto *block = static_cast<char *>(std::aligned_alloc(64, kHeader + cls));
    if (!block)
      return nullptr;
    *reinterpret_cast<size_t *>(block) = cls;
    return block + kHeader;
  }

  void release(void *payload) {
    if (!payload)
      return;
    char *block = static_cast<char *>(payload) - kHeader;
    // A size class, or the size of a mapped block (above kLargestPooled).
    size_t cls = *reinterpret_cast<size_t *>(block);
    if (cls <= kLargestPooled) {
      std::lock_guard<std::mutex> lock(mutex);
      if (cached + cls <= kMostCached) {
        idle[cls].push_back(block);
        cached += cls;
        return;
      }
      std::free(block);
      return;
    }
    tfmc::pages::unmap(block, kHeader + cls);
  }

private:
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<char *>> idle;
  size_t cached = 0;
};

void *poolMalloc(size_t size) { return BufferPool::get().allocate(size); }
void poolFree(void *p) { BufferPool::get().release(p); }

} // namespace

std::vector<std::pair<std::string, void *>>
tfmc::runtime::bufferPoolSymbols() {
  return {{"malloc", reinterpret_cast<void *>(&poolMalloc)},
          {"free", reinterpret_cast<void *>(&poolFree)}};
}
