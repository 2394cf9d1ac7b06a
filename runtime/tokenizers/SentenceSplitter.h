//===- SentenceSplitter.h - a line of text into sentences -------*- C++ -*-===//
//
// Models trained on single sentences garble paragraphs; `--split-sentences`
// translates each sentence of a line as its own source and joins the
// translations back into one line. The splitter is rule-based and local (a
// decision depends only on the characters around a punctuation mark), so a
// line made of several sentences splits exactly where each of them ends.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_TOKENIZERS_SENTENCESPLITTER_H
#define RUNTIME_TOKENIZERS_SENTENCESPLITTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace tfmc::runtime {

/// One sentence of a line: `before` + `text` of every sentence, in order,
/// is the line again, byte for byte. `before` holds the whitespace between
/// the previous sentence and this one (for the first, the line's leading
/// whitespace).
struct SplitSentence {
  std::string before;
  std::string text;
};

/// Splits valid UTF-8 `line` into sentences:
/// * after a run of sentence-final marks: the full-width 。！？；．and …
///   always; the ASCII ! ? ; . only when followed by the end of the line,
///   whitespace or a CJK character, and `.` not after a common English
///   abbreviation (Mr. Dr. e.g. …) or a single capital letter (initials),
///   nor before a lowercase word;
/// * closing quotes and brackets right after the marks (” ’ 」 』 ） ) ] 》
///   and ASCII " ') stay with the sentence they close;
/// * never inside a number (3.14) or a word;
/// * a sentence with fewer than two letters or digits (「好。」, "!") stays
///   with the next sentence (the previous one when it is the last).
/// A line without such marks is one sentence. Trailing whitespace of the
/// line is part of the last sentence's `text`.
std::vector<SplitSentence> splitSentences(llvm::StringRef line);

/// Joins the translations of the sentences of one line: a single space
/// between two translations, except where both sides of the join are written
/// without spaces (CJK), which keep the source's own separator. Empty
/// translations add nothing.
std::string joinTranslations(llvm::ArrayRef<std::string> translations,
                             llvm::ArrayRef<SplitSentence> sources);

} // namespace tfmc::runtime

#endif // RUNTIME_TOKENIZERS_SENTENCESPLITTER_H
