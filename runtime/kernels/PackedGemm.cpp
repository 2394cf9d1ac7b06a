//===- PackedGemm.cpp - small-M linear layers on pre-packed weights -------===//
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/PackedGemmIsa.h"
#include "runtime/kernels/PanelPrefetch.h"

#include "frontends/model/Float16.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

/// Panels of the n rows of k values that rowOf(r) points at.
template <typename T, typename RowOf>
void packRows(int64_t n, int64_t k, tfmc::pages::Vector<T> &out, RowOf rowOf) {
  out.assign(panelCount(n) * kPanel * k, T(0));
  for (int64_t row = 0; row < n; ++row) {
    const T *values = rowOf(row);
    T *panel = out.data() + (row / kPanel) * kPanel * k;
    int64_t j = row % kPanel;
    for (int64_t c = 0; c < k; ++c)
      panel[c * kPanel + j] = values[c];
  }
}

template <typename T>
void packInto(const T *w, int64_t n, int64_t k, tfmc::pages::Vector<T> &out) {
  packRows(n, k, out, [&](int64_t row) { return w + row * k; });
}

/// The two 8-wide halves of panel row `c` as floats (float32 and IEEE-half
/// panels).
template <PanelFormat Format>
__attribute__((target("avx2,fma,f16c"))) inline void
loadPanelRow(const void *panel, int64_t c, __m256 &lo, __m256 &hi) {
  static_assert(Format != PanelFormat::BF16, "bfloat16 panels hold pairs");
  if constexpr (Format == PanelFormat::F16) {
    const uint16_t *p = static_cast<const uint16_t *>(panel) + c * kPanel;
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    hi = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 8)));
  } else {
    const float *p = static_cast<const float *>(panel) + c * kPanel;
    lo = _mm256_loadu_ps(p);
    hi = _mm256_loadu_ps(p + 8);
  }
}

/// What a tile requests of the next panel: at each step c with
/// (c & mask) == phase, row c (`RowBytes` bytes a row) of the panel at
/// `next`.
template <int64_t RowBytes> struct PhaseRowsAhead {
  const char *next;
  int64_t mask = 0, phase = 0;

  template <Request Into> void at(int64_t, int64_t c) {
    if ((c & mask) == phase)
      requestLine<Into>(next + c * RowBytes);
  }
};

/// Bytes of a panel row: one k step of float32 or halves, one pair of k of
/// bfloat16.
template <PanelFormat Format> constexpr int64_t panelRowBytes() {
  return Format == PanelFormat::F16 ? kPanel * 2 : kPanel * 4;
}

/// Rows x 16 columns of y starting at (row 0, panel column 0): accumulators
/// start from the bias, the k loop streams the panel once, over `count`
/// steps: c = 0 .. count - 1, or (Sparse) the listed `steps`, requesting
/// `ahead` (run() says what) into L1 meanwhile. With bfloat16 panels a
/// step is a pair of k (k counts pairs), and x holds the rows' bfloat16
/// operands widened to floats, rows 2k apart (widenBFloat16Operands()):
/// each pair of the panel widened, the odd k's FMA before the even one's,
/// as vdpbf16ps adds them.
template <int Rows, PanelFormat Format, bool Sparse, class Ahead>
__attribute__((target("avx2,fma,f16c"))) void
tile(const float *x, int64_t k, const int32_t *steps, int64_t count,
     const void *panel, Ahead ahead, const float *bias16, float *out16,
     int64_t ldy) {
  __m256 lo[Rows], hi[Rows];
  __m256 b0 = _mm256_loadu_ps(bias16), b1 = _mm256_loadu_ps(bias16 + 8);
  for (int r = 0; r < Rows; ++r) {
    lo[r] = b0;
    hi[r] = b1;
  }
  constexpr int64_t rowBytes = panelRowBytes<Format>();
  for (int64_t s = 0; s < count; ++s) {
    int64_t c = Sparse ? steps[s] : s;
    ahead.template at<Request::IntoL1>(s, c);
    if constexpr (Format == PanelFormat::BF16) {
      // Columns 0-7 and 8-15, a (even, odd) pair in each 32-bit lane: the
      // even k's value is the lane shifted up, the odd k's its upper half.
      const char *row = static_cast<const char *>(panel) + c * rowBytes;
      __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row));
      __m256i q1 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 32));
      const __m256i upper = _mm256_set1_epi32(int(0xffff0000u));
      __m256 even0 = _mm256_castsi256_ps(_mm256_slli_epi32(q0, 16));
      __m256 odd0 = _mm256_castsi256_ps(_mm256_and_si256(q0, upper));
      __m256 even1 = _mm256_castsi256_ps(_mm256_slli_epi32(q1, 16));
      __m256 odd1 = _mm256_castsi256_ps(_mm256_and_si256(q1, upper));
      for (int r = 0; r < Rows; ++r) {
        const float *pair = x + r * 2 * k + 2 * c;
        __m256 odd = _mm256_broadcast_ss(pair + 1);
        __m256 even = _mm256_broadcast_ss(pair);
        lo[r] = _mm256_fmadd_ps(odd, odd0, lo[r]);
        lo[r] = _mm256_fmadd_ps(even, even0, lo[r]);
        hi[r] = _mm256_fmadd_ps(odd, odd1, hi[r]);
        hi[r] = _mm256_fmadd_ps(even, even1, hi[r]);
      }
    } else {
      __m256 w0, w1;
      loadPanelRow<Format>(panel, c, w0, w1);
      for (int r = 0; r < Rows; ++r) {
        __m256 a = _mm256_broadcast_ss(x + r * k + c);
        lo[r] = _mm256_fmadd_ps(a, w0, lo[r]);
        hi[r] = _mm256_fmadd_ps(a, w1, hi[r]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    _mm256_storeu_ps(out16 + r * ldy, lo[r]);
    _mm256_storeu_ps(out16 + r * ldy + 8, hi[r]);
  }
}

template <int Rows, PanelFormat Format, class Ahead>
__attribute__((target("avx2,fma,f16c"))) inline void
tileSteps(const float *x, int64_t k, const int32_t *steps, int64_t count,
          const void *panel, Ahead ahead, const float *bias16, float *out16,
          int64_t ldy) {
  if (steps)
    tile<Rows, Format, true>(x, k, steps, count, panel, ahead, bias16, out16,
                             ldy);
  else
    tile<Rows, Format, false>(x, k, steps, count, panel, ahead, bias16, out16,
                              ldy);
}

/// The tile of `t`'s row count (6, 4, 2 or 1) and steps.
template <PanelFormat Format, class Ahead>
__attribute__((target("avx2,fma,f16c"))) inline void
tileRows(const RowTiles &plan, const RowTile &t, const float *x, int64_t k,
         const void *panel, Ahead ahead, const float *bias16, float *out16,
         int64_t ldy) {
  const int32_t *steps = plan.stepsOf(t);
  int64_t count = RowTiles::countOf(t, k);
  switch (t.rows) {
  case 6:
    tileSteps<6, Format>(x, k, steps, count, panel, ahead, bias16, out16, ldy);
    break;
  case 4:
    tileSteps<4, Format>(x, k, steps, count, panel, ahead, bias16, out16, ldy);
    break;
  case 2:
    tileSteps<2, Format>(x, k, steps, count, panel, ahead, bias16, out16, ldy);
    break;
  default:
    tileSteps<1, Format>(x, k, steps, count, panel, ahead, bias16, out16, ldy);
    break;
  }
}

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

template <PanelFormat Format>
__attribute__((target("avx2,fma,f16c"))) void
run(const float *x, const RowTiles &plan, const PackedWeight &w,
    const float *bias, float *y, int64_t ldy, int64_t firstColumn,
    int64_t firstPanel, int64_t endPanel, const char *after) {
  // k steps, or pairs of them for bfloat16 (x then holds the rounded
  // inputs as floats, rows 2k apart: tile()).
  const int64_t n = w.n, k = Format == PanelFormat::BF16 ? pairsOf(w.k) : w.k;
  const size_t panelElements =
      kPanel * k * (Format == PanelFormat::BF16 ? 2 : 1);
  // Tiles write 16 columns: the last panel of a width that is not a
  // multiple of 16 goes through a scratch row block.
  alignas(32) float scratch[kNarrowTileRows * kPanel];
  alignas(32) float biasTail[kPanel] = {};
  // The next panel is requested as the tiles run over this one; after the
  // weight's last one, the start of `after` (the next layer's panels). Of
  // more than two tiles, each requests its share (PanelPrefetch.h): a
  // decoder step's float32 layers, TFMC_KERNEL_ISA=avx2 on a Sapphire
  // Rapids class Xeon, the library before and after in one process
  // alternating step by step, medians of 100 steps: 1.54x faster at 16
  // rows (3 tiles), 1.63x at 64, level at 1 and 8 (2026-12-06). Of one or
  // two, the first tile requests it, or, where the second is a full one,
  // the first its even rows and the second its odd ones. Against the first
  // tile alone (same harness, an AVX-512 EPYC, 2026-12-05): 1.25x faster at
  // 16 rows (then 3 tiles), 1.29x at 12, 1.24x at 14, 1.12x at 24, 1.09x at
  // 32, 1.04x at 64; a short second tile (6 + 4, 6 + 2, 6 + 1 rows) gained
  // nothing (1.03-1.11x slower).
  const bool split =
      plan.tiles.size() > 1 && plan.tiles[1].rows == kNarrowTileRows;
  const int64_t total = panelCount(n);
  const size_t panelBytes = panelRowBytes<Format>() * k;
  for (int64_t p = firstPanel; p < endPanel; ++p) {
    const void *panel = Format != PanelFormat::F32
                            ? static_cast<const void *>(w.f16.data() +
                                                         p * panelElements)
                             : static_cast<const void *>(w.f32.data() +
                                                         p * panelElements);
    const char *nextPanel = p + 1 < total || !after
                                ? static_cast<const char *>(panel) + panelBytes
                                : after;
    int64_t col = p * kPanel, width = std::min<int64_t>(kPanel, n - col);
    const float *b = bias + col;
    if (width < kPanel) {
      std::memcpy(biasTail, b, width * sizeof(float));
      b = biasTail;
    }
    for (size_t tileIndex = 0; tileIndex < plan.tiles.size(); ++tileIndex) {
      const RowTile &t = plan.tiles[tileIndex];
      bool full = width == kPanel;
      float *at = y + t.row * ldy + (col - firstColumn);
      float *out = full ? at : scratch;
      int64_t ld = full ? ldy : kPanel;
      const float *xr = x + t.row * k * (Format == PanelFormat::BF16 ? 2 : 1);
      if (plan.tiles.size() > 2) {
        tileRows<Format>(plan, t, xr, k, panel,
                         ShareAhead(nextPanel, int64_t(panelBytes),
                                    int64_t(plan.tiles.size()),
                                    int64_t(tileIndex),
                                    RowTiles::countOf(t, k)),
                         b, out, ld);
      } else if (tileIndex == 0 || (split && tileIndex == 1)) {
        PhaseRowsAhead<panelRowBytes<Format>()> rows{nextPanel};
        if (split) {
          rows.mask = 1;
          rows.phase = int64_t(tileIndex);
        }
        tileRows<Format>(plan, t, xr, k, panel, rows, b, out, ld);
      } else {
        tileRows<Format>(plan, t, xr, k, panel, NothingAhead(), b, out, ld);
      }
      if (!full)
        for (int i = 0; i < t.rows; ++i)
          std::memcpy(at + i * ldy, scratch + i * kPanel,
                      width * sizeof(float));
    }
  }
}

/// Rows x 16 int32 sums over the k groups of one int8 panel, the tile
/// requesting `ahead` meanwhile.
template <int Rows, class Ahead>
__attribute__((target("avx2"))) void
tileInt8(const uint8_t *x, int64_t ldx, const int8_t *panel, int64_t groups,
         Ahead ahead, int32_t *out16, int64_t ldy) {
  __m256i lo[Rows], hi[Rows];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int r = 0; r < Rows; ++r)
    lo[r] = hi[r] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    ahead.template at<Request::IntoL1>(g, g);
    __m256i w0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(panel + g * 64));
    __m256i w1 = _mm256_loadu_si256(
        reinterpret_cast<const __m256i *>(panel + g * 64 + 32));
    for (int r = 0; r < Rows; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, sizeof(four));
      __m256i a = _mm256_set1_epi32(four);
      lo[r] = _mm256_add_epi32(
          lo[r], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w0), ones));
      hi[r] = _mm256_add_epi32(
          hi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(a, w1), ones));
    }
  }
  for (int r = 0; r < Rows; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out16 + r * ldy), lo[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out16 + r * ldy + 8),
                        hi[r]);
  }
}

} // namespace

PackedWeight packed::packInt8(const int8_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.int8 = true;
  p.kPadded = (k + 3) / 4 * 4;
  p.i8.assign(panelCount(n) * kPanel * p.kPadded, 0);
  p.rowSums.assign(n, 0);
  // Row `row` of w is column j of its panel: its group of 4 values of k
  // number g is the 4 bytes at g · 64 + j · 4 (a k not a multiple of 4
  // leaves the last group's other bytes zero).
  const int64_t whole = k / 4;
  for (int64_t row = 0; row < n; ++row) {
    int8_t *column =
        p.i8.data() + (row / kPanel) * kPanel * p.kPadded + (row % kPanel) * 4;
    const int8_t *from = w + row * k;
    for (int64_t g = 0; g < whole; ++g)
      std::memcpy(column + g * 64, from + g * 4, 4);
    for (int64_t c = whole * 4; c < k; ++c)
      column[whole * 64 + c % 4] = from[c];
    int32_t sum = 0;
    for (int64_t c = 0; c < k; ++c)
      sum += from[c];
    p.rowSums[row] = sum;
  }
  return p;
}

namespace {

/// Output (r, c) to acc[r · ld + c - 16 · firstPanel].
void int8ProductsAvx2(const uint8_t *xq, int64_t m, const PackedWeight &w,
                      int32_t *acc, int64_t ld, int64_t firstPanel,
                      int64_t endPanel) {
  const int64_t n = w.n, kp = w.kPadded, groups = kp / 4;
  const int64_t firstColumn = firstPanel * kPanel;
  alignas(32) int32_t scratch[4 * kPanel];
  auto rowsAt = [](int64_t left) { return left >= 4 ? 4 : left >= 2 ? 2 : 1; };
  int64_t tiles = 0;
  for (int64_t r = 0; r < m; r += rowsAt(m - r))
    ++tiles;
  for (int64_t p = firstPanel; p < endPanel; ++p) {
    const int8_t *panel = w.i8.data() + p * kPanel * kp;
    int64_t tileIndex = 0;
    int64_t col = p * kPanel, width = std::min<int64_t>(kPanel, n - col);
    bool full = width == kPanel;
    for (int64_t r = 0; r < m;) {
      int rows = rowsAt(m - r);
      int32_t *out = full ? acc + r * ld + col - firstColumn : scratch;
      int64_t ldOut = full ? ld : kPanel;
      const uint8_t *xr = xq + r * kp;
      // The next panel is requested as the float tiles request theirs
      // (run()): of more than two tiles each its share (1.04x faster at 16
      // rows, 1.02x at 64, level at 1 and 4: the harness of run()'s note,
      // 2026-12-06); else the first tile all of it. The first tile alone
      // against nothing (an AVX-512 EPYC, 2026-12-05): 1.09x faster at 1
      // row, 1.05x at 4, 1.15x at 16, 1.05x at 64. Past the layer's last
      // panel the request is for memory that is never read (a prefetch
      // never faults).
      const char *next = reinterpret_cast<const char *>(panel + kPanel * kp);
      auto tile = [&](auto ahead) {
        if (rows == 4)
          tileInt8<4>(xr, kp, panel, groups, ahead, out, ldOut);
        else if (rows == 2)
          tileInt8<2>(xr, kp, panel, groups, ahead, out, ldOut);
        else
          tileInt8<1>(xr, kp, panel, groups, ahead, out, ldOut);
      };
      if (tiles > 2)
        tile(ShareAhead(next, kPanel * kp, tiles, tileIndex, groups));
      else if (r == 0)
        tile(RowsAhead<1, 64>{next, 0});
      else
        tile(NothingAhead());
      ++tileIndex;
      if (!full)
        for (int i = 0; i < rows; ++i)
          std::memcpy(acc + (r + i) * ld + col - firstColumn,
                      scratch + i * kPanel, width * sizeof(int32_t));
      r += rows;
    }
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
    int8ProductsAvx2(xq, m, w, acc, ld, firstPanel, endPanel);
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

// Exact halves, by integer arithmetic on the float32 bits (whatever the
// floating-point modes; infinities and NaNs excluded in every lane). A
// float32 with biased exponent e is a half exactly when it is ±0, or e is
// in [103, 142] (2^-24 .. 2^15) and the low `126 - e` bits (at least 13) of
// its 24-bit significand are zero; its half is then
// (e - 112) << 10 | mantissa >> 13 (a normal half, e >= 113) or
// significand >> (126 - e) (a subnormal one), with the sign on top.

/// Per 32-bit lane of `bits`: all ones where the float is a half exactly.
__attribute__((target("avx2"))) static inline __m256i
exactHalfLanes(__m256i bits) {
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i e = _mm256_srli_epi32(magnitude, 23);
  __m256i shift = _mm256_max_epi32(
      _mm256_sub_epi32(_mm256_set1_epi32(126), e), _mm256_set1_epi32(13));
  __m256i low = _mm256_sub_epi32(
      _mm256_sllv_epi32(_mm256_set1_epi32(1), shift), _mm256_set1_epi32(1));
  __m256i significand =
      _mm256_or_si256(_mm256_and_si256(magnitude, _mm256_set1_epi32(0x7fffff)),
                      _mm256_set1_epi32(0x800000));
  __m256i zero = _mm256_setzero_si256();
  __m256i dropped =
      _mm256_cmpeq_epi32(_mm256_and_si256(significand, low), zero);
  __m256i inRange =
      _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(103), e),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(143), e));
  return _mm256_or_si256(_mm256_cmpeq_epi32(magnitude, zero),
                         _mm256_and_si256(inRange, dropped));
}

/// The halves of eight exact halves' bits (exactHalfLanes all ones), as
/// 32-bit lanes.
__attribute__((target("avx2"))) static inline __m256i
halfLanes(__m256i bits) {
  __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  __m256i e = _mm256_srli_epi32(magnitude, 23);
  __m256i mantissa = _mm256_and_si256(magnitude, _mm256_set1_epi32(0x7fffff));
  __m256i normal = _mm256_or_si256(
      _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(112)), 10),
      _mm256_srli_epi32(mantissa, 13));
  __m256i subnormal = _mm256_srlv_epi32(
      _mm256_or_si256(mantissa, _mm256_set1_epi32(0x800000)),
      _mm256_sub_epi32(_mm256_set1_epi32(126), e));
  __m256i isNormal = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(112));
  __m256i half = _mm256_blendv_epi8(subnormal, normal, isNormal);
  // ±0: e = 0 gives a subnormal shift of 126, which shifts everything out.
  __m256i sign = _mm256_srli_epi32(
      _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u))), 16);
  return _mm256_or_si256(half, sign);
}

/// Whether every one of the `count` floats at `w` is an IEEE half exactly
/// (widening its half gives back the same bits; a NaN or an infinity never
/// counts). Stops at the first that is not.
__attribute__((target("avx2"))) static bool allExactHalves(const float *w,
                                                          int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256i bits =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i));
    if (_mm256_movemask_epi8(exactHalfLanes(bits)) != -1)
      return false;
  }
  for (; i < count; ++i) {
    float back = tfmc::halfToFloat(tfmc::floatToHalf(w[i]));
    if (!std::isfinite(w[i]) || std::memcmp(&back, w + i, sizeof(float)) != 0)
      return false;
  }
  return true;
}

/// The halves of `count` floats that are all halves exactly.
__attribute__((target("avx2"))) static void
halvesOf(const float *w, int64_t count, uint16_t *out) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256i a = halfLanes(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i)));
    __m256i b = halfLanes(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i + 8)));
    // packus works within 128-bit lanes: a0 b0 a1 b1 -> a0 a1 b0 b1.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b),
                                              _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), packed);
  }
  for (; i < count; ++i)
    out[i] = tfmc::floatToHalf(w[i]);
}

PackedWeight packed::pack(const float *w, int64_t n, int64_t k,
                          bool exactAsHalves) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  if (exactAsHalves && availableOnThisCpu() && allExactHalves(w, n * k)) {
    p.half = p.exactHalves = true;
    std::vector<uint16_t> halves(k);
    packRows(n, k, p.f16, [&](int64_t row) {
      halvesOf(w + row * k, k, halves.data());
      return static_cast<const uint16_t *>(halves.data());
    });
    return p;
  }
  packInto(w, n, k, p.f32);
  return p;
}

PackedWeight packed::packHalves(const uint16_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.half = true;
  packInto(w, n, k, p.f16);
  return p;
}

PackedWeight packed::packBFloat16(const uint16_t *w, int64_t n, int64_t k) {
  PackedWeight p;
  p.n = n;
  p.k = k;
  p.half = p.brain = true;
  // Panel p, pair i: W[16p + j, 2i + e] at [i · 32 + j · 2 + e]; an odd k's
  // last pair ends in a zero.
  const int64_t pairs = pairsOf(k);
  p.f16.assign(panelCount(n) * kPanel * 2 * pairs, 0);
  for (int64_t row = 0; row < n; ++row) {
    uint16_t *column =
        p.f16.data() + (row / kPanel) * kPanel * 2 * pairs + (row % kPanel) * 2;
    const uint16_t *from = w + row * k;
    for (int64_t i = 0; 2 * i + 1 < k; ++i) {
      column[i * 2 * kPanel] = bfloat16Operand(from[2 * i]);
      column[i * 2 * kPanel + 1] = bfloat16Operand(from[2 * i + 1]);
    }
    if (k % 2)
      column[(k / 2) * 2 * kPanel] = bfloat16Operand(from[k - 1]);
  }
  return p;
}

const char *PackedWeight::panels() const {
  if (int8)
    return reinterpret_cast<const char *>(i8.data());
  if (half)
    return reinterpret_cast<const char *>(f16.data());
  return reinterpret_cast<const char *>(f32.data());
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
    else if (w.format() == PanelFormat::F16)
      run<PanelFormat::F16>(in, plan, w, bias, y, ldy, firstColumn, first, end,
                            after);
    else if (brain)
      run<PanelFormat::BF16>(in, plan, w, bias, y, ldy, firstColumn, first, end,
                             after);
    else
      run<PanelFormat::F32>(in, plan, w, bias, y, ldy, firstColumn, first, end,
                            after);
    if (activation != static_cast<int32_t>(KernelActivation::None)) {
      int64_t col = first * kPanel, width = std::min(n, end * kPanel) - col;
      for (int64_t r = 0; r < m; ++r)
        activate(y + r * ldy + (col - firstColumn), width, activation);
    }
  });
}
