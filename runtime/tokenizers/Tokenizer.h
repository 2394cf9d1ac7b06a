//===- Tokenizer.h - text <-> token ids -------------------------*- C++ -*-===//
//
// The tokenizer kinds of model.json: `char` (one token per CJK character;
// other text split at spaces and punctuation), `word` (whitespace and
// punctuation split) with a detokenizer that restores normal English spacing
// around punctuation, and `sentencepiece` (SentencePieceTokenizer.cpp).
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

/// A tokenized line: the ids, and the source text of every piece that mapped
/// to unk, in order (what `decode` can put back in place of output unks).
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<std::string> unknownSpans;
};

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  /// Text -> ids; pieces missing from the vocabulary map to unk. Fails on
  /// invalid UTF-8 (naming the byte offset).
  virtual llvm::Expected<Encoding> tokenize(llvm::StringRef text) const = 0;
  /// Ids -> text. The k-th unk id (or id outside the vocabulary) is written
  /// as unkReplacements[k] when there is one, otherwise as the vocabulary's
  /// unk piece (e.g. `<unk>`), so it stays visible.
  virtual std::string
  decode(llvm::ArrayRef<int32_t> ids,
         llvm::ArrayRef<std::string> unkReplacements = {}) const = 0;

  llvm::Expected<std::vector<int32_t>> encode(llvm::StringRef text) const;

  /// The tokenizer of one side of a model: `char`, `word`, or `sentencepiece`
  /// (then `spmModelPath` names the SentencePiece model, which must agree
  /// with `vocab` piece by piece and use `unk` as its unknown id). The
  /// tokenizer keeps its own copy of `vocab`.
  /// With `piecesThroughVocab` ("piece_ids": "vocab") a SentencePiece
  /// side maps pieces to ids by their text in `vocab` instead.
  static llvm::Expected<std::unique_ptr<Tokenizer>>
  create(llvm::StringRef kind, const frontend::Vocabulary &vocab, int32_t unk,
         llvm::StringRef spmModelPath = "", bool piecesThroughVocab = false);
};

/// Loads a SentencePiece model and checks it against the vocabulary (unless
/// its pieces map to ids through the vocabulary's text).
llvm::Expected<std::unique_ptr<Tokenizer>>
createSentencePieceTokenizer(llvm::StringRef modelPath,
                             const frontend::Vocabulary &vocab, int32_t unk,
                             bool piecesThroughVocab = false);

/// Splits valid UTF-8 text like the `char` (cjkChars) or `word` tokenizer.
std::vector<std::string> splitText(llvm::StringRef text, bool cjkChars);

/// Joins pieces with single spaces, except: none before closing punctuation
/// (. , ! ? ; : % ) ] } and contractions such as 's n't), none after opening
/// brackets, an apostrophe between a word and a contraction suffix (don ' t)
/// joins both sides, double quotes alternate between opening and closing,
/// and CJK characters are joined without spaces.
std::string detokenize(llvm::ArrayRef<std::string> pieces);

/// Checks that text is valid UTF-8; the error names the first bad byte.
llvm::Error validateUtf8(llvm::StringRef text);
/// The length in bytes of the UTF-8 character starting at text[0], or 0 if
/// the bytes there are not valid UTF-8.
size_t utf8CharLength(llvm::StringRef text);
/// Whether the code point is a CJK ideograph or CJK punctuation/fullwidth
/// form (one token each for the `char` tokenizer).
bool isCjk(uint32_t codePoint);

} // namespace tfmc::runtime

#endif // RUNTIME_TOKENIZERS_TOKENIZER_H
