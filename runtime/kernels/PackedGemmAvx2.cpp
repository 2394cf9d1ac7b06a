//===- PackedGemmAvx2.cpp - the packed-panel kernels on AVX2 --------------===//
//
// The kernels every supported CPU runs (packed::availableOnThisCpu()): a
// tile is up to 6 rows × one 16-column panel, two ymm accumulators a row,
// over the panel's k steps in order (or the steps its rows' plan keeps:
// RowTiles.h), one FMA per k, so the AVX-512 kernels
// (PackedGemmAvx512.cpp) give the same bits. float16 panels are widened
// with vcvtph2ps; bfloat16 pairs are split into their even and odd k and
// take two FMAs, odd first, as vdpbf16ps adds them. int8 panels take
// vpmaddubsw + vpmaddwd on 7-bit inputs (exact int32 sums, the same as
// vpdpbusd's). PackedGemm.cpp chooses between these, the AVX-512 and the
// AMX kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemmIsa.h"

#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/PanelPrefetch.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

namespace {

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
    const void *panel =
        Format != PanelFormat::F32
            ? static_cast<const void *>(w.f16.data() + p * panelElements)
            : static_cast<const void *>(w.f32.data() + p * panelElements);
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

void packed::avx2::linear(const float *x, const RowTiles &plan,
                          const PackedWeight &w, const float *bias, float *y,
                          int64_t ldy, int64_t firstColumn, int64_t firstPanel,
                          int64_t endPanel, const char *after) {
  withFormat(w.format(), [&](auto format) {
    run<decltype(format)::value>(x, plan, w, bias, y, ldy, firstColumn,
                                 firstPanel, endPanel, after);
  });
}

void packed::avx2::int8Products(const uint8_t *xq, int64_t m,
                                const PackedWeight &w, int32_t *acc, int64_t ld,
                                int64_t firstPanel, int64_t endPanel) {
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
