//===- ScoringText.cpp - text handling shared by BLEU and chrF ------------===//
#include "runtime/scoring/ScoringText.h"

#include "llvm/Support/ConvertUTF.h"

using namespace tfmc;

bool scoring::isPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 ||
         c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

llvm::Expected<std::u32string> scoring::decodeUtf8(llvm::StringRef text) {
  std::u32string out;
  out.reserve(text.size());
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const auto *p = begin;
  const auto *end = begin + text.size();
  while (p < end) {
    llvm::UTF32 c;
    const llvm::UTF8 *start = p;
    if (llvm::convertUTF8Sequence(&p, end, &c, llvm::strictConversion) !=
        llvm::conversionOK)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "invalid UTF-8 at byte %zu",
                                     static_cast<size_t>(start - begin));
    out.push_back(static_cast<char32_t>(c));
  }
  return out;
}

std::vector<std::string> scoring::splitWords(llvm::StringRef text) {
  // Whitespace code points are at most 3 bytes; decode as we go. Callers
  // pass valid UTF-8.
  std::vector<std::string> words;
  std::string current;
  const auto *p = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const auto *end = p + text.size();
  while (p < end) {
    const llvm::UTF8 *start = p;
    llvm::UTF32 c;
    if (llvm::convertUTF8Sequence(&p, end, &c, llvm::lenientConversion) !=
        llvm::conversionOK) {
      p = start + 1;
      c = 0xfffd;
    }
    if (isPythonSpace(static_cast<char32_t>(c))) {
      if (!current.empty())
        words.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.append(reinterpret_cast<const char *>(start), p - start);
  }
  if (!current.empty())
    words.push_back(std::move(current));
  return words;
}
