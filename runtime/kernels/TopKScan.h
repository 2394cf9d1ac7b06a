//===- TopKScan.h - beam search's candidates over blocks of logits -*- C++ -*-===//
//
// What beam search takes from one hypothesis's row of logits (DESIGN.md):
// the row's log_softmax shift (log Σ exp over every id) and its best
// `capacity` allowed ids, ranked by value (ties: the lower id first). Its
// candidates' scores are then value - shift.
//
// TopKScan keeps both across consecutive blocks of the row, so that an
// output projection fused with the search (tfm.linear_topk) can compute the
// logits a block at a time and never hold the whole row. The shift is
// summed over fixed chunks of kChunk ids: each chunk's own maximum m and
// Σ exp(x - m) (eight partial sums in id order), then the chunks in order
// into a running maximum and sum. Any split of the row into blocks whose
// boundaries are multiples of kChunk gives the same bits, so the fused
// kernel and a search over the whole row agree exactly.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_TOPKSCAN_H
#define RUNTIME_KERNELS_TOPKSCAN_H

#include "runtime/kernels/ArgmaxScan.h"

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

struct TopKCandidate {
  float value; // the logit
  int32_t id;
};

class TopKScan {
public:
  /// Ids per chunk of the shift's sum; block boundaries are multiples.
  static constexpr int64_t kChunk = 256;

  /// Starts a row; keeps at most `capacity` candidates.
  void reset(int64_t capacity);
  /// Scans ids [first, first + count), whose logits are values[0..count).
  /// `first` is a multiple of kChunk, and so is `count` unless the block
  /// ends the row.
  void add(const float *values, int64_t first, int64_t count,
           const ScanExclusions &excluded);
  /// log Σ exp(logit) over every id scanned (allowed or not).
  float shift() const;
  /// The best allowed ids scanned, best first.
  const std::vector<TopKCandidate> &best() const { return items; }
  /// The best `count` as tfm.linear_topk returns them: ids[i] and
  /// values[i] = its logit - shift() (float32), then id -1 and -inf for
  /// the entries no allowed id fills.
  void write(float *values, int32_t *ids, int64_t count) const;

private:
  void offer(float value, int32_t id);
  /// One chunk of n values, whose largest (NaNs ignored) is chunkMax, into
  /// the running maximum and sum.
  void addToShift(const float *chunk, int64_t n, float chunkMax);
  bool wants(float value) const {
    return static_cast<int64_t>(items.size()) < capacity ||
           value > items.back().value;
  }

  int64_t capacity = 0;
  std::vector<TopKCandidate> items;
  /// Whether a NaN was offered (items may then hold one).
  bool withNaN = false;
  float max = 0, sum = 0;
};

namespace detail {
/// The variants of the shift's chunk sums (Σ exp(values[v] - max), eight
/// partial sums in id order), for tests: each gives the same bits; Avx2
/// and Avx512 only where the CPU runs them.
enum class SumExpVariant { Generic, Avx2, Avx512 };
float sumExpWith(SumExpVariant variant, const float *values, int64_t count,
                 float max);
} // namespace detail

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_TOPKSCAN_H
