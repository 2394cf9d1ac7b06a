//===- Fixtures.h - where the e2e tests find their models -------*- C++ -*-===//
#ifndef TESTS_E2E_FIXTURES_H
#define TESTS_E2E_FIXTURES_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"

#include <string>

namespace tfmc::testing {

/// tests/e2e/fixtures/NAME/FILE (the committed reference fixtures).
inline std::string fixturePath(llvm::StringRef name, llvm::StringRef file) {
  llvm::SmallString<256> path(TFMC_FIXTURES_DIR);
  llvm::sys::path::append(path, name, file);
  return std::string(path);
}

inline std::string fixtureModel(llvm::StringRef name) {
  return fixturePath(name, "model.json");
}

} // namespace tfmc::testing

#endif // TESTS_E2E_FIXTURES_H
