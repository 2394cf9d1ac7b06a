//===- ArgmaxScan.h - greedy's choice over blocks of logits -----*- C++ -*-===//
//
// The token greedy search picks from one row of logits (DESIGN.md): the ids
// are scanned in order, skipping those never chosen and eos while it is not
// allowed; the first allowed id is taken, and a later one replaces it only
// when its value is strictly greater (ties keep the lower id; a NaN never
// replaces, and a NaN taken first stays; a choice whose value is NaN or
// infinite is then handed over as kNotFiniteChoice). ArgmaxScan keeps that
// scan's state across consecutive blocks of a row, so a fused output
// projection (tfm.linear_argmax) can compute the logits a block at a time
// and never hold the whole row.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_ARGMAXSCAN_H
#define RUNTIME_KERNELS_ARGMAXSCAN_H

#include "runtime/kernels/KernelAbi.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace tfmc::runtime {

/// The ids a scan skips: `never` (ascending, `neverCount` of them) and
/// `banned` (a repetition guard's, `bannedCount`) always, `eos` unless
/// `allowEos`.
struct ScanExclusions {
  const int32_t *never = nullptr;
  int64_t neverCount = 0;
  int64_t eos = -1;
  bool allowEos = true;
  const int32_t *banned = nullptr;
  int64_t bannedCount = 0;

  bool excludes(int64_t id) const {
    if (id == eos && !allowEos)
      return true;
    for (int64_t i = 0; i < neverCount; ++i)
      if (never[i] == id)
        return true;
    for (int64_t i = 0; i < bannedCount; ++i)
      if (banned[i] == id)
        return true;
    return false;
  }
  /// Whether an id in [first, end) is excluded.
  bool excludesAnyIn(int64_t first, int64_t end) const;
  /// The excluded ids in [first, end), increasing, each once, into `ids`.
  void excludedIn(int64_t first, int64_t end, std::vector<int64_t> &ids) const;
};

struct ArgmaxScan {
  /// The chosen id so far (-1: none allowed yet) and its value.
  int32_t best = -1;
  float value = 0;

  /// Scans ids [first, first + count), whose values are `values[0..count)`.
  void add(const float *values, int64_t first, int64_t count,
           const ScanExclusions &excluded);

  /// What the finished scan hands greedy search: `best` (-1 when nothing
  /// was allowed), or kNotFiniteChoice when the chosen value is NaN or
  /// infinite.
  int32_t choice() const {
    return best >= 0 && !std::isfinite(value) ? kNotFiniteChoice : best;
  }
};

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_ARGMAXSCAN_H
