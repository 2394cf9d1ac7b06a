//===- FusedProjection.cpp - output projections fused with a search -------===//
//
// tfm.linear_argmax (greedy's choice) and tfm.linear_topk (beam's
// candidates and log-probabilities) on the library path: the projection's
// outputs are made as the linear kernels make them, a block of columns at
// a time that stays in cache, and scanned there, so the [rows, vocabulary]
// logits are never written (docs/ir-stages.md). On a StepTeam, the
// members split greedy's columns and merge their choices.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/ArgmaxScan.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/OneDnnLinear.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/ShortlistArgmax.h"
#include "runtime/kernels/StepTeam.h"
#include "runtime/kernels/TeamLinear.h"
#include "runtime/kernels/TopKScan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace tfmc::runtime;
using namespace tfmc::runtime::library;

namespace {

/// Whether a head's operands are laid out as the kernels take them: rows
/// of x contiguous, the weight [n, k] row-major, one bias per output,
/// ascending `never` ids and one allow flag per row.
template <typename Weight>
bool headOperands(const MemRefDescriptor<3> &x, const Weight &w,
                  const MemRefDescriptor<1> &b,
                  const MemRefDescriptor<1, int32_t> &never,
                  const MemRefDescriptor<1, int32_t> &allow) {
  int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
  return OneDnn::contiguous(x) && w.strides[1] == 1 && w.strides[0] == k &&
         w.sizes[1] == k && b.strides[0] == 1 && b.sizes[0] == n &&
         allow.sizes[0] == m &&
         (never.sizes[0] == 0 || never.strides[0] == 1) &&
         (m == 0 || allow.strides[0] == 1);
}

/// ... and, for an int8 weight, one scale per output.
bool int8HeadOperands(const MemRefDescriptor<3> &x,
                      const MemRefDescriptor<2, int8_t> &w,
                      const MemRefDescriptor<1> &wScale,
                      const MemRefDescriptor<1> &b,
                      const MemRefDescriptor<1, int32_t> &never,
                      const MemRefDescriptor<1, int32_t> &allow) {
  return headOperands(x, w, b, never, allow) && wScale.strides[0] == 1 &&
         wScale.sizes[0] == w.sizes[0];
}

/// The ids a head's scans skip: `never`, and eos (each row sets allowEos).
ScanExclusions exclusionsOf(const MemRefDescriptor<1, int32_t> &never,
                            int64_t eos) {
  ScanExclusions excluded;
  excluded.never = never.aligned + never.offset;
  excluded.neverCount = never.sizes[0];
  excluded.eos = eos;
  return excluded;
}

/// One row's greedy choice from the choices of `count` scans of
/// consecutive column shares (share(t), in id order), as one scan over all
/// of them makes it: a later share's choice replaces an earlier one only
/// when strictly greater, and a NaN taken first stays. False where a later
/// share's choice is a NaN it took first: one scan might have chosen
/// another id of that share, so the caller scans alone.
template <typename Share>
bool mergeChoices(int count, Share share, ArgmaxScan &best) {
  best = ArgmaxScan();
  for (int t = 0; t < count; ++t) {
    const ArgmaxScan &s = share(t);
    if (s.best < 0 || (best.best >= 0 && std::isnan(best.value)))
      continue;
    if (best.best >= 0 && std::isnan(s.value))
      return false;
    if (best.best < 0 || s.value > best.value)
      best = s;
  }
  return true;
}

/// Every row's greedy choice over the panels of a head, the columns split
/// between the kernel threads (`threads`, GNU OpenMP) as the packed kernels
/// split them: share(first, end, into) scans panels [first, end) for every
/// row into `into` (m fresh scans), false when it cannot; the shares'
/// choices are merged in id order (mergeChoices). False: the caller scans
/// alone.
template <typename Share>
bool argmaxOverShares(int64_t m, int64_t panels, int threads, Share share,
                      std::vector<ArgmaxScan> &scans) {
  scans.resize(m);
  if (threads <= 1)
    return share(int64_t(0), panels, scans.data());
  struct Job {
    Share *share;
    int64_t m, panels;
    std::vector<std::vector<ArgmaxScan>> shares;
    std::vector<char> ok;
    int used = 0;
  } job{&share, m, panels, {}, {}, 0};
  job.shares.assign(threads, std::vector<ArgmaxScan>(m));
  job.ok.assign(threads, 0);
  GOMP_parallel(
      [](void *data) {
        Job &j = *static_cast<Job *>(data);
        int t = omp_get_thread_num(), count = omp_get_num_threads();
        if (t == 0)
          j.used = count;
        if (t >= static_cast<int>(j.shares.size()))
          return;
        auto [first, end] = packed::panelShare(j.panels, t, count);
        j.ok[t] = (*j.share)(first, end, j.shares[t].data());
      },
      &job, static_cast<unsigned>(threads), 0);
  // The team may be smaller than asked for (inside another parallel
  // region); the shares were cut for the size it had.
  if (job.used < 1 || job.used > threads)
    return false;
  for (int t = 0; t < job.used; ++t)
    if (!job.ok[t])
      return false;
  for (int64_t r = 0; r < m; ++r)
    if (!mergeChoices(
            job.used,
            [&](int t) -> const ArgmaxScan & { return job.shares[t][r]; },
            scans[r]))
      return false;
  return true;
}

/// The outputs OneDnn::linear() or OneDnn::linearF16() would give for x,
/// computed exactly as they compute them, fed to each row's scan (ArgmaxScan or
/// TopKScan: `scans[r].add(values, first, count, exclusions)`, ids in
/// `never` and eos unless allow[r] excluded) a block of columns at a
/// time: where they run the packed kernels (decoder steps), blocks of
/// about 256 KB that stay in cache (whole chunks of TopKScan::kChunk
/// columns), so the [m, n] outputs are never written; otherwise the
/// whole output at once. False (after lib.fail()) when the operands are not
/// laid out as expected.
template <typename Weight, typename RowScan>
bool scanOutputs(OneDnn &lib, const char *kernel, const MemRefDescriptor<3> &x,
                 const Weight &w, const MemRefDescriptor<1> &b, bool brain,
                 const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                 const MemRefDescriptor<1, int32_t> &allow,
                 std::vector<RowScan> &scans) {
  constexpr bool half = sizeof(*w.aligned) == 2;
  int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
  if (!headOperands(x, w, b, never, allow) ||
      static_cast<int64_t>(scans.size()) != m) {
    lib.fail(std::string(kernel) + ": unexpected operand layout");
    return false;
  }
  if (m == 0)
    return true;
  ScanExclusions excluded = exclusionsOf(never, eos);
  const int32_t *allowed = allow.aligned + allow.offset;
  auto scan = [&](const float *values, int64_t ld, int64_t first,
                  int64_t count) {
    for (int64_t r = 0; r < m; ++r) {
      excluded.allowEos = allowed[r] != 0;
      scans[r].add(values + r * ld, first, count, excluded);
    }
  };
  const float *bias = b.aligned + b.offset;
  thread_local std::vector<float> block;
  if (OneDnn::usePacked(m)) {
    const packed::PackedWeight &pw =
        lib.panels(w.aligned + w.offset, n, k,
                   !half   ? OneDnn::PanelType::F32
                   : brain ? OneDnn::PanelType::BF16
                           : OneDnn::PanelType::F16,
                   m);
    // Blocks of whole chunks (and so of whole panel pairs), m x width
    // floats of about 256 KB.
    static_assert(TopKScan::kChunk % (2 * packed::kPanel) == 0);
    int64_t width =
        std::clamp<int64_t>((int64_t(1) << 16) / m, TopKScan::kChunk, 8192);
    width -= width % TopKScan::kChunk;
    int64_t blockPanels = width / packed::kPanel;
    if (block.size() < static_cast<size_t>(m * width))
      block.resize(m * width);
    int threads = OneDnn::packedThreads(m, n, k);
    for (int64_t p = 0; p < packed::panelCount(n); p += blockPanels) {
      int64_t end = std::min(packed::panelCount(n), p + blockPanels);
      packed::linearColumns(x.aligned + x.offset, m, pw, bias, block.data(),
                            width, p, end,
                            static_cast<int32_t>(KernelActivation::None),
                            packed::preferredIsa(), threads);
      int64_t first = p * packed::kPanel;
      scan(block.data(), width, first,
           std::min(n, end * packed::kPanel) - first);
    }
  } else {
    if (block.size() < static_cast<size_t>(m * n))
      block.resize(m * n);
    MemRefDescriptor<3> y{
        block.data(), block.data(), 0, {1, m, n}, {m * n, n, 1}};
    if constexpr (half)
      lib.linearF16(x, w, b, y, static_cast<int32_t>(KernelActivation::None),
                    brain, /*shareable=*/false);
    else
      lib.linear(x, w, b, y, static_cast<int32_t>(KernelActivation::None),
                 /*packable=*/true, /*shareable=*/false);
    scan(block.data(), n, 0, n);
  }
  return true;
}

/// The prepared weight when greedy's projection takes the int8 shortlist
/// (ShortlistArgmax.h) for m rows: the packed kernels' rows, a projection
/// where it pays (shortlistPays; TFMC_GREEDY_SHORTLIST=always: any), a
/// weight without NaNs or infinities; null: the full scan.
template <typename Weight>
const ShortlistWeight *shortlistFor(OneDnn &lib, const Weight &w,
                                    const MemRefDescriptor<1> &b, bool brain,
                                    int64_t m) {
  constexpr bool half = sizeof(*w.aligned) == 2;
  int64_t n = w.sizes[0], k = w.sizes[1];
  OneDnn::PanelType type = !half   ? OneDnn::PanelType::F32
                           : brain ? OneDnn::PanelType::BF16
                                   : OneDnn::PanelType::F16;
  ShortlistPolicy policy = shortlistPolicy();
  if (policy == ShortlistPolicy::Never || !OneDnn::usePacked(m) ||
      (policy == ShortlistPolicy::Auto &&
       !shortlistPays(OneDnn::panelFormat(type), packed::bfloat16Tiles())))
    return nullptr;
  return lib.shortlist(w.aligned + w.offset, b.aligned + b.offset, n, k, type);
}

/// Each row's greedy choice through the shortlist, the columns split
/// between the kernel threads as the packed kernels split them. False: the
/// caller scans the full outputs.
bool shortlistScan(const ShortlistWeight &sw, const float *x, int64_t m,
                   const ScanExclusions &excluded, const int32_t *allowEos,
                   std::vector<ArgmaxScan> &scans) {
  return argmaxOverShares(
      m, packed::panelCount(sw.n), OneDnn::packedThreads(m, sw.n, sw.k),
      [&](int64_t first, int64_t end, ArgmaxScan *into) {
        return shortlistArgmax(sw, x, m, first, end, excluded, allowEos, into);
      },
      scans);
}

/// Publishes this member's choices over its share of the columns for every
/// member's rows (`partial`) and merges its own m rows' choices from all
/// shares, in id order. False: the caller scans alone.
bool publishArgmax(TeamMeeting &meeting, std::vector<ArgmaxScan> &partial,
                   int64_t m, const MemRefDescriptor<1, int32_t> &out) {
  if (!meeting.team->publish(partial.data()))
    return false;
  int32_t *tokens = out.aligned + out.offset;
  for (int64_t r = 0; r < m; ++r) {
    ArgmaxScan best;
    if (!mergeChoices(
            meeting.members,
            [&](int p) -> const ArgmaxScan & {
              return static_cast<const ArgmaxScan *>(
                  meeting.offers[p].result)[meeting.firstRow + r];
            },
            best))
      return false;
    tokens[r] = best.choice();
  }
  return true;
}

/// tfm.linear_argmax with the other members of a StepTeam (withTeam):
/// each member scans its share of the columns for every member's rows,
/// and each row's choice is merged from the shares in id order. Exact:
/// a later share's choice replaces an earlier one's only when strictly
/// greater, as in one scan; where a share's choice is a NaN taken first
/// the merge cannot tell what one scan would have done, and the member
/// scans its own rows again alone. False: the caller scans alone.
template <typename Weight>
bool teamArgmax(OneDnn &lib, const MemRefDescriptor<3> &x, const Weight &w,
                const MemRefDescriptor<1> &b, bool brain,
                const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                const MemRefDescriptor<1, int32_t> &allow,
                const MemRefDescriptor<1, int32_t> &out) {
  constexpr bool half = sizeof(*w.aligned) == 2;
  int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
  // Layouts scanOutputs would refuse are left to it (alone).
  if (!inTeam() || m == 0 || !headOperands(x, w, b, never, allow))
    return false;
  TeamOffer mine;
  mine.layer = w.aligned + w.offset;
  mine.bias = b.aligned + b.offset;
  // Greedy's projection: never an ordinary layer's meeting.
  mine.detail = -1;
  mine.rows = m;
  mine.input = x.aligned + x.offset;
  mine.extra = allow.aligned + allow.offset;
  TeamMeeting meeting;
  if (!meetTeam(mine, meeting))
    return false;
  int64_t total = meeting.totalRows;
  thread_local std::vector<float> gathered, block;
  thread_local std::vector<int32_t> allowed;
  thread_local std::vector<ArgmaxScan> partial;
  meeting.gather(&TeamOffer::input, k, gathered);
  meeting.gather(&TeamOffer::extra, 1, allowed);
  partial.assign(total, ArgmaxScan());
  auto [first, end] = packed::panelShare(packed::panelCount(n), meeting.member,
                                         meeting.members);
  ScanExclusions excluded = exclusionsOf(never, eos);
  if (const ShortlistWeight *sw = shortlistFor(lib, w, b, brain, total))
    if (shortlistArgmax(*sw, gathered.data(), total, first, end, excluded,
                        allowed.data(), partial.data()))
      return publishArgmax(meeting, partial, m, out);
  partial.assign(total, ArgmaxScan());
  const packed::PackedWeight &pw = lib.panels(w.aligned + w.offset, n, k,
                                              !half   ? OneDnn::PanelType::F32
                                              : brain ? OneDnn::PanelType::BF16
                                                      : OneDnn::PanelType::F16,
                                              total);
  // Blocks of whole panel pairs, about 256 KB of outputs.
  int64_t width =
      std::clamp<int64_t>((int64_t(1) << 16) / total, 2 * packed::kPanel, 8192);
  width -= width % (2 * packed::kPanel);
  int64_t blockPanels = width / packed::kPanel;
  if (block.size() < static_cast<size_t>(total * width))
    block.resize(total * width);
  for (int64_t p = first; p < end; p += blockPanels) {
    int64_t stop = std::min(end, p + blockPanels);
    packed::linearColumns(gathered.data(), total, pw, b.aligned + b.offset,
                          block.data(), width, p, stop,
                          static_cast<int32_t>(KernelActivation::None),
                          packed::preferredIsa());
    int64_t col = p * packed::kPanel,
            count = std::min(n, stop * packed::kPanel) - col;
    for (int64_t r = 0; r < total; ++r) {
      excluded.allowEos = allowed[r] != 0;
      partial[r].add(block.data() + r * width, col, count, excluded);
    }
  }
  return publishArgmax(meeting, partial, m, out);
}

/// linearArgmax()'s choices through the int8 shortlist, where it applies
/// (shortlistFor) and the operands are laid out as scanOutputs expects.
/// False: scanOutputs() scans the full outputs (and reports a layout).
template <typename Weight>
bool shortlistArgmaxAlone(OneDnn &lib, const MemRefDescriptor<3> &x,
                          const Weight &w, const MemRefDescriptor<1> &b,
                          bool brain, const MemRefDescriptor<1, int32_t> &never,
                          int64_t eos,
                          const MemRefDescriptor<1, int32_t> &allow,
                          std::vector<ArgmaxScan> &scans) {
  int64_t m = x.sizes[0] * x.sizes[1];
  if (m == 0 || !headOperands(x, w, b, never, allow))
    return false;
  const ShortlistWeight *sw = shortlistFor(lib, w, b, brain, m);
  if (!sw)
    return false;
  return shortlistScan(*sw, x.aligned + x.offset, m, exclusionsOf(never, eos),
                       allow.aligned + allow.offset, scans);
}

/// tfm.linear_argmax: each row's greedy choice (ArgmaxScan.h) among the
/// outputs OneDnn::linear() or OneDnn::linearF16() would give (scanOutputs).
template <typename Weight>
void linearArgmax(OneDnn &lib, const MemRefDescriptor<3> &x, const Weight &w,
                  const MemRefDescriptor<1> &b,
                  const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                  const MemRefDescriptor<1, int32_t> &allow,
                  const MemRefDescriptor<1, int32_t> &out, bool brain = false) {
  int64_t m = x.sizes[0] * x.sizes[1];
  if (out.sizes[0] != m || (m > 0 && out.strides[0] != 1)) {
    lib.fail("tfm_rt_linear_argmax: unexpected operand layout");
    return;
  }
  if (teamArgmax(lib, x, w, b, brain, never, eos, allow, out))
    return;
  thread_local std::vector<ArgmaxScan> scans;
  if (!shortlistArgmaxAlone(lib, x, w, b, brain, never, eos, allow, scans)) {
    // The full scan, from fresh scans (a shortlist that gave up may have
    // left some).
    scans.assign(m, ArgmaxScan());
    if (!scanOutputs(lib, "tfm_rt_linear_argmax", x, w, b, brain, never, eos,
                     allow, scans))
      return;
  }
  int32_t *tokens = out.aligned + out.offset;
  for (int64_t r = 0; r < m; ++r)
    tokens[r] = scans[r].choice();
}

/// The outputs OneDnn::linearI8() gives for x (no activation), made as it
/// makes them on its packed path — the rows quantized once, then per block
/// of columns the int8 products and their dequantization (Int8Rows.h) —
/// and handed to a scan a block at a time, so they are never all written.
/// usable() is false where linearI8 would not take its packed path: the
/// caller then scans whole() outputs.
class Int8Outputs {
public:
  Int8Outputs(OneDnn &lib, const MemRefDescriptor<3> &x,
              const MemRefDescriptor<2, int8_t> &w,
              const MemRefDescriptor<1> &wScale, const MemRefDescriptor<1> &b)
      : lib(lib), x(x), w(w), wScale(wScale), b(b),
        m(x.sizes[0] * x.sizes[1]), k(x.sizes[2]), n(w.sizes[0]) {}

  bool usable() const {
    return OneDnn::usePacked(m) && __builtin_cpu_supports("avx2");
  }

  /// With usable(): quantizes the rows; before blocks().
  void prepare() {
    pw = &lib.panels(w.aligned + w.offset, n, k, OneDnn::PanelType::I8, m);
    xq.resize(m * pw->kPadded);
    rowScales.resize(m);
    const float *in = x.aligned + x.offset;
    for (int64_t r = 0; r < m; ++r)
      rowScales[r] = quantizeRowU8(in + r * k, k, xq.data() + r * pw->kPadded);
  }

  /// The outputs of panels [first, end) in blocks of whole `unit` columns
  /// (a multiple of a panel pair), about 256 KB of products each:
  /// scan(r, values, firstColumn, count) for every row of every block.
  template <typename Scan>
  void blocks(int64_t first, int64_t end, int64_t unit, Scan scan) const {
    int64_t width = std::clamp<int64_t>((int64_t(1) << 16) / m, unit, 8192);
    width -= width % unit;
    const int64_t blockPanels = width / packed::kPanel;
    thread_local std::vector<int32_t> acc;
    thread_local std::vector<float> values;
    acc.resize(m * width);
    values.resize(width);
    const float *scales = wScale.aligned + wScale.offset;
    const float *bias = b.aligned + b.offset;
    for (int64_t p = first; p < end; p += blockPanels) {
      int64_t stop = std::min(end, p + blockPanels);
      packed::int8ProductsBlock(xq.data(), m, *pw, acc.data(), width, p, stop);
      int64_t c0 = p * packed::kPanel,
              count = std::min(n, stop * packed::kPanel) - c0;
      for (int64_t r = 0; r < m; ++r) {
        dequantizeRow(acc.data() + r * width, pw->rowSums.data() + c0,
                      kActivationLevels + 1, rowScales[r], scales + c0,
                      bias + c0, values.data(), count, /*relu=*/false);
        scan(r, values.data(), c0, count);
      }
    }
  }

  /// linearI8's whole [m, n] outputs, for the paths usable() leaves out.
  const float *whole() {
    wholeOutputs.resize(m * n);
    MemRefDescriptor<3> y{wholeOutputs.data(),
                          wholeOutputs.data(),
                          0,
                          {1, m, n},
                          {m * n, n, 1}};
    lib.linearI8(x, w, wScale, b, y,
                 static_cast<int32_t>(KernelActivation::None));
    return wholeOutputs.data();
  }

private:
  OneDnn &lib;
  const MemRefDescriptor<3> &x;
  const MemRefDescriptor<2, int8_t> &w;
  const MemRefDescriptor<1> &wScale, &b;
  int64_t m, k, n;
  const packed::PackedWeight *pw = nullptr;
  std::vector<uint8_t> xq;
  std::vector<float> rowScales, wholeOutputs;
};

/// tfm.linear_argmax over an int8 weight (with its per-row scales): each
/// row's choice among the outputs OneDnn::linearI8() would give
/// (Int8Outputs), the columns split between the kernel threads as
/// linearI8 splits them, their choices merged in id order.
void linearArgmaxI8(OneDnn &lib, const MemRefDescriptor<3> &x,
                    const MemRefDescriptor<2, int8_t> &w,
                    const MemRefDescriptor<1> &wScale,
                    const MemRefDescriptor<1> &b,
                    const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                    const MemRefDescriptor<1, int32_t> &allow,
                    const MemRefDescriptor<1, int32_t> &out) {
  int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
  if (!int8HeadOperands(x, w, wScale, b, never, allow) || out.sizes[0] != m ||
      (m > 0 && out.strides[0] != 1)) {
    lib.fail("tfm_rt_linear_argmax_i8: unexpected operand layout");
    return;
  }
  if (m == 0)
    return;
  const ScanExclusions excluded = exclusionsOf(never, eos);
  const int32_t *allowed = allow.aligned + allow.offset;
  int32_t *tokens = out.aligned + out.offset;
  Int8Outputs outputs(lib, x, w, wScale, b);
  auto scanWhole = [&] {
    const float *values = outputs.whole();
    for (int64_t r = 0; r < m; ++r) {
      ArgmaxScan scan;
      ScanExclusions e = excluded;
      e.allowEos = allowed[r] != 0;
      scan.add(values + r * n, 0, n, e);
      tokens[r] = scan.choice();
    }
  };
  if (!outputs.usable()) {
    scanWhole();
    return;
  }
  outputs.prepare();
  thread_local std::vector<ArgmaxScan> scans;
  bool merged = argmaxOverShares(
      m, packed::panelCount(n), OneDnn::packedThreads(m, n, k),
      [&](int64_t first, int64_t end, ArgmaxScan *into) {
        ScanExclusions e = excluded;
        std::fill(into, into + m, ArgmaxScan());
        outputs.blocks(
            first, end, 2 * packed::kPanel,
            [&](int64_t r, const float *values, int64_t c0, int64_t count) {
              e.allowEos = allowed[r] != 0;
              into[r].add(values, c0, count, e);
            });
        return true;
      },
      scans);
  if (!merged) {
    scanWhole();
    return;
  }
  for (int64_t r = 0; r < m; ++r)
    tokens[r] = scans[r].choice();
}

/// tfm.linear_topk over an int8 weight (with its per-row scales): each
/// row's candidates (TopKScan.h) among the outputs OneDnn::linearI8() would
/// give (Int8Outputs), in blocks of whole TopKScan chunks so the
/// log_softmax sum has the bits of a scan over the whole row.
void linearTopkI8(OneDnn &lib, const MemRefDescriptor<3> &x,
                  const MemRefDescriptor<2, int8_t> &w,
                  const MemRefDescriptor<1> &wScale,
                  const MemRefDescriptor<1> &b,
                  const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                  const MemRefDescriptor<1, int32_t> &allow,
                  const MemRefDescriptor<2> &values,
                  const MemRefDescriptor<2, int32_t> &ids) {
  int64_t m = x.sizes[0] * x.sizes[1], n = w.sizes[0], count = values.sizes[1];
  if (!int8HeadOperands(x, w, wScale, b, never, allow) ||
      values.sizes[0] != m || ids.sizes[0] != m || ids.sizes[1] != count ||
      (m > 0 && (values.strides[1] != 1 || ids.strides[1] != 1))) {
    lib.fail("tfm_rt_linear_topk_i8: unexpected operand layout");
    return;
  }
  if (m == 0)
    return;
  ScanExclusions excluded = exclusionsOf(never, eos);
  const int32_t *allowed = allow.aligned + allow.offset;
  thread_local std::vector<TopKScan> scans;
  scans.resize(m);
  for (TopKScan &scan : scans)
    scan.reset(count);
  auto scan = [&](int64_t r, const float *row, int64_t c0, int64_t cols) {
    excluded.allowEos = allowed[r] != 0;
    scans[r].add(row, c0, cols, excluded);
  };
  Int8Outputs outputs(lib, x, w, wScale, b);
  if (outputs.usable()) {
    outputs.prepare();
    static_assert(TopKScan::kChunk % (2 * packed::kPanel) == 0);
    outputs.blocks(0, packed::panelCount(n), TopKScan::kChunk, scan);
  } else {
    const float *whole = outputs.whole();
    for (int64_t r = 0; r < m; ++r)
      scan(r, whole + r * n, 0, n);
  }
  for (int64_t r = 0; r < m; ++r)
    scans[r].write(values.aligned + values.offset + r * values.strides[0],
                   ids.aligned + ids.offset + r * ids.strides[0], count);
}

/// tfm.linear_topk: each row's best `candidates` allowed ids and their
/// log-probabilities (TopKScan.h) among the outputs OneDnn::linear() or
/// OneDnn::linearF16() would give (scanOutputs).
template <typename Weight>
void linearTopk(OneDnn &lib, const MemRefDescriptor<3> &x, const Weight &w,
                const MemRefDescriptor<1> &b,
                const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                const MemRefDescriptor<1, int32_t> &allow,
                const MemRefDescriptor<2> &values,
                const MemRefDescriptor<2, int32_t> &ids, bool brain = false) {
  int64_t m = x.sizes[0] * x.sizes[1], count = values.sizes[1];
  if (values.sizes[0] != m || ids.sizes[0] != m || ids.sizes[1] != count ||
      (m > 0 && (values.strides[1] != 1 || ids.strides[1] != 1))) {
    lib.fail("tfm_rt_linear_topk: unexpected operand layout");
    return;
  }
  thread_local std::vector<TopKScan> scans;
  scans.resize(m);
  for (TopKScan &scan : scans)
    scan.reset(count);
  if (!scanOutputs(lib, "tfm_rt_linear_topk", x, w, b, brain, never, eos, allow,
                   scans))
    return;
  for (int64_t r = 0; r < m; ++r)
    scans[r].write(values.aligned + values.offset + r * values.strides[0],
                   ids.aligned + ids.offset + r * ids.strides[0], count);
}

} // namespace

extern "C" void _mlir_ciface_tfm_rt_linear_argmax(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  linearArgmax(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *out);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  linearArgmax(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *out);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  linearArgmax(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *out,
               /*brain=*/true);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax_i8(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, int8_t> *w,
    MemRefDescriptor<1> *scale, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  linearArgmaxI8(OneDnn::get(), *x, *w, *scale, *b, *never, eos, *allow, *out);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk_i8(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, int8_t> *w,
    MemRefDescriptor<1> *scale, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  linearTopkI8(OneDnn::get(), *x, *w, *scale, *b, *never, eos, *allow,
               *values, *ids);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  linearTopk(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *values, *ids);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  linearTopk(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *values, *ids);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  linearTopk(OneDnn::get(), *x, *w, *b, *never, eos, *allow, *values, *ids,
             /*brain=*/true);
}
