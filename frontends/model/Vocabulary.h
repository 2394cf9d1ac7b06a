//===- Vocabulary.h - one token per line, line index = id -------*- C++ -*-===//
#ifndef FRONTENDS_MODEL_VOCABULARY_H
#define FRONTENDS_MODEL_VOCABULARY_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::frontend {

class Vocabulary {
public:
  /// Loads a vocab file (UTF-8, '\n' or "\r\n" line ends, no trailing empty
  /// line counted). Errors: missing file, invalid UTF-8 (with line number),
  /// empty token, duplicate token (with both line numbers), empty file.
  static llvm::Expected<Vocabulary> load(llvm::StringRef path);
  static llvm::Expected<Vocabulary> fromTokens(std::vector<std::string> tokens,
                                               llvm::StringRef origin);

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  llvm::StringRef token(int64_t id) const { return tokens[id]; }
  std::optional<int64_t> lookup(llvm::StringRef token) const;

private:
  std::vector<std::string> tokens;
  llvm::StringMap<int64_t> index;
};

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_VOCABULARY_H
