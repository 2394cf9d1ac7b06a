//===- IncrementalDecoder.h - what a search strategy drives -----*- C++ -*-===//
#ifndef RUNTIME_DECODING_INCREMENTALDECODER_H
#define RUNTIME_DECODING_INCREMENTALDECODER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tfmc::runtime {

/// A batch being decoded one token at a time. Slots 0..activeSlots()-1 hold
/// the hypotheses still being extended; each has its own KV cache.
class IncrementalDecoder {
public:
  virtual ~IncrementalDecoder() = default;
  virtual int64_t vocabSize() const = 0;
  virtual int64_t activeSlots() const = 0;
  /// Feeds one token per active slot at the next position; returns the
  /// logits [activeSlots, vocabSize], valid until the next call.
  virtual const float *step(llvm::ArrayRef<int32_t> tokens) = 0;
  /// Rebuilds the active set: new slot i continues old slot sources[i].
  /// Sources may repeat (beam search) and the set may shrink.
  virtual void reorder(llvm::ArrayRef<int64_t> sources) = 0;
  /// Feeds one token per active slot, as step() does, and returns each
  /// slot's greedy choice from the step's logits (bestToken() with no
  /// banned ids; eos only where allowEos[i] is non-zero) without making
  /// the logits, valid until the next call; nullptr when this decoder
  /// cannot (then step() is the way).
  virtual const int32_t *greedyStep(llvm::ArrayRef<int32_t> tokens,
                                    llvm::ArrayRef<int32_t> allowEos) {
    (void)tokens;
    (void)allowEos;
    return nullptr;
  }
  /// Whether greedyStep() works here.
  virtual bool hasGreedyStep() const { return false; }
  /// The best candidates of each active slot's step, as beam search takes
  /// them from the logits: slot i's `count` best allowed ids (no banned
  /// ids; eos only where allowEos[i] is non-zero; ties to the lower id) at
  /// ids[i * count ..], best first, and their log_softmax values at
  /// values[i * count ..] (the bits TopKScan computes over the logits;
  /// id -1 past the allowed ones).
  struct Candidates {
    const float *values = nullptr;
    const int32_t *ids = nullptr;
  };
  /// Feeds one token per active slot, as step() does, and returns the
  /// slots' candidates without making the logits, valid until the next
  /// call; {} when this decoder cannot (then step() is the way).
  virtual Candidates beamStep(llvm::ArrayRef<int32_t> tokens,
                              llvm::ArrayRef<int32_t> allowEos,
                              int64_t count) {
    (void)tokens;
    (void)allowEos;
    (void)count;
    return {};
  }
  /// Whether beamStep() works here.
  virtual bool hasBeamStep() const { return false; }
  /// A failure of a step (a kernel error), reported once the search ends;
  /// the search itself always terminates.
  virtual llvm::Error takeError() { return llvm::Error::success(); }
  /// Source tokens of batch row `row` (its ids after truncation, plus eos):
  /// what the length limit is relative to.
  virtual int64_t sourceTokens(int64_t row) const = 0;
};

struct SpecialIds {
  int32_t pad = 0, bos = 1, eos = 2, unk = 3;
  /// The first token of every target row (model.json's decoder_start).
  int32_t start = 1;
  /// Ids a search never chooses, ascending (model.json's never_generate).
  std::vector<int32_t> never = {0, 1};

  /// DESIGN.md's layout: rows start with bos; pad and bos are never chosen.
  static SpecialIds classic(int32_t pad, int32_t bos, int32_t eos,
                            int32_t unk) {
    SpecialIds s;
    s.pad = pad, s.bos = bos, s.eos = eos, s.unk = unk, s.start = bos;
    s.never = {std::min(pad, bos), std::max(pad, bos)};
    return s;
  }
  bool neverChosen(int64_t id) const {
    for (int32_t n : never)
      if (n == id)
        return true;
    return false;
  }
};

struct SearchOptions {
  /// The most tokens a row generates, eos included...
  int64_t maxLength = 256;
  /// ...and at most ceil(maxLengthFactor * source tokens incl. eos) +
  /// maxLengthOffset of them; a factor of 0 turns that limit off. (The CLI
  /// defaults are 3 and 10; the library's factor defaults to off.)
  double maxLengthFactor = 0;
  int64_t maxLengthOffset = 10;
  int64_t minLength = 0;
  int64_t beamSize = 1;
  double lengthPenalty = 1.0;
  int64_t nBest = 1;
  /// A token that would complete an n-gram of this size already in the
  /// hypothesis is forbidden (0: off).
  int64_t noRepeatNgramSize = 0;
  /// Logits of tokens already generated are divided by this when positive,
  /// multiplied when negative (1: off).
  double repetitionPenalty = 1.0;
  /// Steps that end in the search's choices (greedyStep(), beamStep())
  /// where the decoder has them and no repetition guard is on; false:
  /// always step()'s logits. Both give the same results bit for bit (the
  /// tests compare them); the fused steps never write the logits.
  bool fusedSteps = true;
};

/// The most tokens a row whose source has `sourceTokens` tokens (eos
/// included) may generate: min(maxLength, ceil(factor * sourceTokens) +
/// offset), or maxLength when the factor is 0.
int64_t rowLengthLimit(const SearchOptions &options, int64_t sourceTokens);

} // namespace tfmc::runtime

#endif // RUNTIME_DECODING_INCREMENTALDECODER_H
