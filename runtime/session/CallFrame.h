//===- CallFrame.h - arguments of one compiled function ---------*- C++ -*-===//
//
// Holds the memref descriptors ({base, aligned, offset, sizes, strides}) and
// scalars of one call to a compiled function, packed for its C-interface
// entry. Weights are bound once; inputs and outputs per call.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_CALLFRAME_H
#define RUNTIME_SESSION_CALLFRAME_H

#include "runtime/session/CompiledModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace tfmc::runtime {

class CallFrame {
public:
  explicit CallFrame(const CompiledFunction &function);

  /// Index of the argument named `name`, or -1.
  int find(llvm::StringRef name) const;
  /// Binds a contiguous array with the given extents to argument `index`.
  void bind(int index, const void *data, llvm::ArrayRef<int64_t> shape);
  void bind(llvm::StringRef name, const void *data,
            llvm::ArrayRef<int64_t> shape);
  void bindScalar(llvm::StringRef name, int64_t value);
  /// Calls the function; every argument must have been bound. Fails when a
  /// library kernel reported an error during the call, or when a buffer of
  /// the compiled code could not be allocated (the call ends there).
  llvm::Error call();

  const CompiledFunction &function() const { return fn; }

private:
  const CompiledFunction &fn;
  llvm::StringMap<int> byName;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> descriptorPointers;
  std::vector<int64_t> scalars;
  std::vector<void *> packed;
  std::vector<bool> bound;
};

/// The error of a batch whose `what` (`bytes` of it) the runtime could not
/// allocate: "out of memory (WHAT of this batch: N MB could not be
/// allocated; a smaller batch needs less)".
llvm::Error batchOutOfMemory(llvm::StringRef what, double bytes);

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_CALLFRAME_H
