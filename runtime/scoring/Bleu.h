//===- Bleu.h - corpus BLEU as sacreBLEU computes it ------------*- C++ -*-===//
//
// sacreBLEU 2.x defaults: 13a tokenisation, case-sensitive, n-grams 1..4,
// brevity penalty against the closest reference length, 'exp' smoothing of
// zero n-gram matches, no effective order.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SCORING_BLEU_H
#define RUNTIME_SCORING_BLEU_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::scoring {

/// The 13a ("mteval-v13a") tokenisation; tokens joined by single spaces.
std::string tokenize13a(llvm::StringRef line);

struct BleuResult {
  double score = 0;                  // 0..100
  std::array<double, 4> precisions{}; // smoothed, 0..100
  double brevityPenalty = 0;
  int64_t hypLength = 0, refLength = 0;
  std::array<int64_t, 4> correct{}, total{};

  /// "BLEU = 25.31 58.1/31.2/18.4/11.0 (BP = 0.970 ratio = 0.971 hyp_len =
  /// 5000 ref_len = 5150)", as sacreBLEU prints it.
  std::string format() const;
};

/// Corpus BLEU of hyps[i] against references[r][i] for every reference set
/// r (all the same length as hyps; text is valid UTF-8).
BleuResult corpusBleu(llvm::ArrayRef<std::string> hyps,
                      llvm::ArrayRef<std::vector<std::string>> references);

} // namespace tfmc::scoring

#endif // RUNTIME_SCORING_BLEU_H
