//===- GreedySearch.h - greedy decoding -------------------------*- C++ -*-===//
#ifndef RUNTIME_DECODING_GREEDYSEARCH_H
#define RUNTIME_DECODING_GREEDYSEARCH_H

#include "runtime/decoding/BeamSearch.h"
#include "runtime/decoding/IncrementalDecoder.h"

#include <vector>

namespace tfmc::runtime {

/// Decodes every slot of `decoder` (slot i = batch row i) greedily: the
/// argmax of each step's logits over all tokens but pad and bos (and eos
/// while fewer than minLength tokens are out), lowest id on ties. A row
/// stops at eos, after its length limit (rowLengthLimit; eos included), or
/// where the logit it chose is NaN or infinite (the model's arithmetic
/// overflowed float32); finished rows are dropped from the batch. With
/// repetition guards the logits are penalised and repeated n-grams barred
/// before the argmax. Each row's hypothesis has its tokens (without bos
/// and eos) and score 0 (greedy computes none), or NaN for a row cut short
/// at a logit that is not finite.
std::vector<Hypothesis> greedySearch(IncrementalDecoder &decoder,
                                     const SearchOptions &options,
                                     const SpecialIds &special);

/// The best allowed token of one row of logits (shared with beam search
/// tests): skips pad and bos, and eos when `allowEos` is false.
/// The argmax over the allowed tokens (not pad, bos, eos unless allowEos,
/// nor any of `banned`, which is sorted); ties go to the lowest id. -1 when
/// nothing is allowed.
int32_t bestToken(const float *logits, int64_t vocab, const SpecialIds &special,
                  bool allowEos, llvm::ArrayRef<int32_t> banned = {});

} // namespace tfmc::runtime

#endif // RUNTIME_DECODING_GREEDYSEARCH_H
