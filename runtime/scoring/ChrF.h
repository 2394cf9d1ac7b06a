//===- ChrF.h - corpus chrF as sacreBLEU computes it ------------*- C++ -*-===//
//
// sacreBLEU 2.x defaults: character n-grams of orders 1..6 over code points
// with all whitespace removed, no word n-grams, beta 2; statistics summed
// over the corpus, precision and recall averaged over the orders that occur,
// then one F-beta.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SCORING_CHRF_H
#define RUNTIME_SCORING_CHRF_H

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace tfmc::scoring {

struct ChrFOptions {
  int order = 6;
  double beta = 2.0;
  /// sacreBLEU's eps_smoothing: the mean of the per-order F scores instead
  /// of the F score of the mean precision and recall (not the default).
  bool epsSmoothing = false;
};

struct ChrFResult {
  double score = 0; // 0..100
  double beta = 2.0;
  /// "chrF2 = 45.12".
  std::string format() const;
};

/// Corpus chrF of hyps[i] against references[r][i] (all reference sets the
/// same length as hyps; text is valid UTF-8). With several references a
/// segment uses the one with the best segment score.
ChrFResult corpusChrF(llvm::ArrayRef<std::string> hyps,
                      llvm::ArrayRef<std::vector<std::string>> references,
                      const ChrFOptions &options = {});

} // namespace tfmc::scoring

#endif // RUNTIME_SCORING_CHRF_H
