//===- PageMemory.h - large arrays on transparent huge pages ----*- C++ -*-===//
//
// Weights, their float32 copies and panels, KV caches and encoder buffers
// are arrays of megabytes that a process touches once when it fills them.
// On 4 KiB pages that is one page fault per 4 KiB: about 0.25 ms per MB on
// bare metal, and ~3.5 ms per MB on virtual machines that shadow the guest's
// page tables (measured on this project's CI hosts: a one-sentence
// translation spent 0.3 s of its 0.5 s in 22,000 faults). Arrays of
// kHugePageBytes or more therefore get a mapping of their own, aligned to
// 2 MiB and advised MADV_HUGEPAGE, so that each fault maps 2 MiB where the
// kernel allows transparent huge pages (`always` or `madvise`); elsewhere
// the advice is ignored and nothing else changes. Freeing unmaps, so the
// memory goes back to the system at once.
//
// Arrays from 64 KiB up to a huge page share 32 MiB huge-page chunks (a
// slab), since most weights of small models are 0.25-2 MiB.
//
// Header-only: the frontend (float32 copies of weights) and the runtime's
// kernels (panels, buffers) share it without a library between them.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_PAGEMEMORY_H
#define FRONTENDS_MODEL_PAGEMEMORY_H

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

namespace tfmc::pages {

constexpr size_t kHugePageBytes = size_t(2) << 20;

/// What outOfMemory() calls first, where a program sets it (the tfmc
/// command's prints one `error:` line and exits with status 71); it must
/// not return or throw.
inline void (*outOfMemoryHandler)() = nullptr;

/// Exceptions are off in most of tfmc: running out of memory here ends the
/// process, through outOfMemoryHandler where one is set, else with one line
/// and an abort.
[[noreturn]] inline void outOfMemory() {
  if (outOfMemoryHandler)
    outOfMemoryHandler();
  std::fputs("tfmc: out of memory\n", stderr);
  std::abort();
}

/// TFMC_HUGE_PAGES=never leaves the mappings without the advice (the same
/// layout on 4 KiB pages), to compare or where huge pages cost more memory
/// than they save time; anything else, or unset, advises them.
inline bool adviseHugePages() {
  static const bool advise = [] {
    const char *v = std::getenv("TFMC_HUGE_PAGES");
    return !(v && std::string_view(v) == "never");
  }();
  return advise;
}

/// Whether `bytes` gets a huge-page mapping of its own.
inline bool mapped(size_t bytes) { return bytes >= kHugePageBytes; }

/// Bytes of the mapping for an array of `bytes`: whole huge pages.
inline size_t mappingBytes(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

/// A zero-filled mapping of mappingBytes(bytes), 2 MiB aligned and advised
/// for huge pages; nullptr when the system refuses.
inline void *map(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePageBytes)
    return nullptr;
  size_t length = mappingBytes(bytes);
  // Over-allocate by one huge page and trim both ends to the alignment.
  size_t reserved = length + kHugePageBytes;
  void *raw = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return nullptr;
  auto begin = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned =
      (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > begin)
    ::munmap(raw, aligned - begin);
  size_t tail = begin + reserved - (aligned + length);
  if (tail)
    ::munmap(reinterpret_cast<void *>(aligned + length), tail);
  auto *p = reinterpret_cast<void *>(aligned);
  // Only advice: a kernel without THP (or with it off) maps 4 KiB pages.
  if (adviseHugePages())
    ::madvise(p, length, MADV_HUGEPAGE);
  return p;
}

inline void unmap(void *p, size_t bytes) {
  if (p)
    ::munmap(p, mappingBytes(bytes));
}

/// Arrays of kSlabMinBytes up to a huge page (panels and float32 copies of
/// the weights of small models: 64 KiB - 2 MiB each) are carved out of
/// shared huge-page chunks, so that they fault in 2 MiB at a time too.
constexpr size_t kSlabMinBytes = size_t(64) << 10;
constexpr size_t kChunkBytes = size_t(32) << 20;
constexpr size_t kSmallPageBytes = 4096;

/// The chunks: bump allocation, blocks freed out of order kept by size for
/// reuse (their pages given back at once), a chunk unmapped when its last
/// block is freed (the one blocks are carved from is reset instead). Never
/// destroyed: owners torn down during static destruction may still free
/// into it.
class Slab {
public:
  static Slab &get() {
    static Slab *slab = new Slab();
    return *slab;
  }

  /// Whole 4 KiB pages, so that a freed block's pages can be given back.
  static size_t blockBytes(size_t bytes) {
    return (bytes + kSmallPageBytes - 1) / kSmallPageBytes * kSmallPageBytes;
  }

  void *allocate(size_t bytes) {
    size_t size = blockBytes(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    auto idleIt = idle.find(size);
    if (idleIt != idle.end() && !idleIt->second.empty()) {
      char *p = idleIt->second.back();
      idleIt->second.pop_back();
      chunkOf(p)->live += size;
      return p;
    }
    if (chunks.empty() || chunks.back().top + size > kChunkBytes) {
      void *base = map(kChunkBytes);
      if (!base)
        return nullptr;
      chunks.push_back({static_cast<char *>(base), 0, 0});
    }
    Chunk &c = chunks.back();
    char *p = c.base + c.top;
    c.top += size;
    c.live += size;
    return p;
  }

  void release(void *ptr, size_t bytes) {
    size_t size = blockBytes(bytes);
    auto *p = static_cast<char *>(ptr);
    std::lock_guard<std::mutex> lock(mutex);
    Chunk *c = chunkOf(p);
    c->live -= size;
    if (c->live == 0) {
      // Forget its idle blocks; then the chunk goes back to the system,
      // unless it is the one blocks are carved from: that one starts
      // again from its base with its pages given back, so a loop that
      // makes and frees one array does not map and unmap 32 MiB a pass.
      for (auto &entry : idle) {
        std::vector<char *> &list = entry.second;
        size_t kept = 0;
        for (char *b : list)
          if (b < c->base || b >= c->base + kChunkBytes)
            list[kept++] = b;
        list.resize(kept);
      }
      if (c == &chunks.back()) {
        ::madvise(c->base, c->top, MADV_DONTNEED);
        c->top = 0;
        return;
      }
      unmap(c->base, kChunkBytes);
      chunks.erase(chunks.begin() + (c - chunks.data()));
      return;
    }
    ::madvise(p, size, MADV_DONTNEED);
    if (p + size == c->base + c->top)
      c->top -= size; // the last block carved: carve it again
    else
      idle[size].push_back(p);
  }

private:
  struct Chunk {
    char *base;
    size_t top;  // bytes handed out from the start
    size_t live; // bytes of blocks not freed
  };

  Chunk *chunkOf(char *p) {
    for (Chunk &c : chunks)
      if (p >= c.base && p < c.base + kChunkBytes)
        return &c;
    std::fputs("tfmc: freeing memory the page slab never gave out\n", stderr);
    std::abort();
  }

  std::mutex mutex;
  std::vector<Chunk> chunks;
  std::map<size_t, std::vector<char *>> idle;
};

/// 64-byte aligned memory for `bytes`: a huge-page mapping of its own from
/// a huge page up, a slab block from kSlabMinBytes, else the heap. Not
/// zeroed (except that fresh mappings read as zero).
inline void *allocate(size_t bytes) {
  if (mapped(bytes))
    return map(bytes);
  if (bytes >= kSlabMinBytes)
    return Slab::get().allocate(bytes);
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64 + (bytes ? 0 : 64));
}

inline void release(void *p, size_t bytes) {
  if (!p)
    return;
  if (mapped(bytes))
    unmap(p, bytes);
  else if (bytes >= kSlabMinBytes)
    Slab::get().release(p, bytes);
  else
    std::free(p);
}

/// allocate() for n elements of T; running out of memory (or a size beyond
/// what a mapping can hold) ends the process.
template <typename T> T *allocateElements(size_t n) {
  void *p = n > SIZE_MAX / sizeof(T) - kHugePageBytes ? nullptr
                                                      : allocate(n * sizeof(T));
  if (!p)
    outOfMemory();
  return static_cast<T *>(p);
}

/// A std::allocator for vectors of weights and panels.
template <typename T> struct Allocator {
  using value_type = T;
  Allocator() = default;
  template <typename U> Allocator(const Allocator<U> &) {}
  T *allocate(size_t n) { return allocateElements<T>(n); }
  void deallocate(T *p, size_t n) { pages::release(p, n * sizeof(T)); }
  template <typename U> bool operator==(const Allocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const Allocator<U> &) const {
    return false;
  }
};

/// A vector whose large buffers are huge-page mappings.
template <typename T> using Vector = std::vector<T, Allocator<T>>;

/// An owned array of n T, uninitialised (zero when huge-page mapped),
/// freed with its owner.
template <typename T> class Array {
public:
  Array() = default;
  explicit Array(size_t n) : ptr(allocateElements<T>(n)), count(n) {}
  Array(const Array &) = delete;
  Array &operator=(const Array &) = delete;
  Array(Array &&other) noexcept { *this = static_cast<Array &&>(other); }
  Array &operator=(Array &&other) noexcept {
    T *p = ptr;
    size_t c = count;
    ptr = other.ptr;
    count = other.count;
    other.ptr = p;
    other.count = c;
    return *this;
  }
  ~Array() { reset(); }

  void reset() {
    if (ptr)
      release(ptr, count * sizeof(T));
    ptr = nullptr;
    count = 0;
  }
  T *get() const { return ptr; }
  size_t size() const { return count; }
  explicit operator bool() const { return ptr != nullptr; }

private:
  T *ptr = nullptr;
  size_t count = 0;
};

} // namespace tfmc::pages

#endif // FRONTENDS_MODEL_PAGEMEMORY_H
