//===- Tokenizer.cpp - text <-> token ids ---------------------------------===//
#include "runtime/tokenizers/Tokenizer.h"

#include "llvm/ADT/STLExtras.h"

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

llvm::Error tfmc::runtime::validateUtf8(llvm::StringRef text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8CharLength(text.drop_front(i));
    if (n == 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "invalid UTF-8 at byte %zu", i);
    i += n;
  }
  return llvm::Error::success();
}

static bool isAsciiPunct(char c) {
  return std::ispunct(static_cast<unsigned char>(c)) != 0;
}

std::vector<std::string> tfmc::runtime::splitText(llvm::StringRef text,
                                                  bool cjkChars) {
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

namespace {

/// The `char` and `word` kinds: split, then look pieces up in the vocabulary.
class SplitTokenizer : public Tokenizer {
public:
  SplitTokenizer(const frontend::Vocabulary &vocab, int32_t unk, bool cjkChars)
      : vocab(vocab), unk(unk), cjkChars(cjkChars) {}

  llvm::Expected<Encoding> tokenize(llvm::StringRef text) const override {
    if (llvm::Error e = validateUtf8(text))
      return std::move(e);
    Encoding enc;
    for (std::string &piece : splitText(text, cjkChars)) {
      std::optional<int64_t> id = vocab.lookup(piece);
      enc.ids.push_back(id ? static_cast<int32_t>(*id) : unk);
      if (!id || *id == unk)
        enc.unknownSpans.push_back(std::move(piece));
    }
    return enc;
  }

  std::string
  decode(llvm::ArrayRef<int32_t> ids,
         llvm::ArrayRef<std::string> unkReplacements) const override {
    std::vector<std::string> pieces;
    size_t unks = 0;
    for (int32_t id : ids) {
      if (id >= 0 && id < vocab.size() && id != unk)
        pieces.push_back(vocab.token(id).str());
      else if (unks < unkReplacements.size())
        pieces.push_back(unkReplacements[unks++]);
      else
        pieces.push_back(vocab.token(unk).str());
    }
    return detokenize(pieces);
  }

private:
  const frontend::Vocabulary vocab; // own copy: may outlive the model
  int32_t unk;
  bool cjkChars;
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

bool isWordLike(llvm::StringRef piece) {
  return !piece.empty() &&
         std::isalnum(static_cast<unsigned char>(piece.back()));
}

} // namespace

llvm::Expected<std::vector<int32_t>>
Tokenizer::encode(llvm::StringRef text) const {
  auto enc = tokenize(text);
  if (!enc)
    return enc.takeError();
  return std::move(enc->ids);
}

std::string tfmc::runtime::detokenize(llvm::ArrayRef<std::string> pieces) {
  static const llvm::StringRef closing[] = {
      ".",  ",",  "!",   "?",   ";",   ":",   "%",  ")",  "]",  "}",
      "'s", "'t", "n't", "'re", "'ve", "'ll", "'d", "'m", "..."};
  static const llvm::StringRef opening[] = {"(", "[", "{", "$", "#"};
  static const llvm::StringRef suffixes[] = {"s",  "t", "re", "ve",
                                             "ll", "d", "m"};
  std::string out;
  llvm::StringRef previous;
  bool quoteOpen = false, glueNext = false;
  for (size_t i = 0; i < pieces.size(); ++i) {
    llvm::StringRef piece = pieces[i];
    bool space = !out.empty() && !glueNext;
    glueNext = false;
    for (llvm::StringRef c : closing)
      space &= piece != c;
    for (llvm::StringRef o : opening)
      space &= previous != o;
    if (space && endsWithCjk(previous) && startsWithCjk(piece))
      space = false;
    if (piece == "'" && isWordLike(previous) && i + 1 < pieces.size() &&
        llvm::is_contained(suffixes, llvm::StringRef(pieces[i + 1]))) {
      space = false; // don ' t -> don't
      glueNext = true;
    } else if (piece == "\"") {
      if (quoteOpen)
        space = false;
      else
        glueNext = true;
      quoteOpen = !quoteOpen;
    }
    if (space)
      out += ' ';
    out += piece;
    previous = piece;
  }
  return out;
}

llvm::Expected<std::unique_ptr<Tokenizer>>
Tokenizer::create(llvm::StringRef kind, const frontend::Vocabulary &vocab,
                  int32_t unk, llvm::StringRef spmModelPath,
                  bool piecesThroughVocab) {
  if (unk < 0 || unk >= vocab.size())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unk id %d is outside the vocabulary", unk);
  if (kind == "char" || kind == "word")
    return std::unique_ptr<Tokenizer>(
        new SplitTokenizer(vocab, unk, /*cjkChars=*/kind == "char"));
  if (kind == "sentencepiece")
    return createSentencePieceTokenizer(spmModelPath, vocab, unk,
                                        piecesThroughVocab);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown tokenizer kind '%s'",
                                 kind.str().c_str());
}
