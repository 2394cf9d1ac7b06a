//===- Tokenizer.cpp - text <-> token ids ---------------------------------===//
#include "runtime/tokenizers/Tokenizer.h"

#include <cctype>

using namespace tfmc;
using namespace tfmc::runtime;

size_t tfmc::runtime::utf8CharLength(llvm::StringRef text) {
  if (text.empty())
    return 0;
  auto b0 = static_cast<unsigned char>(text[0]);
  size_t n = b0 < 0x80           ? 1
             : (b0 >> 5) == 0x6  ? 2
             : (b0 >> 4) == 0xe  ? 3
             : (b0 >> 3) == 0x1e ? 4
                                 : 0;
  if (n == 0 || n > text.size())
    return 0;
  for (size_t i = 1; i < n; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80)
      return 0;
  // Reject overlong forms and surrogates.
  uint32_t cp = n == 1 ? b0 : b0 & (0xff >> (n + 1));
  for (size_t i = 1; i < n; ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(text[i]) & 0x3f);
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

static uint32_t codePoint(llvm::StringRef ch) {
  auto b0 = static_cast<unsigned char>(ch[0]);
  if (ch.size() == 1)
    return b0;
  uint32_t cp = b0 & (0xff >> (ch.size() + 1));
  for (size_t i = 1; i < ch.size(); ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(ch[i]) & 0x3f);
  return cp;
}

bool tfmc::runtime::isCjk(uint32_t cp) {
  return (cp >= 0x4e00 && cp <= 0x9fff) ||   // unified ideographs
         (cp >= 0x3400 && cp <= 0x4dbf) ||   // extension A
         (cp >= 0x20000 && cp <= 0x2ffff) || // extensions B..
         (cp >= 0xf900 && cp <= 0xfaff) ||   // compatibility ideographs
         (cp >= 0x3000 && cp <= 0x303f) ||   // CJK punctuation
         (cp >= 0xff00 && cp <= 0xffef);     // fullwidth forms
}

namespace {

bool isAsciiPunct(char c) {
  return std::ispunct(static_cast<unsigned char>(c)) != 0;
}

/// Splits at whitespace; ASCII punctuation characters are pieces of their
/// own; with `cjkChars`, so is every CJK character.
std::vector<std::string> splitText(llvm::StringRef text, bool cjkChars) {
  std::vector<std::string> pieces;
  std::string current;
  auto flush = [&] {
    if (!current.empty())
      pieces.push_back(std::move(current));
    current.clear();
  };
  while (!text.empty()) {
    size_t n = utf8CharLength(text);
    if (n == 0)
      n = 1; // callers validate first
    llvm::StringRef ch = text.take_front(n);
    text = text.drop_front(n);
    if (n == 1 && std::isspace(static_cast<unsigned char>(ch[0]))) {
      flush();
      continue;
    }
    if ((n == 1 && isAsciiPunct(ch[0])) || (cjkChars && isCjk(codePoint(ch)))) {
      flush();
      pieces.push_back(ch.str());
      continue;
    }
    current += ch.str();
  }
  flush();
  return pieces;
}

class CharTokenizer : public Tokenizer {
public:
  using Tokenizer::Tokenizer;
  std::vector<std::string> split(llvm::StringRef text) const override {
    return splitText(text, /*cjkChars=*/true);
  }
};

class WordTokenizer : public Tokenizer {
public:
  using Tokenizer::Tokenizer;
  std::vector<std::string> split(llvm::StringRef text) const override {
    return splitText(text, /*cjkChars=*/false);
  }
};

bool startsWithCjk(llvm::StringRef piece) {
  size_t n = utf8CharLength(piece);
  return n > 1 && isCjk(codePoint(piece.take_front(n)));
}

bool endsWithCjk(llvm::StringRef piece) {
  for (size_t i = piece.size(); i-- > 0;) {
    if ((static_cast<unsigned char>(piece[i]) & 0xc0) == 0x80)
      continue;
    size_t n = utf8CharLength(piece.drop_front(i));
    return n > 1 && isCjk(codePoint(piece.substr(i, n)));
  }
  return false;
}

} // namespace

llvm::Expected<std::vector<int32_t>>
Tokenizer::encode(llvm::StringRef text) const {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8CharLength(text.drop_front(i));
    if (n == 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "invalid UTF-8 at byte %zu", i);
    i += n;
  }
  std::vector<int32_t> ids;
  for (const std::string &piece : split(text)) {
    std::optional<int64_t> id = vocab.lookup(piece);
    ids.push_back(id ? static_cast<int32_t>(*id) : unk);
  }
  return ids;
}

std::string Tokenizer::decode(llvm::ArrayRef<int32_t> ids) const {
  std::vector<std::string> pieces;
  for (int32_t id : ids)
    pieces.push_back(
        (id >= 0 && id < vocab.size() ? vocab.token(id) : vocab.token(unk))
            .str());
  return detokenize(pieces);
}

std::string tfmc::runtime::detokenize(llvm::ArrayRef<std::string> pieces) {
  static const llvm::StringRef closing[] = {
      ".", ",",  "!",  "?",   ";",   ":",   "%",   ")",  "]",
      "}", "'s", "'t", "n't", "'re", "'ve", "'ll", "'d", "'m"};
  static const llvm::StringRef opening[] = {"(", "[", "{", "$", "#"};
  std::string out;
  llvm::StringRef previous;
  for (const std::string &piece : pieces) {
    bool space = !out.empty();
    for (llvm::StringRef c : closing)
      space &= piece != c;
    for (llvm::StringRef o : opening)
      space &= previous != o;
    if (space && endsWithCjk(previous) && startsWithCjk(piece))
      space = false;
    if (space)
      out += ' ';
    out += piece;
    previous = piece;
  }
  return out;
}

llvm::Expected<std::unique_ptr<Tokenizer>>
Tokenizer::create(llvm::StringRef kind, const frontend::Vocabulary &vocab,
                  int32_t unk) {
  if (kind == "char")
    return std::unique_ptr<Tokenizer>(new CharTokenizer(vocab, unk));
  if (kind == "word")
    return std::unique_ptr<Tokenizer>(new WordTokenizer(vocab, unk));
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "tokenizer '%s' is not available yet "
                                 "(pass --ids and token ids)",
                                 kind.str().c_str());
}
