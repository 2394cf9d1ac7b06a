//===- RepetitionGuards.cpp - no-repeat n-grams, repetition penalty -------===//
#include "runtime/decoding/RepetitionGuards.h"

#include <algorithm>
#include <limits>

using namespace tfmc::runtime;

int64_t tfmc::runtime::rowLengthLimit(const SearchOptions &options,
                                      int64_t sourceTokens) {
  if (options.maxLengthFactor <= 0)
    return options.maxLength;
  double relative = std::ceil(options.maxLengthFactor * double(sourceTokens)) +
                    double(options.maxLengthOffset);
  if (relative >= double(options.maxLength))
    return options.maxLength;
  return std::max<int64_t>(static_cast<int64_t>(relative), 1);
}

void tfmc::runtime::penalizeRepeats(float *logits,
                                    llvm::ArrayRef<int32_t> generated,
                                    double penalty) {
  if (penalty == 1.0 || generated.empty())
    return;
  auto p = static_cast<float>(penalty);
  std::vector<int32_t> seen(generated.begin(), generated.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (int32_t id : seen) {
    float &l = logits[id];
    l = l > 0 ? l / p : l * p;
    // A tiny or huge P can push a logit beyond float's range; an infinity
    // would turn the log-softmax into NaN, so it stops at the largest float.
    l = std::clamp(l, -std::numeric_limits<float>::max(),
                   std::numeric_limits<float>::max());
  }
}

std::vector<int32_t>
tfmc::runtime::repeatedNgramTokens(llvm::ArrayRef<int32_t> generated,
                                   int64_t ngramSize) {
  std::vector<int32_t> banned;
  auto t = static_cast<int64_t>(generated.size());
  if (ngramSize <= 0 || t < ngramSize - 1)
    return banned;
  // The last n-1 tokens; every earlier occurrence of them is followed by a
  // token that would repeat an n-gram.
  int64_t prefix = ngramSize - 1;
  llvm::ArrayRef<int32_t> tail = generated.take_back(prefix);
  for (int64_t start = 0; start + prefix < t; ++start)
    if (generated.slice(start, prefix) == tail)
      banned.push_back(generated[start + prefix]);
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}
