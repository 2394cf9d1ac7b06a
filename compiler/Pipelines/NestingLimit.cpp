//===- NestingLimit.cpp - refuse absurdly nested IR text before parsing ---===//
#include "compiler/Pipelines/NestingLimit.h"

#include "llvm/Support/FormatVariadic.h"

std::optional<std::string>
mlir::tfm::findExcessiveNesting(llvm::StringRef text, unsigned limit) {
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"':
      // A string literal: skip to its closing quote (escapes included); it
      // never spans lines in MLIR's syntax.
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      if (i < text.size() && text[i] == '\n')
        --i;
      break;
    case '/':
      if (i + 1 < text.size() && text[i + 1] == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      if (++depth > limit)
        return llvm::formatv("{0}:{1}: IR nested deeper than {2} levels", line,
                             i - lineStart + 1, limit)
            .str();
      break;
    case '}':
    case ')':
    case ']':
    case '>':
      // '->' closes nothing; an unmatched closer is the parser's to report.
      if (depth > 0 && !(c == '>' && i > 0 && text[i - 1] == '-'))
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}
