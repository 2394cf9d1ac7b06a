//===- CallFrame.cpp - arguments of one compiled function -----------------===//
#include "runtime/session/CallFrame.h"

#include "runtime/kernels/CompiledCall.h"
#include "runtime/kernels/KernelAbi.h"

#include "llvm/Support/ErrorHandling.h"

using namespace tfmc::runtime;

CallFrame::CallFrame(const CompiledFunction &function) : fn(function) {
  size_t n = fn.args.size();
  descriptors.resize(n);
  descriptorPointers.resize(n, nullptr);
  scalars.resize(n, 0);
  packed.resize(n, nullptr);
  bound.resize(n, false);
  for (size_t i = 0; i < n; ++i) {
    const ArgSpec &arg = fn.args[i];
    byName[arg.name] = static_cast<int>(i);
    if (arg.isScalar()) {
      packed[i] = &scalars[i];
      continue;
    }
    size_t rank = arg.shape.size();
    descriptors[i].assign(3 + 2 * rank, 0);
    descriptorPointers[i] = descriptors[i].data();
    packed[i] = &descriptorPointers[i];
  }
}

int CallFrame::find(llvm::StringRef name) const {
  auto it = byName.find(name);
  return it == byName.end() ? -1 : it->second;
}

void CallFrame::bind(int index, const void *data,
                     llvm::ArrayRef<int64_t> shape) {
  const ArgSpec &arg = fn.args[index];
  if (arg.isScalar() || shape.size() != arg.shape.size())
    llvm::report_fatal_error("tfmc: binding argument '" +
                             llvm::Twine(arg.name) + "' with the wrong rank");
  std::vector<int64_t> &d = descriptors[index];
  auto pointer = reinterpret_cast<int64_t>(data);
  d[0] = pointer; // allocated
  d[1] = pointer; // aligned
  d[2] = 0;       // offset
  size_t rank = shape.size();
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    d[3 + i] = shape[i];
    d[3 + rank + i] = stride;
    stride *= shape[i];
  }
  bound[index] = true;
}

void CallFrame::bind(llvm::StringRef name, const void *data,
                     llvm::ArrayRef<int64_t> shape) {
  int index = find(name);
  if (index < 0)
    llvm::report_fatal_error("tfmc: function '" + llvm::Twine(fn.name) +
                             "' has no argument '" + name + "'");
  bind(index, data, shape);
}

void CallFrame::bindScalar(llvm::StringRef name, int64_t value) {
  int index = find(name);
  if (index < 0 || !fn.args[index].isScalar())
    llvm::report_fatal_error("tfmc: function '" + llvm::Twine(fn.name) +
                             "' has no scalar argument '" + name + "'");
  scalars[index] = value;
  bound[index] = true;
}

llvm::Error tfmc::runtime::batchOutOfMemory(llvm::StringRef what,
                                            double bytes) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "out of memory (%s of this batch: %.1f MB could not be allocated; a "
      "smaller batch needs less)",
      what.str().c_str(), bytes / 1e6);
}

llvm::Error CallFrame::call() {
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i])
      llvm::report_fatal_error("tfmc: argument '" +
                               llvm::Twine(fn.args[i].name) + "' of '" +
                               fn.name + "' is not bound");
  size_t failedBytes = callCompiled(fn.entry, packed.data());
  std::string error = takeKernelError();
  if (failedBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "in '%s': out of memory (a buffer of %.1f MB could not be allocated)",
        fn.name.c_str(), failedBytes / 1e6);
  if (!error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "in '%s': %s", fn.name.c_str(),
                                   error.c_str());
  return llvm::Error::success();
}
