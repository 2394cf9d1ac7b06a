//===- SentenceSplitter.cpp - a line of text into sentences ---------------===//
#include "runtime/tokenizers/SentenceSplitter.h"
#include "runtime/tokenizers/Tokenizer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdint>

using namespace tfmc::runtime;

namespace {

struct Char {
  uint32_t cp;
  size_t offset, size;
};

/// The code points of valid UTF-8 text, with their byte spans.
bool decode(llvm::StringRef text, std::vector<Char> &out) {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8CharLength(text.drop_front(i));
    if (n == 0)
      return false;
    auto b = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
    uint32_t cp = n == 1   ? b(0)
                  : n == 2 ? (b(0) & 0x1fu) << 6 | (b(1) & 0x3fu)
                  : n == 3 ? (b(0) & 0x0fu) << 12 | (b(1) & 0x3fu) << 6 |
                                 (b(2) & 0x3fu)
                           : (b(0) & 0x07u) << 18 | (b(1) & 0x3fu) << 12 |
                                 (b(2) & 0x3fu) << 6 | (b(3) & 0x3fu);
    out.push_back({cp, i, n});
    i += n;
  }
  return true;
}

/// Marks that end a sentence wherever they stand: 。！？；．…
bool isStrongMark(uint32_t cp) {
  return cp == 0x3002 || cp == 0xff01 || cp == 0xff1f || cp == 0xff1b ||
         cp == 0xff0e || cp == 0x2026;
}

/// ASCII marks that end a sentence before a space, a CJK character or the
/// end of the line.
bool isAsciiMark(uint32_t cp) {
  return cp == '.' || cp == '!' || cp == '?' || cp == ';';
}

/// Closing quotes and brackets kept with the sentence they close.
bool isCloser(uint32_t cp) {
  switch (cp) {
  case '"':
  case '\'':
  case ')':
  case ']':
  case 0x201d: // ”
  case 0x2019: // ’
  case 0x300d: // 」
  case 0x300f: // 』
  case 0xff09: // ）
  case 0x300b: // 》
  case 0x3009: // 〉
  case 0x3011: // 】
  case 0xff3d: // ］
    return true;
  default:
    return false;
  }
}

bool isSpace(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\r' || cp == '\n' || cp == '\v' ||
         cp == '\f' || cp == 0x3000 || cp == 0xa0;
}

/// Letters and digits of any script: what makes a sentence more than
/// punctuation.
bool isContent(uint32_t cp) {
  if (cp < 0x80)
    return llvm::isAlnum(static_cast<char>(cp));
  if (isSpace(cp) || (cp >= 0x2000 && cp <= 0x206f) || // general punctuation
      (cp >= 0x3000 && cp <= 0x303f) ||                // CJK punctuation
      (cp >= 0xff01 && cp <= 0xff0f) || (cp >= 0xff1a && cp <= 0xff20) ||
      (cp >= 0xff3b && cp <= 0xff40) || (cp >= 0xff5b && cp <= 0xff65))
    return false;
  return true;
}

/// Words after which a period does not end an English sentence (compared
/// without case; "e.g" and "i.e" include their inner period).
bool isAbbreviation(llvm::StringRef word) {
  static const char *const kWords[] = {
      "mr",  "mrs", "ms",   "dr",  "prof", "st",   "jr",  "sr",
      "vs",  "etc", "e.g",  "i.e", "no",   "fig",  "inc", "ltd",
      "co",  "mt",  "gen",  "col", "sgt",  "capt", "rev", "gov",
      "sen", "rep", "approx", "u.s", "a.m", "p.m"};
  for (const char *w : kWords)
    if (word.equals_insensitive(w))
      return true;
  // Initials: "J. R. R. Tolkien".
  return word.size() == 1 && llvm::isUpper(word[0]);
}

/// Whether the ASCII marks in [first, end) followed by closers up to `next`
/// end a sentence.
bool asciiMarksEnd(const std::vector<Char> &chars, llvm::StringRef line,
                   size_t first, size_t end, size_t next) {
  // In Chinese or Japanese text no space follows the marks: after a CJK
  // character they end the sentence whatever comes next ("吗?5加10…").
  if (first > 0 && isCjk(chars[first - 1].cp))
    return true;
  if (next < chars.size() && !isSpace(chars[next].cp) &&
      !isCjk(chars[next].cp))
    return false;
  bool onlyPeriods = llvm::all_of(
      llvm::ArrayRef(chars).slice(first, end - first),
      [](const Char &c) { return c.cp == '.'; });
  if (!onlyPeriods)
    return true;
  // The word before the period (back to whitespace, inner periods kept).
  size_t w = first;
  while (w > 0 && chars[w - 1].cp < 0x80 &&
         (llvm::isAlnum(static_cast<char>(chars[w - 1].cp)) ||
          chars[w - 1].cp == '.'))
    --w;
  llvm::StringRef word =
      line.slice(chars[w].offset, chars[first].offset).trim('.');
  if (end - first == 1 && isAbbreviation(word))
    return false;
  // "… etc. and" / "Well... he said": the sentence goes on.
  size_t after = next;
  while (after < chars.size() && isSpace(chars[after].cp))
    ++after;
  return !(after < chars.size() && chars[after].cp < 0x80 &&
           llvm::isLower(static_cast<char>(chars[after].cp)));
}

int64_t contentCount(llvm::StringRef text) {
  std::vector<Char> chars;
  if (!decode(text, chars))
    return static_cast<int64_t>(text.size());
  return llvm::count_if(chars, [](const Char &c) { return isContent(c.cp); });
}

} // namespace

std::vector<SplitSentence> tfmc::runtime::splitSentences(llvm::StringRef line) {
  std::vector<Char> chars;
  if (!decode(line, chars)) // the tokenizer reports it
    return {{"", line.str()}};
  // Byte offsets where sentences end (before the whitespace that follows).
  std::vector<size_t> ends;
  // ASCII quotes open and close alike: one after the marks closes the
  // sentence only when the sentence has an odd number of them so far
  // (apostrophes inside words do not count).
  int64_t doubleQuotes = 0, singleQuotes = 0;
  auto isLetter = [&](size_t k) {
    return k < chars.size() && chars[k].cp < 0x80 &&
           llvm::isAlpha(static_cast<char>(chars[k].cp));
  };
  auto countQuote = [&](size_t k) {
    if (chars[k].cp == '"')
      ++doubleQuotes;
    else if (chars[k].cp == '\'' && !(k > 0 && isLetter(k - 1) && isLetter(k + 1)))
      ++singleQuotes;
  };
  for (size_t i = 0; i < chars.size();) {
    uint32_t cp = chars[i].cp;
    if (!isStrongMark(cp) && !isAsciiMark(cp)) {
      countQuote(i);
      ++i;
      continue;
    }
    size_t end = i;
    bool strong = false;
    while (end < chars.size() &&
           (isStrongMark(chars[end].cp) || isAsciiMark(chars[end].cp))) {
      strong |= isStrongMark(chars[end].cp);
      ++end;
    }
    size_t next = end;
    for (; next < chars.size() && isCloser(chars[next].cp); ++next) {
      uint32_t c = chars[next].cp;
      if ((c == '"' && doubleQuotes % 2 == 0) ||
          (c == '\'' && singleQuotes % 2 == 0))
        break; // opens the next sentence
      countQuote(next);
    }
    if (next < chars.size() &&
        (strong || asciiMarksEnd(chars, line, i, end, next))) {
      ends.push_back(chars[next].offset);
      doubleQuotes = singleQuotes = 0;
    }
    i = next;
  }
  std::vector<SplitSentence> out;
  size_t start = 0;
  auto add = [&](size_t end) {
    size_t textStart = start;
    while (textStart < end && llvm::isSpace(line[textStart]))
      ++textStart;
    // Full-width spaces between sentences count as separators too.
    while (line.substr(textStart, end - textStart).starts_with("\u3000"))
      textStart += 3;
    out.push_back({line.slice(start, textStart).str(),
                   line.slice(textStart, end).str()});
    start = end;
  };
  for (size_t end : ends)
    add(end);
  add(line.size());
  // A last "sentence" of only whitespace belongs to the one before.
  if (out.size() > 1 && out.back().text.empty()) {
    out[out.size() - 2].text += out.back().before;
    out.pop_back();
  }
  // Sentences with fewer than two letters or digits join the next one (the
  // previous one when they are last). Counts add up as sentences merge.
  std::vector<SplitSentence> merged;
  std::vector<int64_t> mergedCount;
  for (size_t i = 0; i < out.size(); ++i) {
    SplitSentence s = std::move(out[i]);
    int64_t count = contentCount(s.text);
    while (i + 1 < out.size() && count < 2) {
      ++i;
      s.text += out[i].before + out[i].text;
      count += contentCount(out[i].text);
    }
    if (!merged.empty() && count < 2) {
      merged.back().text += s.before + s.text;
      mergedCount.back() += count;
    } else {
      merged.push_back(std::move(s));
      mergedCount.push_back(count);
    }
  }
  return merged;
}

std::string
tfmc::runtime::joinTranslations(llvm::ArrayRef<std::string> translations,
                                llvm::ArrayRef<SplitSentence> sources) {
  // The first or last character of text (0 if none or not UTF-8).
  auto charAt = [](llvm::StringRef s, bool last) -> uint32_t {
    size_t start = 0;
    if (last) {
      start = s.size();
      while (start > 0 && s.size() - start < 4) {
        --start;
        if ((static_cast<uint8_t>(s[start]) & 0xc0) != 0x80)
          break;
      }
    }
    std::vector<Char> chars;
    size_t n = start < s.size() ? utf8CharLength(s.drop_front(start)) : 0;
    if (n == 0 || !decode(s.substr(start, n), chars))
      return 0;
    return chars.front().cp;
  };
  std::string out;
  for (size_t i = 0; i < translations.size(); ++i) {
    llvm::StringRef t = translations[i];
    if (t.empty())
      continue;
    if (!out.empty()) {
      bool unspaced = isCjk(charAt(out, true)) && isCjk(charAt(t, false));
      out += unspaced && i < sources.size() ? sources[i].before
                                            : std::string(" ");
    }
    out += t.str();
  }
  return out;
}
