//===- NoLibraryKernels.cpp - a build without oneDNN ----------------------===//
//
// Compiled code then uses loop kernels only; only the buffer pool is
// registered.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"

#include <cstdint>

bool tfmc::runtime::haveLibraryKernels() { return false; }
int64_t tfmc::runtime::libraryKernelMinRows() { return 8; }
void tfmc::runtime::setKernelThreads(int) {}
int tfmc::runtime::kernelThreads() { return 1; }
// Compiled loops never use the kernel threads.
int64_t tfmc::runtime::threadNeutralRows() { return INT64_MAX; }
std::string tfmc::runtime::takeKernelError() { return {}; }
std::vector<std::pair<std::string, void *>> tfmc::runtime::kernelSymbols() {
  auto symbols = bufferPoolSymbols();
  for (auto &symbol : searchKernelSymbols())
    symbols.push_back(symbol);
  return symbols;
}
void tfmc::runtime::releaseKernelWeights(const void *) {}
