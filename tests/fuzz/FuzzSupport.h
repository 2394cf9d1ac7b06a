//===- FuzzSupport.h - helpers shared by the libFuzzer targets --*- C++ -*-===//
#ifndef TESTS_FUZZ_FUZZSUPPORT_H
#define TESTS_FUZZ_FUZZSUPPORT_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace tfmc::fuzz {

/// The input written to a per-process file (the readers take paths, as
/// tfmc does); rewritten for every input.
inline std::string writeInput(const uint8_t *data, size_t size,
                              const char *suffix) {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp");
  }();
  std::string path = dir + "/tfmc-fuzz-" + std::to_string(getpid()) + suffix;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  return path;
}

/// Errors are expected outcomes; they must still be one line.
inline void consume(llvm::Error e) {
  if (!e)
    return;
  std::string text = llvm::toString(std::move(e));
  if (text.empty())
    std::abort(); // an error must say something
}

} // namespace tfmc::fuzz

#endif // TESTS_FUZZ_FUZZSUPPORT_H
