//===- ScoreFiles.h - BLEU and chrF of a hypothesis file --------*- C++ -*-===//
#ifndef RUNTIME_SCORING_SCOREFILES_H
#define RUNTIME_SCORING_SCOREFILES_H

#include "runtime/scoring/Bleu.h"
#include "runtime/scoring/ChrF.h"

#include "llvm/Support/Error.h"

namespace tfmc::scoring {

struct ScoreReport {
  int64_t lines = 0;
  BleuResult bleu;
  ChrFResult chrf;
};

/// Reads one sentence per line from the hypothesis file and each reference
/// file and scores them. Errors (one line each): unreadable file, invalid
/// UTF-8 (file and line), files with different line counts. An empty
/// reference line is scored as sacreBLEU (2.2 on) scores it.
llvm::Expected<ScoreReport> scoreFiles(llvm::StringRef hypPath,
                                       llvm::ArrayRef<std::string> refPaths);

} // namespace tfmc::scoring

#endif // RUNTIME_SCORING_SCOREFILES_H
