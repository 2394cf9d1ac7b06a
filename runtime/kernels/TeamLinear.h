//===- TeamLinear.h - a packed layer shared by a StepTeam -------*- C++ -*-===//
//
// Internal to runtime/kernels: how the library kernels compute a layer
// with the other members of the calling thread's StepTeam (StepTeam.h).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_TEAMLINEAR_H
#define RUNTIME_KERNELS_TEAMLINEAR_H

#include "runtime/kernels/OneDnnLinear.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/StepTeam.h"

#include <cstring>
#include <vector>

namespace tfmc::runtime::library {

/// Whether the calling thread runs a decoder step in a StepTeam (and the
/// packed kernels, which teams share, run here).
inline bool inTeam() {
  int member;
  return StepTeam::current(member) && packed::availableOnThisCpu();
}

/// Makes `v` hold at least `size` elements. A thread's scratch serves
/// layers of every width in turn: resizing it to each (smaller, then
/// larger again) zero-filled the regrown tail at every meeting, 1.5% of a
/// two-thread bfloat16 batch-16 run's samples.
template <typename T> void growTo(std::vector<T> &v, int64_t size) {
  if (static_cast<int64_t>(v.size()) < size)
    v.resize(size);
}

/// A meeting of the calling thread's StepTeam at one layer: every
/// member's offer, this member's place, and where its rows start among
/// all of them.
struct TeamMeeting {
  StepTeam *team = nullptr;
  const TeamOffer *offers = nullptr;
  int member = 0, members = 0;
  int64_t totalRows = 0, firstRow = 0;

  /// Copies every member's `field` (rows of `width` T each) into the
  /// start of `into`, in member order (`into` only grows: see
  /// growTo()).
  template <typename T>
  void gather(const void *TeamOffer::*field, int64_t width,
              std::vector<T> &into) const {
    growTo(into, totalRows * width);
    int64_t at = 0;
    for (int p = 0; p < members; ++p) {
      std::memcpy(into.data() + at * width, offers[p].*field,
                  offers[p].rows * width * sizeof(T));
      at += offers[p].rows;
    }
  }
};

/// Offers `mine` to the calling thread's team; false (the caller computes
/// alone) without a team, when the members are not at the same layer or
/// have more rows together than the packed kernels take (every member
/// sees the same offers: they all decline together).
inline bool meetTeam(const TeamOffer &mine, TeamMeeting &meeting) {
  meeting.team = StepTeam::current(meeting.member);
  if (!meeting.team || !meeting.team->meet(mine, meeting.offers))
    return false;
  meeting.members = meeting.team->size();
  meeting.totalRows = 0;
  for (int p = 0; p < meeting.members; ++p) {
    if (p == meeting.member)
      meeting.firstRow = meeting.totalRows;
    meeting.totalRows += meeting.offers[p].rows;
  }
  return meeting.totalRows <= OneDnn::kPackedMaxRows;
}

/// A packed layer computed with the other members of the calling
/// thread's StepTeam, when they are at the same layer (`layer`, `bias`
/// and `detail` equal): every member's
/// rows (`ldx` inputs apart) are gathered, this member computes its
/// share of the panels for all of them, `columns(rows, total, out,
/// firstPanel, endPanel)` writing outputs (r, c) to out[r · n + c], and
/// copies its own rows of every member's share to y ([m, n]). False
/// (nothing written): the caller computes its rows alone.
template <typename In, typename Out, typename Columns>
bool withTeam(const void *layer, const void *bias, int64_t detail, const In *x,
              int64_t m, int64_t ldx, Out *y, int64_t n, Columns columns) {
  TeamOffer mine;
  mine.layer = layer;
  mine.bias = bias;
  mine.detail = detail;
  mine.rows = m;
  mine.input = x;
  TeamMeeting meeting;
  if (!meetTeam(mine, meeting))
    return false;
  thread_local std::vector<In> gathered;
  thread_local std::vector<Out> results;
  meeting.gather(&TeamOffer::input, ldx, gathered);
  growTo(results, meeting.totalRows * n);
  int64_t panelsOfN = packed::panelCount(n);
  auto [first, end] =
      packed::panelShare(panelsOfN, meeting.member, meeting.members);
  if (first < end)
    columns(gathered.data(), meeting.totalRows, results.data(), first, end);
  if (!meeting.team->publish(results.data()))
    return false;
  for (int p = 0; p < meeting.members; ++p) {
    auto [f, e] = packed::panelShare(panelsOfN, p, meeting.members);
    if (f >= e)
      continue;
    int64_t col = f * packed::kPanel,
            width = std::min(n, e * packed::kPanel) - col;
    const Out *share = static_cast<const Out *>(meeting.offers[p].result);
    for (int64_t r = 0; r < m; ++r)
      std::memcpy(y + r * n + col, share + (meeting.firstRow + r) * n + col,
                  width * sizeof(Out));
  }
  return true;
}

} // namespace tfmc::runtime::library

#endif // RUNTIME_KERNELS_TEAMLINEAR_H
