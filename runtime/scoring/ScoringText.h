//===- ScoringText.h - text handling shared by BLEU and chrF ----*- C++ -*-===//
//
// sacreBLEU works on Python strings: whitespace is Python's str.split() set
// and character n-grams are over code points. These helpers give the same
// view of UTF-8 text.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SCORING_SCORINGTEXT_H
#define RUNTIME_SCORING_SCORINGTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tfmc::scoring {

/// Whether Python's str.isspace() is true for the code point.
bool isPythonSpace(char32_t c);

/// Decodes UTF-8; fails on invalid bytes (naming the byte offset).
llvm::Expected<std::u32string> decodeUtf8(llvm::StringRef text);

/// Python's text.split(): maximal runs without whitespace, as UTF-8.
std::vector<std::string> splitWords(llvm::StringRef text);

} // namespace tfmc::scoring

#endif // RUNTIME_SCORING_SCORINGTEXT_H
