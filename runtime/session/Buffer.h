//===- Buffer.h - 64-byte aligned runtime-owned storage ---------*- C++ -*-===//
#ifndef RUNTIME_SESSION_BUFFER_H
#define RUNTIME_SESSION_BUFFER_H

#include "frontends/model/PageMemory.h"

#include "llvm/Support/ErrorHandling.h"
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tfmc::runtime {

/// An array of T aligned to a cache line, sized once (zero-initialised
/// unless asked otherwise). Arrays of kMappedBytes or more are mapped
/// pages of their own: freeing one gives its memory back to the system at
/// once; from 2 MiB they are huge-page mappings (PageMemory.h). (Through
/// malloc, a freed large block raises glibc's mmap threshold, later ones come
/// from the heap, and a heap fragmented by KV caches of varying sizes keeps its
/// peak resident.)
template <typename T> class Buffer {
public:
  Buffer() = default;
  explicit Buffer(size_t count) { resize(count); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer(Buffer &&other) noexcept { *this = std::move(other); }
  Buffer &operator=(Buffer &&other) noexcept {
    std::swap(ptr, other.ptr);
    std::swap(count, other.count);
    std::swap(mappedBytes, other.mappedBytes);
    return *this;
  }
  ~Buffer() { release(); }

  void resize(size_t n) { allocate(n, /*zero=*/true); }
  /// Makes room for at least `n` elements; the contents are unspecified
  /// afterwards. A mapping is extended in place or moved with its pages
  /// (mremap): the pages already touched stay resident and need no new
  /// faults or zeroing, only the new tail does.
  void growUninitialized(size_t n) {
    if (!tryGrowUninitialized(n))
      llvm::report_bad_alloc_error("tfmc: out of memory");
  }
  /// The same; false when the memory is not there (a mapping is then as
  /// it was, a smaller buffer gone: its contents were not kept anyway).
  [[nodiscard]] bool tryGrowUninitialized(size_t n) {
    if (n <= count && ptr)
      return true;
    if (n > (SIZE_MAX - 63) / sizeof(T))
      return false;
    if (!mappedBytes) {
      release();
      return tryAllocate(n, /*zero=*/false);
    }
    size_t bytes = mappingBytes(roundedBytes(n));
    void *memory = mremap(ptr, mappedBytes, bytes, MREMAP_MAYMOVE);
    if (memory == MAP_FAILED)
      return false;
    if (pages::mapped(bytes) && pages::adviseHugePages())
      ::madvise(memory, bytes, MADV_HUGEPAGE);
    ptr = static_cast<T *>(memory);
    mappedBytes = bytes;
    count = n;
    return true;
  }

  T *data() { return ptr; }
  const T *data() const { return ptr; }
  size_t size() const { return count; }
  T &operator[](size_t i) { return ptr[i]; }
  const T &operator[](size_t i) const { return ptr[i]; }

private:
  static constexpr size_t kMappedBytes = size_t(1) << 20;

  void release() {
    if (mappedBytes)
      munmap(ptr, mappedBytes);
    else
      std::free(ptr);
    ptr = nullptr;
    count = 0;
    mappedBytes = 0;
  }

  static size_t roundedBytes(size_t n) {
    return ((n * sizeof(T) + 63) / 64) * 64;
  }
  /// The length of a mapping for `bytes`: whole huge pages from 2 MiB.
  static size_t mappingBytes(size_t bytes) {
    return pages::mapped(bytes) ? pages::mappingBytes(bytes) : bytes;
  }

  void allocate(size_t n, bool zero) {
    release();
    if (!tryAllocate(n, zero))
      llvm::report_bad_alloc_error("tfmc: out of memory");
  }
  /// Takes `n` elements when the buffer holds none; false when the memory
  /// is not there.
  bool tryAllocate(size_t n, bool zero) {
    if (n > (SIZE_MAX - 63) / sizeof(T))
      return false;
    size_t bytes = roundedBytes(n);
    if (bytes >= kMappedBytes) {
      // Fresh anonymous pages read as zero: no memset needed.
      void *memory = nullptr;
      if (pages::mapped(bytes)) {
        memory = pages::map(bytes);
      } else {
        memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
          memory = nullptr;
      }
      if (!memory)
        return false;
      ptr = static_cast<T *>(memory);
      mappedBytes = mappingBytes(bytes);
    } else {
      ptr = static_cast<T *>(std::aligned_alloc(64, bytes ? bytes : 64));
      if (!ptr)
        return false;
      if (zero)
        std::memset(ptr, 0, bytes);
    }
    count = n;
    return true;
  }

  T *ptr = nullptr;
  size_t count = 0;
  /// Length of the mapping when ptr is one (0: from aligned_alloc).
  size_t mappedBytes = 0;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_BUFFER_H
