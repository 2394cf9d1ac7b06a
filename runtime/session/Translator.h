//===- Translator.h - line-oriented translation of a stream -----*- C++ -*-===//
#ifndef RUNTIME_SESSION_TRANSLATOR_H
#define RUNTIME_SESSION_TRANSLATOR_H

#include "runtime/session/LineReader.h"
#include "runtime/session/Session.h"
#include "runtime/tokenizers/Tokenizer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <memory>
#include <optional>

namespace tfmc::runtime {

/// Why a source got no translation: a beam (or greedy with scores, a beam of
/// one) can end with no hypothesis when the repetition guards leave each
/// no token while min_length still bans eos (docs/reference.md). Said as a
/// warning, never left silent.
inline constexpr llvm::StringLiteral kNoHypothesis =
    "no translation: every hypothesis was left without an allowed token (the "
    "repetition guards forbid every token while the minimum length still "
    "bans eos)";

/// Why a translation's score is NaN: the logits were NaN or infinite, the
/// model's arithmetic having left float32's range (weights or activations
/// too large), so its outputs are not to be trusted either. Greedy search
/// without scores marks such a row with a NaN score too (it stops the row
/// where the logit it chose is not finite). Said as a warning.
inline constexpr llvm::StringLiteral kScoreNotANumber =
    "the model's outputs are not numbers (NaN or infinite logits: its "
    "arithmetic overflowed float32, or float16 where keys and values are "
    "stored as halves; weights or activations too large), so "
    "the translation is not to be trusted";

/// Whether a score of `nbest` is NaN (the case kScoreNotANumber describes).
inline bool anyScoreNaN(llvm::ArrayRef<Hypothesis> nbest) {
  return llvm::any_of(nbest,
                      [](const Hypothesis &h) { return std::isnan(h.score); });
}

/// The model's own tokenizers, one per side, for text in and text out.
struct TextTokenizers {
  std::unique_ptr<Tokenizer> source, target;
};

/// Builds (and so validates: SentencePiece model files, their agreement
/// with the vocabularies) both sides' tokenizers. Cheap, so a driver calls
/// it before compiling the model.
llvm::Expected<TextTokenizers> createTextTokenizers(const frontend::Model &m);

struct TranslateOptions {
  /// Translating text, a row's length is limited relative to its source by
  /// default (factor 3, offset 10, as the well-known engines do).
  TranslateOptions() { search.maxLengthFactor = 3; }
  SearchOptions search;
  /// Lines decoded together (at most)...
  int64_t batchSize = 32;
  /// ...and at most this many padded source tokens per batch (rows x the
  /// longest row, eos included; 0: no bound).
  int64_t batchTokens = 0;
  /// Lines read ahead and sorted by length before batching (0: 16 x
  /// batchSize). Reading never waits for more when input is not
  /// immediately available.
  int64_t readAhead = 0;
  /// Batch the read-ahead window shortest first (false: input order).
  bool sortByLength = true;
  /// The updating progress line on the diagnostics stream, and the total
  /// number of lines when known (a regular file).
  bool progress = false;
  std::optional<int64_t> totalLines;
  /// Only input lines [firstLine, endLine) (0-based) are translated and
  /// written; the others are read past (sharding). Indices in score lines
  /// stay those of the whole input.
  int64_t firstLine = 0;
  std::optional<int64_t> endLine;
  /// Text mode: the k-th unk of a translation is replaced by the source text
  /// of the k-th unknown source piece (when there is one) instead of being
  /// written as the unk token.
  bool replaceUnknown = false;
  /// Text mode, one translation a line: each line is split into sentences
  /// (SentenceSplitter.h), the sentences are translated as separate sources
  /// (batched and length-sorted with all others) and their translations
  /// joined into one output line.
  bool splitSentences = false;
  /// Write `i ||| translation ||| score` lines, nBest per input (>= 1).
  /// Never split.
  bool scores = false;
  int64_t nBest = 1;
};

struct TranslateStats {
  int64_t lines = 0;
  int64_t writtenLines = 0;
  int64_t badLines = 0;    // errors (bad token ids)
  int64_t warnedLines = 0; // unreadable text (invalid UTF-8)
  int64_t truncatedLines = 0;
  int64_t generatedTokens = 0;
};

/// Parses one line of space- or tab-separated token ids, each in
/// [0, vocab); errors name the 1-based column of the bad field.
llvm::Expected<std::vector<int32_t>>
parseIdLine(llvm::StringRef line, int64_t vocab,
            llvm::StringRef side = "source");

/// Reads one sentence per line from `in` and writes exactly one line per
/// input line to `out`, in input order, each as soon as it and every line
/// before it are translated. Lines are read ahead (up to readAhead, never
/// waiting for input that is not there yet), sorted by length and batched;
/// the output does not depend on the batching. Lines are text through
/// `tokenizers` or, when it is null, space-separated token ids in and out.
/// A bad line is reported on `diagnostics` with its 1-based number and
/// yields an empty output line; it never stops or shifts the rest.
llvm::Expected<TranslateStats> translateStream(Session &session,
                                               const TextTokenizers *tokenizers,
                                               LineReader &in,
                                               llvm::raw_ostream &out,
                                               llvm::raw_ostream &diagnostics,
                                               const TranslateOptions &options);

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_TRANSLATOR_H
