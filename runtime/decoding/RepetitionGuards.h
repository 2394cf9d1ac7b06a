//===- RepetitionGuards.h - no-repeat n-grams, penalties --------*- C++ -*-===//
//
// The two guards against looping output, as CTranslate2 and Hugging Face
// define them, over a hypothesis's generated tokens (bos excluded):
//  * repetition penalty P: the logit l of every token already generated
//    becomes l / P when positive, l * P otherwise (float32), kept within
//    float's finite range; P must be a positive normal float32;
//  * no-repeat n-gram size N: a token that would complete an n-gram already
//    in the hypothesis is forbidden (eos never is).
// See docs/cli.md for the exact order of operations.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_DECODING_REPETITIONGUARDS_H
#define RUNTIME_DECODING_REPETITIONGUARDS_H

#include "runtime/decoding/IncrementalDecoder.h"

#include "llvm/ADT/ArrayRef.h"

#include <cmath>
#include <vector>

namespace tfmc::runtime {

/// Whether `penalty` is a repetition penalty P can be: positive, finite
/// and a normal number once rounded to float32 (the arithmetic's type).
inline bool isUsablePenalty(double penalty) {
  auto p = static_cast<float>(penalty);
  return penalty > 0 && std::isnormal(p);
}

/// Applies the repetition penalty to `logits` (one row) in place.
void penalizeRepeats(float *logits, llvm::ArrayRef<int32_t> generated,
                     double penalty);

/// The tokens the no-repeat rule forbids next, sorted and unique.
std::vector<int32_t> repeatedNgramTokens(llvm::ArrayRef<int32_t> generated,
                                         int64_t ngramSize);

/// Whether either guard is on.
inline bool guardsActive(const SearchOptions &options) {
  return options.noRepeatNgramSize > 0 || options.repetitionPenalty != 1.0;
}

} // namespace tfmc::runtime

#endif // RUNTIME_DECODING_REPETITIONGUARDS_H
