//===- ChrF.cpp - corpus chrF as sacreBLEU computes it --------------------===//
#include "runtime/scoring/ChrF.h"

#include "runtime/scoring/ScoringText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace tfmc;
using namespace tfmc::scoring;

namespace {

/// Per order: hypothesis n-grams, reference n-grams, matches.
struct OrderStats {
  double hyp = 0, ref = 0, match = 0;
};
using Stats = std::vector<OrderStats>;

/// The text without whitespace, as code points (input is valid UTF-8).
std::u32string squeeze(const std::string &text) {
  auto decoded = decodeUtf8(text);
  if (!decoded) {
    llvm::consumeError(decoded.takeError());
    return {};
  }
  llvm::erase_if(*decoded, isPythonSpace);
  return std::move(*decoded);
}

std::map<std::u32string, double> ngrams(const std::u32string &s, size_t n) {
  std::map<std::u32string, double> counts;
  for (size_t i = 0; i + n <= s.size(); ++i)
    counts[s.substr(i, n)] += 1;
  return counts;
}

Stats segmentStats(const std::u32string &hyp, const std::u32string &ref,
                   int order) {
  Stats stats(order);
  for (int n = 1; n <= order; ++n) {
    auto h = ngrams(hyp, n), r = ngrams(ref, n);
    OrderStats &s = stats[n - 1];
    for (const auto &[gram, count] : r)
      s.ref += count;
    // sacreBLEU counts no hypothesis n-grams of an order the reference is
    // too short to have.
    if (s.ref == 0)
      continue;
    for (const auto &[gram, count] : h) {
      s.hyp += count;
      auto it = r.find(gram);
      if (it != r.end())
        s.match += std::min(count, it->second);
    }
  }
  return stats;
}

double fScore(const Stats &stats, const ChrFOptions &options) {
  const double eps = 1e-16;
  double factor = options.beta * options.beta;
  double sum = 0, avgPrec = 0, avgRec = 0;
  int effective = 0;
  for (const OrderStats &s : stats) {
    double prec = s.hyp > 0 ? s.match / s.hyp : eps;
    double rec = s.ref > 0 ? s.match / s.ref : eps;
    double denom = factor * prec + rec;
    sum += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (s.hyp > 0 && s.ref > 0) {
      avgPrec += prec;
      avgRec += rec;
      ++effective;
    }
  }
  if (options.epsSmoothing)
    return 100 * sum / double(stats.size());
  if (effective == 0)
    return 0;
  avgPrec /= effective;
  avgRec /= effective;
  if (avgPrec + avgRec == 0)
    return 0;
  // sacreBLEU's order of operations: the per-line best reference is chosen
  // on these values, so two references that tie there must tie here too
  // (100 · (1 + β²)·P·R / … rounds otherwise and picked the other one).
  double score = (1 + factor) * avgPrec * avgRec;
  score /= factor * avgPrec + avgRec;
  return 100 * score;
}

} // namespace

ChrFResult
scoring::corpusChrF(llvm::ArrayRef<std::string> hyps,
                    llvm::ArrayRef<std::vector<std::string>> references,
                    const ChrFOptions &options) {
  Stats total(options.order);
  for (size_t i = 0; i < hyps.size(); ++i) {
    std::u32string hyp = squeeze(hyps[i]);
    Stats best;
    double bestScore = -1;
    for (const std::vector<std::string> &refs : references) {
      Stats s = segmentStats(hyp, squeeze(refs[i]), options.order);
      double f = fScore(s, options);
      if (f > bestScore) { // the first reference wins ties
        bestScore = f;
        best = std::move(s);
      }
    }
    for (int n = 0; n < options.order && !best.empty(); ++n) {
      total[n].hyp += best[n].hyp;
      total[n].ref += best[n].ref;
      total[n].match += best[n].match;
    }
  }
  ChrFResult result;
  result.beta = options.beta;
  result.score = fScore(total, options);
  return result;
}

std::string ChrFResult::format() const {
  std::string name = beta == static_cast<int>(beta)
                         ? std::to_string(static_cast<int>(beta))
                         : llvm::formatv("{0}", beta).str();
  return llvm::formatv("chrF{0} = {1:f2}", name, score).str();
}
