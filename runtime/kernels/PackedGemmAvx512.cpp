//===- PackedGemmAvx512.cpp - the packed-panel kernels on AVX-512 ---------===//
//
// The same panels as the AVX2 kernels (PackedGemm.h), one 16-column panel
// row per zmm register. A tile is up to 8 rows × 32 columns (two adjacent
// panels): 16 accumulators, 2 weight loads and 8 broadcasts per k, so the
// FMA units rather than the loads set the pace (kWideTileRows). Every output is
// still bias + Σk x·w accumulated in k order with one FMA per k, the AVX2
// kernels' order, so both give bit-identical results. int8 panels use
// vpdpbusd (AVX-512 VNNI): four u8×s8 products summed into int32 at once,
// exact like the vpmaddubsw/vpmaddwd pair on 7-bit inputs. bfloat16 pairs
// use vdpbf16ps (avx512_bf16): a pair of k for 16 columns at once, twice
// the FMA rate, the sums of the AVX2 kernels' two FMAs (BFloat16Operands.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemmIsa.h"

#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/PanelPrefetch.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

#define TFMC_AVX512                                                            \
  __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#define TFMC_AVX512_VNNI                                                       \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define TFMC_AVX512_BF16                                                       \
  __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c,avx512bf16")))

namespace {

/// Panel row `c` of float32 or IEEE-half panels, as floats.
template <PanelFormat Format>
TFMC_AVX512 inline __m512 loadPanelRow(const void *panel, int64_t c) {
  static_assert(Format != PanelFormat::BF16, "bfloat16 panels: dotTile()");
  if constexpr (Format == PanelFormat::F16)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(
        static_cast<const uint16_t *>(panel) + c * kPanel)));
  else
    return _mm512_loadu_ps(static_cast<const float *>(panel) + c * kPanel);
}

/// Every row's accumulators start from the bias.
template <int Rows, int Panels>
TFMC_AVX512 inline void startFromBias(__m512 (&acc)[Rows][Panels],
                                      const float *bias) {
  for (int p = 0; p < Panels; ++p) {
    __m512 b = _mm512_loadu_ps(bias + p * kPanel);
    for (int r = 0; r < Rows; ++r)
      acc[r][p] = b;
  }
}

template <int Rows, int Panels>
TFMC_AVX512 inline void storeTile(__m512 (&acc)[Rows][Panels], float *out,
                                  int64_t ldy) {
  for (int r = 0; r < Rows; ++r)
    for (int p = 0; p < Panels; ++p)
      _mm512_storeu_ps(out + r * ldy + p * kPanel, acc[r][p]);
}

/// Rows × (Panels · 16) outputs: `panel` and, for two panels, the next one
/// (`panelBytes` on), over `count` k steps: c = 0 .. count - 1, or
/// (Sparse) the listed `steps`; x's rows are `k` apart, each read through
/// a pointer of its own (no address arithmetic a step; the compiler keeps
/// some of them on the stack). Meanwhile the tile requests its share of
/// the panels ahead.
template <int Rows, int Panels, PanelFormat Format, Request Into, bool Sparse,
          class Ahead>
TFMC_AVX512 void tile(const float *x, int64_t k, const int32_t *steps,
                      int64_t count, const void *panel, int64_t panelBytes,
                      Ahead ahead, const float *bias, float *out, int64_t ldy) {
  __m512 acc[Rows][Panels];
  startFromBias(acc, bias);
  const float *row[Rows];
  for (int r = 0; r < Rows; ++r)
    row[r] = x + r * k;
  const char *base = static_cast<const char *>(panel);
  for (int64_t s = 0; s < count; ++s) {
    int64_t c = Sparse ? steps[s] : s;
    ahead.template at<Into>(s, c);
    __m512 w[Panels];
    for (int p = 0; p < Panels; ++p)
      w[p] = loadPanelRow<Format>(base + p * panelBytes, c);
    for (int r = 0; r < Rows; ++r) {
      __m512 a = _mm512_set1_ps(row[r][c]);
      for (int p = 0; p < Panels; ++p)
        acc[r][p] = _mm512_fmadd_ps(a, w[p], acc[r][p]);
    }
  }
  storeTile(acc, out, ldy);
}

/// tile() for bfloat16 pairs: x holds the rows' operands in pairs (k
/// counts pairs), and each step is one vdpbf16ps per row and panel.
template <int Rows, int Panels, Request Into, bool Sparse, class Ahead>
TFMC_AVX512_BF16 void dotTile(const float *x, int64_t k, const int32_t *steps,
                              int64_t count, const void *panel,
                              int64_t panelBytes, Ahead ahead,
                              const float *bias, float *out, int64_t ldy) {
  __m512 acc[Rows][Panels];
  startFromBias(acc, bias);
  const float *row[Rows];
  for (int r = 0; r < Rows; ++r)
    row[r] = x + r * k;
  const char *base = static_cast<const char *>(panel);
  constexpr int64_t rowBytes = panelRowBytes<PanelFormat::BF16>();
  for (int64_t s = 0; s < count; ++s) {
    int64_t c = Sparse ? steps[s] : s;
    ahead.template at<Into>(s, c);
    __m512bh w[Panels];
    for (int p = 0; p < Panels; ++p)
      w[p] = reinterpret_cast<__m512bh>(
          _mm512_loadu_si512(base + p * panelBytes + c * rowBytes));
    for (int r = 0; r < Rows; ++r) {
      int32_t word;
      std::memcpy(&word, row[r] + c, sizeof(word));
      __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(word));
      for (int p = 0; p < Panels; ++p)
        acc[r][p] = _mm512_dpbf16_ps(acc[r][p], a, w[p]);
    }
  }
  storeTile(acc, out, ldy);
}

template <int Rows, int Panels, PanelFormat Format, Request Into, class Ahead>
TFMC_AVX512 inline void
tileSteps(const float *x, int64_t k, const int32_t *steps, int64_t count,
          const void *panel, int64_t panelBytes, Ahead ahead, const float *bias,
          float *out, int64_t ldy) {
  if constexpr (Format == PanelFormat::BF16) {
    if (steps)
      dotTile<Rows, Panels, Into, true>(x, k, steps, count, panel, panelBytes,
                                        ahead, bias, out, ldy);
    else
      dotTile<Rows, Panels, Into, false>(x, k, steps, count, panel, panelBytes,
                                         ahead, bias, out, ldy);
  } else if (steps) {
    tile<Rows, Panels, Format, Into, true>(x, k, steps, count, panel,
                                           panelBytes, ahead, bias, out, ldy);
  } else {
    tile<Rows, Panels, Format, Into, false>(x, k, steps, count, panel,
                                            panelBytes, ahead, bias, out, ldy);
  }
}

/// The tile of `t`'s row count and steps, requesting `ahead` into L1 or L2.
template <int Panels, PanelFormat Format, Request Into, class Ahead>
TFMC_AVX512 inline void tileRows(const RowTiles &plan, const RowTile &t,
                                 const float *x, int64_t k, const void *panel,
                                 int64_t panelBytes, Ahead ahead,
                                 const float *bias, float *out, int64_t ldy) {
  const int32_t *steps = plan.stepsOf(t);
  int64_t count = RowTiles::countOf(t, k);
  auto withRows = [&](auto rows) {
    tileSteps<decltype(rows)::value, Panels, Format, Into>(
        x, k, steps, count, panel, panelBytes, ahead, bias, out, ldy);
  };
  switch (t.rows) {
  case 8:
    withRows(std::integral_constant<int, 8>{});
    break;
  case 6:
    withRows(std::integral_constant<int, 6>{});
    break;
  case 4:
    withRows(std::integral_constant<int, 4>{});
    break;
  case 2:
    withRows(std::integral_constant<int, 2>{});
    break;
  default:
    withRows(std::integral_constant<int, 1>{});
    break;
  }
}

template <PanelFormat Format>
TFMC_AVX512 void run(const float *x, const RowTiles &plan,
                     const PackedWeight &w, const float *bias, float *y,
                     int64_t ldy, int64_t firstColumn, int64_t firstPanel,
                     int64_t np, const char *after) {
  // k steps, or pairs of them for bfloat16 (x holds its pairs then).
  const int64_t n = w.n, k = Format == PanelFormat::BF16 ? pairsOf(w.k) : w.k;
  const int64_t panelBytes = panelRowBytes<Format>() * k;
  const char *all = w.panels();
  // The last panel of a width that is not a multiple of 16 goes alone,
  // through a scratch block.
  alignas(64) float scratch[kWideTileRows * kPanel];
  alignas(64) float biasTail[kPanel] = {};
  // The next pair is requested while the tiles run over this one (each
  // tile a share of it: PanelPrefetch.h); past the weight's last panel, the
  // start of `after` (the next layer's panels), so they are on their way.
  // The pair two pairs on instead (128 KB ahead at k = 512 rather than
  // 64): base model, one thread, `tfmc translate --stats`, alternating, lower
  // quartiles of 8-12 runs, batch 16 decode 0.536 -> 0.559 s and 0.673 -> 0.722
  // s (two host states), batch 64 1.464 -> 1.545 s and 1.552 -> 1.997 s, batch
  // 1 level (AMD EPYC AVX-512, 2026-12-04).
  const int64_t total = panelCount(n);
  const bool intoL2 = aheadCacheLevel() == 2;
  for (int64_t p = firstPanel; p < np;) {
    int64_t col = p * kPanel, width = std::min<int64_t>(kPanel, n - col);
    bool pair = p + 1 < np && n - col >= 2 * kPanel;
    const void *panel = all + p * panelBytes;
    const char *ahead = p + 2 <= total || !after
                            ? all + (p + 2) * panelBytes
                            : after + (p + 2 - total) * panelBytes;
    const float *b = bias + col;
    if (!pair && width < kPanel) {
      std::memcpy(biasTail, b, width * sizeof(float));
      b = biasTail;
    }
    for (size_t tileIndex = 0; tileIndex < plan.tiles.size(); ++tileIndex) {
      const RowTile &t = plan.tiles[tileIndex];
      const float *xr = x + t.row * k;
      if (pair) {
        // The next pair is requested as the tiles run over this one
        // (PanelPrefetch.h): of more than two tiles, each its share spread
        // over its steps; of two, each one panel's rows as it reads its
        // own (float32: the same lines at the same pace as shares, fewer
        // instructions: on the harness there, 1.01x; float16's 32-byte
        // rows ask for each line twice); a lone tile both panels' rows.
        // On Intel CPUs into L2 (aheadCacheLevel(); a guess at why,
        // unmeasurable on this VM: L1's fill buffers hold few misses at once):
        // on the harness, a Sapphire Rapids class Xeon, 1.09x faster than into
        // L1 at 16 rows, 1.06x at 24, 1.02x at 8, 32 and 64. Elsewhere into L1,
        // except a lone tile of fewer than 4 rows (its steps are short, and
        // L1's misses would pile up): on an AMD EPYC (AVX-512, 2026-12-05, when
        // two tiles made every request), into L1 rather than every tile the
        // whole pair into L2 (the later tiles' requests then mostly hits)
        // was 1.18x faster at 16 rows, 1.07x at 4 and 8, 1.05x slower at 1 row.
        float *out = y + t.row * ldy + (col - firstColumn);
        auto tiles = [&](auto requests, bool toL2) {
          if (toL2)
            tileRows<2, Format, Request::IntoL2>(
                plan, t, xr, k, panel, panelBytes, requests, b, out, ldy);
          else
            tileRows<2, Format, Request::IntoL1>(
                plan, t, xr, k, panel, panelBytes, requests, b, out, ldy);
        };
        if (plan.tiles.size() > 2)
          tiles(ShareAhead(ahead, 2 * panelBytes, int64_t(plan.tiles.size()),
                           int64_t(tileIndex), RowTiles::countOf(t, k)),
                intoL2);
        else if (plan.tiles.size() == 2)
          tiles(
              RowsAhead<1, panelRowBytes<Format>()>{
                  ahead + int64_t(tileIndex) * panelBytes, panelBytes},
              intoL2);
        else
          tiles(RowsAhead<2, panelRowBytes<Format>()>{ahead, panelBytes},
                intoL2 || t.rows < 4);
      } else {
        bool full = width == kPanel;
        float *at = y + t.row * ldy + (col - firstColumn);
        float *out = full ? at : scratch;
        int64_t ld = full ? ldy : kPanel;
        tileRows<1, Format, Request::IntoL1>(plan, t, xr, k, panel, panelBytes,
                                             NothingAhead(), b, out, ld);
        if (!full)
          for (int i = 0; i < t.rows; ++i)
            std::memcpy(at + i * ldy, scratch + i * kPanel,
                        width * sizeof(float));
      }
    }
    p += pair ? 2 : 1;
  }
}

/// Where a tile's sums go: int32 sums at `out` (rows `ldy` apart), or, with
/// `to`, the layer's outputs as dequantizeRow() makes them, rows from `row`
/// and `width` (1-32) columns from `col`.
struct Int8Tile {
  int32_t *out;
  int64_t ldy;
  const Int8Outputs *to = nullptr;
  const int32_t *rowSums = nullptr;
  int64_t row = 0, col = 0, width = 0;
};

/// Rows × (Panels · 16) int32 sums over the k groups of one or two int8
/// panels (`panelBytes` apart). The tile prefetches those of the next
/// Panels panels whose bits are set in `prefetchPanels`, a row at each
/// step, into L1.
template <int Rows, int Panels>
TFMC_AVX512_VNNI void
tileInt8(const uint8_t *x, int64_t ldx, const int8_t *panel, int64_t panelBytes,
         int64_t groups, unsigned prefetchPanels, const Int8Tile &dst) {
  __m512i acc[Rows][Panels];
  for (int r = 0; r < Rows; ++r)
    for (int p = 0; p < Panels; ++p)
      acc[r][p] = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; ++g) {
    __m512i w[Panels];
    for (int p = 0; p < Panels; ++p) {
      const int8_t *pp = panel + p * panelBytes + g * 64;
      if (prefetchPanels >> p & 1)
        _mm_prefetch(reinterpret_cast<const char *>(pp + Panels * panelBytes),
                     _MM_HINT_T0);
      w[p] = _mm512_loadu_si512(pp);
    }
    for (int r = 0; r < Rows; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, sizeof(four));
      __m512i a = _mm512_set1_epi32(four);
      for (int p = 0; p < Panels; ++p)
        acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], a, w[p]);
    }
  }
  if (!dst.to) {
    for (int r = 0; r < Rows; ++r)
      for (int p = 0; p < Panels; ++p)
        _mm512_storeu_si512(dst.out + r * dst.ldy + p * kPanel, acc[r][p]);
    return;
  }
  // The outputs, as dequantizeRow() computes them (dequantizedLanes).
  const Int8Outputs &to = *dst.to;
  __mmask16 lanes[Panels];
  __m512i offsets[Panels];
  __m512 wScale[Panels], bias[Panels];
  for (int p = 0; p < Panels; ++p) {
    int64_t width = std::clamp<int64_t>(dst.width - p * kPanel, 0, kPanel);
    lanes[p] = static_cast<__mmask16>((1u << width) - 1);
    int64_t col = dst.col + p * kPanel;
    offsets[p] = _mm512_mullo_epi32(
        _mm512_set1_epi32(to.offset),
        _mm512_maskz_loadu_epi32(lanes[p], dst.rowSums + col));
    wScale[p] = _mm512_maskz_loadu_ps(lanes[p], to.wScale + col);
    bias[p] = _mm512_maskz_loadu_ps(lanes[p], to.bias + col);
  }
  for (int r = 0; r < Rows; ++r)
    for (int p = 0; p < Panels; ++p)
      _mm512_mask_storeu_ps(
          to.y + (dst.row + r) * to.ldy + dst.col + p * kPanel, lanes[p],
          dequantizedLanes(acc[r][p], offsets[p], to.rowScales[dst.row + r],
                           wScale[p], bias[p], to.relu));
}

template <int Panels>
TFMC_AVX512_VNNI inline void
tileInt8Rows(int rows, const uint8_t *x, int64_t ldx, const int8_t *panel,
             int64_t panelBytes, int64_t groups, unsigned prefetchPanels,
             const Int8Tile &dst) {
  switch (rows) {
  case 8:
    tileInt8<8, Panels>(x, ldx, panel, panelBytes, groups, prefetchPanels, dst);
    break;
  case 6:
    tileInt8<6, Panels>(x, ldx, panel, panelBytes, groups, prefetchPanels, dst);
    break;
  case 4:
    tileInt8<4, Panels>(x, ldx, panel, panelBytes, groups, prefetchPanels, dst);
    break;
  case 2:
    tileInt8<2, Panels>(x, ldx, panel, panelBytes, groups, prefetchPanels, dst);
    break;
  default:
    tileInt8<1, Panels>(x, ldx, panel, panelBytes, groups, prefetchPanels, dst);
    break;
  }
}

} // namespace

void packed::avx512::linear(const float *x, const RowTiles &plan,
                            const PackedWeight &w, const float *bias, float *y,
                            int64_t ldy, int64_t firstColumn,
                            int64_t firstPanel, int64_t endPanel,
                            const char *after) {
  withFormat(w.format(), [&](auto format) {
    run<decltype(format)::value>(x, plan, w, bias, y, ldy, firstColumn,
                                 firstPanel, endPanel, after);
  });
}

namespace {

/// int8Products(), or with `to` int8Linear()'s outputs, of panels
/// [firstPanel, np).
void int8Run(const uint8_t *xq, int64_t m, const PackedWeight &w, int32_t *acc,
             int64_t ld, int64_t firstPanel, int64_t np,
             const Int8Outputs *to) {
  const int64_t n = w.n, kp = w.kPadded, groups = kp / 4;
  const int64_t firstColumn = firstPanel * kPanel;
  const int64_t panelBytes = kPanel * kp;
  alignas(64) int32_t scratch[kWideTileRows * kPanel];
  for (int64_t p = firstPanel; p < np;) {
    const int8_t *panel = w.i8.data() + p * panelBytes;
    int64_t col = p * kPanel, width = std::min<int64_t>(kPanel, n - col);
    bool pair = p + 1 < np && n - col >= 2 * kPanel;
    bool full = width == kPanel;
    for (int64_t r = 0, tileIndex = 0; r < m; ++tileIndex) {
      int rows = m - r >= kWideTileRows ? kWideTileRows
                 : m - r >= 4           ? 4
                 : m - r >= 2           ? 2
                                        : 1;
      const uint8_t *xr = xq + r * kp;
      // The next pair, requested once as the float tiles request theirs
      // (run()), into L1 at every row count: the harness of run()'s note on
      // int8 weights, against every tile prefetching the pair two pairs on
      // into L2, 1.14x faster at 1 row, 1.23x at 4, 1.05x at 16, 1.03x at
      // 64; `translate --compute-type int8` 1.09x at batch 1, 1.04x at 64,
      // 0.9-1.16x from run to run at 16 (AMD EPYC AVX-512, 2026-12-05).
      unsigned prefetchPanels = rows == m       ? 3u
                                : tileIndex < 2 ? 1u << tileIndex
                                                : 0u;
      // (With `to` there is no acc: no pointer into it, not even unused.)
      Int8Tile dst{to ? nullptr : acc + r * ld + col - firstColumn, ld};
      if (to) {
        dst.to = to;
        dst.rowSums = w.rowSums.data();
        dst.row = r;
        dst.col = col;
        dst.width = pair ? 2 * kPanel : width;
      }
      if (pair) {
        tileInt8Rows<2>(rows, xr, kp, panel, panelBytes, groups, prefetchPanels,
                        dst);
      } else if (to || full) {
        tileInt8Rows<1>(rows, xr, kp, panel, panelBytes, groups, 1u, dst);
      } else {
        tileInt8Rows<1>(rows, xr, kp, panel, panelBytes, groups, 1u,
                        Int8Tile{scratch, kPanel});
        for (int i = 0; i < rows; ++i)
          std::memcpy(acc + (r + i) * ld + col - firstColumn,
                      scratch + i * kPanel, width * sizeof(int32_t));
      }
      r += rows;
    }
    p += pair ? 2 : 1;
  }
}

} // namespace

void packed::avx512::int8Products(const uint8_t *xq, int64_t m,
                                  const PackedWeight &w, int32_t *acc,
                                  int64_t ld, int64_t firstPanel, int64_t np) {
  int8Run(xq, m, w, acc, ld, firstPanel, np, nullptr);
}

void packed::avx512::int8Linear(const uint8_t *xq, int64_t m,
                                const PackedWeight &w, const Int8Outputs &to,
                                int64_t firstPanel, int64_t endPanel) {
  int8Run(xq, m, w, nullptr, 0, firstPanel, endPanel, &to);
}
