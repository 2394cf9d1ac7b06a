//===- Tokenizer.h - text <-> token ids -------------------------*- C++ -*-===//
//
// The built-in tokenizer kinds of model.json: `char` (one token per CJK
// character; other text split at spaces and punctuation) and `word`
// (whitespace and punctuation split), with a detokenizer that restores
// normal English spacing around punctuation.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_TOKENIZERS_TOKENIZER_H
#define RUNTIME_TOKENIZERS_TOKENIZER_H

#include "frontends/model/Vocabulary.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace tfmc::runtime {

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  /// Splits valid UTF-8 text into pieces (no ids).
  virtual std::vector<std::string> split(llvm::StringRef text) const = 0;
  /// Text -> ids; pieces missing from the vocabulary map to `unk`. Fails on
  /// invalid UTF-8.
  llvm::Expected<std::vector<int32_t>> encode(llvm::StringRef text) const;
  /// Ids -> text with normal spacing; ids outside the vocabulary print as
  /// the unk piece.
  std::string decode(llvm::ArrayRef<int32_t> ids) const;

  /// The tokenizer of one side of a model (`char` or `word`).
  static llvm::Expected<std::unique_ptr<Tokenizer>>
  create(llvm::StringRef kind, const frontend::Vocabulary &vocab, int32_t unk);

protected:
  Tokenizer(const frontend::Vocabulary &vocab, int32_t unk)
      : vocab(vocab), unk(unk) {}
  const frontend::Vocabulary &vocab;
  int32_t unk;
};

/// Joins pieces with single spaces, except none before closing punctuation
/// (. , ! ? ; : % ) ] } and the contraction 's/'t/n't) and none after
/// opening brackets; CJK characters are joined without spaces.
std::string detokenize(llvm::ArrayRef<std::string> pieces);

/// The length in bytes of the UTF-8 character starting at text[0], or 0 if
/// the bytes there are not valid UTF-8.
size_t utf8CharLength(llvm::StringRef text);
/// Whether the code point is a CJK ideograph or CJK punctuation/fullwidth
/// form (one token each for the `char` tokenizer).
bool isCjk(uint32_t codePoint);

} // namespace tfmc::runtime

#endif // RUNTIME_TOKENIZERS_TOKENIZER_H
