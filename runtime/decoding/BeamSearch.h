//===- BeamSearch.h - beam search with length normalisation -----*- C++ -*-===//
#ifndef RUNTIME_DECODING_BEAMSEARCH_H
#define RUNTIME_DECODING_BEAMSEARCH_H

#include "runtime/decoding/IncrementalDecoder.h"

#include <vector>

namespace tfmc::runtime {

struct Hypothesis {
  std::vector<int32_t> ids; // without bos/eos
  double score = 0;         // normalised: sum of log-probs / L^alpha
};

/// Beam search over every slot of `decoder` (slot i = batch row i) as
/// DESIGN.md specifies: each active hypothesis extends with log_softmax of
/// its logits (pad, bos barred; eos barred before minLength); candidates
/// ranked by total score (ties: lower hypothesis, then lower token); of the
/// first 2K, an eos ranked below K finishes with score / L^alpha (L counts
/// eos), other eos are dropped, the rest fill the next K actives. A row ends
/// with K finished hypotheses or at its length limit (rowLengthLimit;
/// remaining actives finish with L = that limit). Repetition guards
/// penalise logits before the log_softmax and drop barred tokens. Returns each
/// row's n-best, best first (ties: the earlier finished first), at most K.
std::vector<std::vector<Hypothesis>> beamSearch(IncrementalDecoder &decoder,
                                                const SearchOptions &options,
                                                const SpecialIds &special);

} // namespace tfmc::runtime

#endif // RUNTIME_DECODING_BEAMSEARCH_H
