//===- PackedGemm.cpp - small-M linear layers on pre-packed weights -------===//
//
// The entry points of PackedGemm.h: each call's rows planned into tiles
// (RowTiles.h), its panels shared among the kernel threads, each share run
// by the kernels of the instruction set chosen (AVX2, AVX-512 or AMX:
// PackedGemmIsa.h), then the activation. Packing is in PanelPacking.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/PackedGemmIsa.h"

#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

/// y = act(y) in place, as KernelActivation. ReLU keeps a NaN (as
/// torch.relu does): vmaxps returns its second operand when either is NaN.
__attribute__((target("avx2"))) void activate(float *y, int64_t total,
                                             int32_t activation) {
  if (activation == static_cast<int32_t>(KernelActivation::Relu)) {
    const __m256 zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= total; i += 8)
      _mm256_storeu_ps(y + i, _mm256_max_ps(zero, _mm256_loadu_ps(y + i)));
    for (; i < total; ++i)
      y[i] = y[i] < 0 ? 0.0f : y[i];
  } else if (activation == static_cast<int32_t>(KernelActivation::Gelu)) {
    for (int64_t i = 0; i < total; ++i)
      y[i] = 0.5f * y[i] * (1.0f + std::erf(y[i] * 0.70710678118654752440f));
  } else if (activation == static_cast<int32_t>(KernelActivation::Silu)) {
    for (int64_t i = 0; i < total; ++i)
      y[i] = y[i] / (1.0f + std::exp(-y[i]));
  }
}

/// Runs body(firstPanel, endPanel) over `threads` shares of `panels`, on
/// the OpenMP (GNU) threads oneDNN uses as well.
template <typename Body>
void forPanelShares(int64_t panels, int threads, const Body &body) {
  if (threads <= 1) {
    body(int64_t(0), panels);
    return;
  }
  struct Job {
    const Body *body;
    int64_t panels;
  } job{&body, panels};
  GOMP_parallel(
      [](void *data) {
        const Job &j = *static_cast<const Job *>(data);
        // The team may be smaller than asked for (inside another parallel
        // region, or under OMP_THREAD_LIMIT): share by the actual size.
        auto [first, end] =
            panelShare(j.panels, omp_get_thread_num(), omp_get_num_threads());
        if (first < end)
          (*j.body)(first, end);
      },
      &job, static_cast<unsigned>(threads), 0);
}

} // namespace

std::pair<int64_t, int64_t> packed::panelShare(int64_t panels, int t,
                                               int threads) {
  int64_t pairs = (panels + 1) / 2;
  int64_t first = 2 * (pairs * t / threads);
  int64_t end = std::min(panels, 2 * (pairs * (t + 1) / threads));
  return {first, end};
}

void packed::int8ProductsColumns(const uint8_t *xq, int64_t m,
                                 const PackedWeight &w, int32_t *acc,
                                 int64_t firstPanel, int64_t endPanel,
                                 Isa isa) {
  int8ProductsBlock(xq, m, w, acc + firstPanel * kPanel, w.n, firstPanel,
                    endPanel, isa);
}

namespace {

/// Whether `m` rows of int8 products run on AMX tiles with `isa`: from 3
/// rows. One or two rows fill a tile's 16 rows so little that `vpdpbusd`
/// is faster (a Sapphire Rapids class Xeon, hot weights of the base
/// model's shapes, alternating calls: 1-2 rows 1.4x faster without tiles,
/// 3 rows 1.3-1.4x faster with them, 8 rows 1.3-1.8x, 16 rows 2-3x); the
/// sums are exact either way, so the outputs are the same.
bool int8Tiles(Isa isa, int64_t m) { return m >= 3 && tilesRun(isa); }

} // namespace

void packed::int8ProductsBlock(const uint8_t *xq, int64_t m,
                               const PackedWeight &w, int32_t *acc, int64_t ld,
                               int64_t firstPanel, int64_t endPanel, Isa isa) {
  if (int8Tiles(isa, m))
    amx::int8Products(xq, m, w, acc, ld, firstPanel, endPanel);
  else if (avx512Vectors(isa))
    avx512::int8Products(xq, m, w, acc, ld, firstPanel, endPanel);
  else
    avx2::int8Products(xq, m, w, acc, ld, firstPanel, endPanel);
}

void packed::int8Products(const uint8_t *xq, int64_t m, const PackedWeight &w,
                          int32_t *acc, Isa isa, int threads) {
  forPanelShares(panelCount(w.n), threads, [&](int64_t first, int64_t end) {
    int8ProductsColumns(xq, m, w, acc, first, end, isa);
  });
}

void packed::int8Linear(const uint8_t *xq, int64_t m, const PackedWeight &w,
                        const Int8Outputs &to, Isa isa, int threads) {
  forPanelShares(panelCount(w.n), threads, [&](int64_t first, int64_t end) {
    if (int8Tiles(isa, m)) {
      amx::int8Linear(xq, m, w, to, first, end);
      return;
    }
    if (avx512Vectors(isa)) {
      avx512::int8Linear(xq, m, w, to, first, end);
      return;
    }
    // (isa is Avx2 here.) Blocks of about 64 KB of sums, dequantized while
    // they are in cache.
    const int64_t blockPanels =
        std::max<int64_t>(2, (int64_t(1) << 14) / (m * kPanel) / 2 * 2);
    thread_local std::vector<int32_t> acc;
    acc.resize(m * blockPanels * kPanel);
    for (int64_t p = first; p < end; p += blockPanels) {
      const int64_t stop = std::min(end, p + blockPanels);
      const int64_t c0 = p * kPanel, width = std::min(w.n, stop * kPanel) - c0;
      int8ProductsBlock(xq, m, w, acc.data(), width, p, stop, isa);
      for (int64_t r = 0; r < m; ++r)
        dequantizeRowAvx2(acc.data() + r * width, w.rowSums.data() + c0,
                          to.offset, to.rowScales[r], to.wScale + c0,
                          to.bias + c0, to.y + r * to.ldy + c0, width, to.relu);
    }
  });
}

namespace {

/// Which weight's linear layer ran after which, on this thread, learned as
/// they run: a decoder step runs its layers in the same order every time,
/// so the last panels of one layer can prefetch the start of the next
/// (paced like the prefetches within a layer; without it every layer's
/// first panels were loaded on demand). Base model, one thread, AVX-512
/// EPYC VM, `tfmc translate --stats` alternating with the build before,
/// medians of 7: batch 1 decode 0.77-1.19 -> 0.73-0.83 s in four runs
/// (AVX2 kernels 0.87 -> 0.73 s); batch 16 between level and 7% faster
/// (2.20 -> 2.04-2.21 s, medians of 9-15; this host's noise is as large).
/// Weights are keys only, never
/// dereferenced (a session's weights may be gone when the next runs), and
/// a wrong guess costs one prefetched stretch of memory, never a result.
class Successors {
public:
  /// The panels expected after `w`'s (nullptr: none known), noting `w` as
  /// what followed the previous weight.
  const char *expected(const PackedWeight &w) {
    if (previous && previous != &w) {
      if (after.size() >= kMostWeights)
        after.clear();
      after[previous] = w.panels();
    }
    previous = &w;
    auto it = after.find(&w);
    return it == after.end() ? nullptr : it->second;
  }

private:
  /// A long-running process that opens many models forgets and relearns.
  static constexpr size_t kMostWeights = 4096;
  const PackedWeight *previous = nullptr;
  std::unordered_map<const PackedWeight *, const char *> after;
};

thread_local Successors successors;

} // namespace

void packed::linear(const float *x, int64_t m, const PackedWeight &w,
                    const float *bias, float *y, int32_t activation, Isa isa,
                    int threads, bool skipZeros) {
  linearColumns(x, m, w, bias, y, w.n, 0, panelCount(w.n), activation, isa,
                threads, skipZeros);
}

void packed::linearColumns(const float *x, int64_t m, const PackedWeight &w,
                           const float *bias, float *y, int64_t ldy,
                           int64_t firstPanel, int64_t endPanel,
                           int32_t activation, Isa isa, int threads,
                           bool skipZeros) {
  const bool brain = w.format() == PanelFormat::BF16;
  // bfloat16 panels take the AVX-512 kernel only with vdpbf16ps, and AMX's
  // tiles where the process runs them.
  bool wide = brain ? bfloat16DotRuns(isa) : avx512Vectors(isa);
  bool tiles = brain && bfloat16Tiles(isa);
  const int64_t n = w.n, firstColumn = firstPanel * kPanel;
  // Only a call that runs the whole layer on this thread prefetches the
  // next one's start: of a layer cut into column shares (threads here, or
  // a StepTeam's members), the share that ends it is not the one that
  // starts the next, and its prefetches would fill another core's cache.
  const char *after = successors.expected(w);
  if (threads > 1 || firstPanel != 0 || endPanel != panelCount(n))
    after = nullptr;
  // Planned once by the calling thread and read by every column share: the
  // body names the caller's plan through a reference (a thread_local named
  // in it would be each worker's own).
  thread_local RowTiles callerPlan;
  // A bfloat16 layer's kernels read its input rounded, in pairs: a pair of
  // k is a step, skipped where both of its values are zero in every row of
  // a tile (planPairTiles). The AVX-512 kernel takes the pairs as they
  // are, the AVX2 one widened to floats (broadcast from memory, as the
  // float32 kernel's inputs).
  thread_local std::vector<uint16_t> callerOperands;
  thread_local std::vector<float> callerWidened;
  const float *in = x;
  const int rowsPerTile = wide ? kWideTileRows : kNarrowTileRows;
  if (brain) {
    size_t size = static_cast<size_t>(m) * 2 * pairsOf(w.k);
    if (callerOperands.size() < size)
      callerOperands.resize(size);
    bfloat16Operands(x, m, w.k, callerOperands.data());
    const auto *pairs =
        reinterpret_cast<const uint32_t *>(callerOperands.data());
    // AMX's tiles take the pairs as they are, every step (no row tiles, no
    // zero steps to skip at their size): nothing to plan.
    if (!tiles)
      planPairTiles(pairs, m, pairsOf(w.k), skipZeros, callerPlan, rowsPerTile);
    in = reinterpret_cast<const float *>(pairs);
    if (!wide) {
      if (callerWidened.size() < size)
        callerWidened.resize(size);
      widenBFloat16Operands(callerOperands.data(), size, callerWidened.data());
      in = callerWidened.data();
    }
  } else {
    planRowTiles(x, m, w.k, skipZeros, callerPlan, rowsPerTile);
  }
  const RowTiles &plan = callerPlan;
  const uint16_t *operands = callerOperands.data();
  forPanelShares(endPanel - firstPanel, threads, [&](int64_t first,
                                                    int64_t end) {
    first += firstPanel;
    end += firstPanel;
    if (tiles)
      amx::linearBFloat16(operands, m, w, bias, y, ldy, firstColumn, first,
                          end);
    else if (wide)
      avx512::linear(in, plan, w, bias, y, ldy, firstColumn, first, end, after);
    else
      avx2::linear(in, plan, w, bias, y, ldy, firstColumn, first, end, after);
    if (activation != static_cast<int32_t>(KernelActivation::None)) {
      int64_t col = first * kPanel, width = std::min(n, end * kPanel) - col;
      for (int64_t r = 0; r < m; ++r)
        activate(y + r * ldy + (col - firstColumn), width, activation);
    }
  });
}
