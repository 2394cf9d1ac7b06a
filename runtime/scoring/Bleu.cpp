//===- Bleu.cpp - corpus BLEU as sacreBLEU computes it --------------------===//
#include "runtime/scoring/Bleu.h"

#include "runtime/scoring/ScoringText.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace tfmc;
using namespace tfmc::scoring;

namespace {

void replaceAll(std::string &s, llvm::StringRef from, llvm::StringRef to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from.data(), pos, from.size())) !=
                   std::string::npos;
       pos = hit + from.size())
    out.append(s, pos, hit - pos).append(to.data(), to.size());
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// The characters the first 13a rule surrounds with spaces: { | } ~ [ \ ] ^
/// _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
bool isSplitPunct(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u >= 0x7b && u <= 0x7e) || (u >= 0x5b && u <= 0x60) ||
         (u >= 0x20 && u <= 0x26) || (u >= 0x28 && u <= 0x2b) ||
         (u >= 0x3a && u <= 0x40) || u == '/';
}

/// One left-to-right pass replacing non-overlapping matches of a two-byte
/// pattern (first, second) by `emit` (Python re.sub on these patterns; the
/// classes are ASCII, so scanning bytes of UTF-8 gives the same result).
template <typename First, typename Second, typename Emit>
std::string pairPass(const std::string &s, First first, Second second,
                     Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

using NgramCounts = llvm::StringMap<int64_t>;

/// All n-grams of orders 1..4 (tokens joined by spaces) with their counts.
NgramCounts countNgrams(const std::vector<std::string> &tokens) {
  NgramCounts counts;
  for (size_t n = 1; n <= 4; ++n)
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string key = tokens[i];
      for (size_t k = 1; k < n; ++k)
        key += ' ' + tokens[i + k];
      ++counts[key];
    }
  return counts;
}

size_t order(llvm::StringRef ngram) { return ngram.count(' ') + 1; }

} // namespace

// sacreBLEU strips trailing whitespace before tokenising; that cannot change
// the tokens (whitespace is neither a digit nor a period or comma), so it is
// not repeated here.
std::string scoring::tokenize13a(llvm::StringRef line) {
  std::string s = line.str();
  replaceAll(s, "<skipped>", "");
  replaceAll(s, "-\n", "");
  replaceAll(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    replaceAll(s, "&quot;", "\"");
    replaceAll(s, "&amp;", "&");
    replaceAll(s, "&lt;", "<");
    replaceAll(s, "&gt;", ">");
  }
  std::string padded;
  padded.reserve(s.size() * 2 + 2);
  padded += ' ';
  for (char c : s) {
    if (isSplitPunct(c)) {
      padded += ' ';
      padded += c;
      padded += ' ';
    } else {
      padded += c;
    }
  }
  padded += ' ';
  auto isPeriodComma = [](char c) { return c == '.' || c == ','; };
  auto notDigit = [](char c) { return !isDigit(c); };
  s = pairPass(padded, notDigit, isPeriodComma,
               [](std::string &o, char a, char b) {
                 o += a, o += ' ', o += b, o += ' ';
               });
  s = pairPass(s, isPeriodComma, notDigit, [](std::string &o, char a, char b) {
    o += ' ', o += a, o += ' ', o += b;
  });
  s = pairPass(s, isDigit, [](char c) { return c == '-'; },
               [](std::string &o, char a, char b) {
                 o += a, o += ' ', o += b, o += ' ';
               });
  std::string out;
  for (const std::string &word : splitWords(s)) {
    if (!out.empty())
      out += ' ';
    out += word;
  }
  return out;
}

BleuResult
scoring::corpusBleu(llvm::ArrayRef<std::string> hyps,
                    llvm::ArrayRef<std::vector<std::string>> references) {
  BleuResult r;
  for (size_t i = 0; i < hyps.size(); ++i) {
    std::vector<std::string> hypTokens =
        splitWords(tokenize13a(hyps[i]));
    auto hypLength = static_cast<int64_t>(hypTokens.size());
    // Clipping counts: per n-gram, the most any reference has. Reference
    // length: the closest to the hypothesis, the shorter on ties.
    NgramCounts refMax;
    int64_t refLength = -1;
    for (const std::vector<std::string> &refs : references) {
      std::vector<std::string> refTokens =
          splitWords(tokenize13a(refs[i]));
      auto len = static_cast<int64_t>(refTokens.size());
      if (refLength < 0 || std::abs(len - hypLength) <
                               std::abs(refLength - hypLength) ||
          (std::abs(len - hypLength) == std::abs(refLength - hypLength) &&
           len < refLength))
        refLength = len;
      for (const auto &entry : countNgrams(refTokens)) {
        int64_t &m = refMax[entry.getKey()];
        m = std::max(m, entry.getValue());
      }
    }
    r.hypLength += hypLength;
    r.refLength += std::max<int64_t>(refLength, 0);
    for (const auto &entry : countNgrams(hypTokens)) {
      size_t n = order(entry.getKey());
      r.total[n - 1] += entry.getValue();
      auto it = refMax.find(entry.getKey());
      if (it != refMax.end())
        r.correct[n - 1] += std::min(entry.getValue(), it->getValue());
    }
  }

  if (r.hypLength < r.refLength)
    r.brevityPenalty =
        r.hypLength > 0
            ? std::exp(1.0 - double(r.refLength) / double(r.hypLength))
            : 0.0;
  else
    r.brevityPenalty = 1.0;
  bool anyMatch = false;
  for (int64_t c : r.correct)
    anyMatch |= c > 0;
  if (!anyMatch)
    return r; // score 0, precisions 0
  double smooth = 1.0;
  for (size_t n = 0; n < 4; ++n) {
    if (r.total[n] == 0)
      break;
    if (r.correct[n] == 0) {
      smooth *= 2;
      r.precisions[n] = 100.0 / (smooth * double(r.total[n]));
    } else {
      r.precisions[n] = 100.0 * double(r.correct[n]) / double(r.total[n]);
    }
  }
  double logSum = 0;
  for (double p : r.precisions)
    logSum += p > 0 ? std::log(p) : -9999999999.0;
  r.score = r.brevityPenalty * std::exp(logSum / 4);
  return r;
}

std::string BleuResult::format() const {
  double ratio = refLength > 0 ? double(hypLength) / double(refLength) : 0.0;
  return llvm::formatv("BLEU = {0:f2} {1:f1}/{2:f1}/{3:f1}/{4:f1} (BP = "
                       "{5:f3} ratio = {6:f3} hyp_len = {7} ref_len = {8})",
                       score, precisions[0], precisions[1], precisions[2],
                       precisions[3], brevityPenalty, ratio, hypLength,
                       refLength)
      .str();
}
