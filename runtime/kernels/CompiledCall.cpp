//===- CompiledCall.cpp - calls into compiled code -----------------------===//
#include "runtime/kernels/CompiledCall.h"

#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/ProfileProbes.h"

#include <algorithm>
#include <csetjmp>
#include <new>
#include <vector>

namespace {

/// The calling thread's call into compiled code, while one runs.
struct CallState {
  /// Where a failed allocation returns to; nullptr outside callCompiled().
  std::jmp_buf *failed = nullptr;
  size_t failedBytes = 0;
  /// The blocks compiled code has taken and not given back in this call.
  std::vector<void *> held;
};

thread_local CallState state;

} // namespace

size_t tfmc::runtime::callCompiled(void (*entry)(void **), void **arguments) {
  CallState &s = state;
  std::jmp_buf jump;
  const int profileDepth = profile::openDepth();
  s.held.clear();
  s.failedBytes = 0;
  s.failed = &jump;
  if (setjmp(jump) == 0) {
    entry(arguments);
    s.failed = nullptr;
    // What the call kept (an output it allocated) is the caller's now.
    s.held.clear();
    return 0;
  }
  s.failed = nullptr;
  // The ops the call had open stay unfinished.
  profile::restoreOpenDepth(profileDepth);
  for (void *block : s.held)
    poolRelease(block);
  s.held.clear();
  s.held.shrink_to_fit();
  return s.failedBytes;
}

void *tfmc::runtime::compiledMalloc(size_t bytes) {
  void *block = nullptr;
  // The pool's own books (maps, lists) may throw when memory runs out: an
  // exception must not unwind into compiled code, which has no handlers.
  try {
    block = poolAllocate(bytes);
  } catch (const std::bad_alloc &) {
    block = nullptr;
  }
  CallState &s = state;
  if (!s.failed)
    return block;
  if (block) {
    bool counted = true;
    try {
      s.held.push_back(block);
    } catch (const std::bad_alloc &) {
      counted = false;
    }
    if (counted)
      return block;
    poolRelease(block);
  }
  // Nothing of this frame needs destroying: back to callCompiled().
  s.failedBytes = bytes ? bytes : 1;
  std::longjmp(*s.failed, 1);
}

void tfmc::runtime::compiledFree(void *block) {
  CallState &s = state;
  if (s.failed && block) {
    // Buffers die young: the one freed is most often among the last taken.
    auto it = std::find(s.held.rbegin(), s.held.rend(), block);
    if (it != s.held.rend()) {
      *it = s.held.back();
      s.held.pop_back();
    }
  }
  poolRelease(block);
}
