//===- PackedGemmAmx.cpp - int8 and bfloat16 panels on AMX tiles ----------===//
//
// The int8 and bfloat16 panels (PackedGemm.h) are already in the layout
// AMX's tile multiplies read their second operand in: a group of 4 int8
// (or a pair of bfloat16) values of k for each of 16 columns is one
// 64-byte row, so 16 such rows of a panel, 1 KB, are a B tile as they
// lie. The rows' operands (int8 codes, or bfloat16 pairs) are A tiles of
// 16 rows × 64 bytes, read with the rows' stride. Every tile is 16 rows of
// 64 bytes: C tiles hold 16 rows × 16 columns of int32 sums or float32
// values. One row block (up to 16 rows) runs up to 4 panels at once (4 C
// tiles, A, two B tiles in turn); more rows run pairs of row blocks
// against pairs of panels (4 C, 2 A, 2 B), each B tile feeding two
// multiplies. A last block of fewer than 16 rows reads its A tiles from a
// zero-padded copy; a panel's outputs go to a scratch tile where the block
// is not 16 × 16 wholly inside the output. The k steps past the last whole
// tile (k not a multiple of 64 int8 values or 32 bfloat16 ones) are added
// by AVX-512 (vpdpbusd, vdpbf16ps) to what the tiles stored.
//
// int8: tdpbusd sums u8 × s8 products into int32 exactly, as vpdpbusd
// and the AVX2 kernels do, so the outputs are bit for bit theirs.
// bfloat16: tdpbf16ps multiplies exactly (a bfloat16 product fits
// float32) but adds a tile's 32 products of k its own way, neither
// vdpbf16ps's pair by pair nor one rounding per tile (of 256 random sums
// on a Sapphire Rapids class Xeon, 94 matched vdpbf16ps and 192 a sum of
// each tile's products rounded once); the results are within float32
// accumulation's error bound of the exact sum, and every output is
// computed the same way wherever its row and column sit in a call.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemmIsa.h"

#include "runtime/kernels/AmxTiles.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/PanelPrefetch.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

#define TFMC_AMX                                                               \
  __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,"         \
                        "avx512vl,avx512vnni,avx512bf16")))

namespace {

using amxtiles::configureTiles;
using amxtiles::kTileRowBytes;
using amxtiles::kTileRows;
/// A B tile: 16 of a panel's 64-byte rows.
constexpr int64_t kBTileBytes = amxtiles::kTileBytes;

/// What the two formats differ in.
template <bool Brain> struct Format;
template <> struct Format<false> { using Out = int32_t; };
template <> struct Format<true> { using Out = float; };

/// Where a C tile goes: `out` with rows `ld` elements apart.
template <typename Out> struct Destination {
  Out *out;
  int64_t ld;
};

// Tile numbers are immediates, so the kernels below spell out each tile's
// start and multiply through these (Brain: the kernel's template argument).
/// C tile `t` from its panel's biases (bfloat16) or zero (int8).
#define TFMC_START(t, bias)                                                    \
  if constexpr (Brain)                                                         \
    _tile_loadd(t, bias, 0);                                                   \
  else                                                                         \
    _tile_zero(t);
/// C tile `c` += A tile `a` · B tile `b`.
#define TFMC_PRODUCT(c, a, b)                                                  \
  if constexpr (Brain)                                                         \
    _tile_dpbf16ps(c, a, b);                                                   \
  else                                                                         \
    _tile_dpbusd(c, a, b);

/// One row block (A in tile 4) against `Panels` (1-4) panels (C in tiles 0
/// to Panels - 1, B in tiles 5 and 6 in turn), over `chunks` tiles of k.
/// int8 sums start from zero; bfloat16 values from `start[j]` (each panel's
/// 16 biases, read as every row of the tile).
template <bool Brain, int Panels, class Ahead>
TFMC_AMX void oneRowBlock(const char *a, int64_t lda, const char *const *b,
                          int64_t chunks, const float *const *start,
                          const Destination<typename Format<Brain>::Out> *to,
                          Ahead ahead) {
  static_assert(Panels >= 1 && Panels <= 4, "four C tiles at most");
  TFMC_START(0, start[0])
  if constexpr (Panels > 1) {
    TFMC_START(1, start[1])
  }
  if constexpr (Panels > 2) {
    TFMC_START(2, start[2])
  }
  if constexpr (Panels > 3) {
    TFMC_START(3, start[3])
  }
  for (int64_t c = 0; c < chunks; ++c) {
    ahead.template at<Request::IntoL2>(c, c);
    _tile_loadd(4, a + c * kTileRowBytes, lda);
    _tile_loadd(5, b[0] + c * kBTileBytes, kTileRowBytes);
    TFMC_PRODUCT(0, 4, 5)
    if constexpr (Panels > 1) {
      _tile_loadd(6, b[1] + c * kBTileBytes, kTileRowBytes);
      TFMC_PRODUCT(1, 4, 6)
    }
    if constexpr (Panels > 2) {
      _tile_loadd(5, b[2] + c * kBTileBytes, kTileRowBytes);
      TFMC_PRODUCT(2, 4, 5)
    }
    if constexpr (Panels > 3) {
      _tile_loadd(6, b[3] + c * kBTileBytes, kTileRowBytes);
      TFMC_PRODUCT(3, 4, 6)
    }
  }
  using Out = typename Format<Brain>::Out;
  constexpr int64_t bytes = sizeof(Out);
  _tile_stored(0, to[0].out, to[0].ld * bytes);
  if constexpr (Panels > 1)
    _tile_stored(1, to[1].out, to[1].ld * bytes);
  if constexpr (Panels > 2)
    _tile_stored(2, to[2].out, to[2].ld * bytes);
  if constexpr (Panels > 3)
    _tile_stored(3, to[3].out, to[3].ld * bytes);
}

/// Two row blocks (A in tiles 4 and 5) against `Panels` (1 or 2) panels (B
/// in tiles 6 and 7); C tiles 0, 1 for the first block's panels, 2, 3 for
/// the second's. `to` lists them in that order.
template <bool Brain, int Panels, class Ahead>
TFMC_AMX void
twoRowBlocks(const char *a0, const char *a1, int64_t lda, const char *const *b,
             int64_t chunks, const float *const *start,
             const Destination<typename Format<Brain>::Out> *to, Ahead ahead) {
  static_assert(Panels == 1 || Panels == 2, "two panels at most");
  TFMC_START(0, start[0])
  TFMC_START(2, start[0])
  if constexpr (Panels > 1) {
    TFMC_START(1, start[1])
    TFMC_START(3, start[1])
  }
  for (int64_t c = 0; c < chunks; ++c) {
    ahead.template at<Request::IntoL2>(c, c);
    _tile_loadd(4, a0 + c * kTileRowBytes, lda);
    _tile_loadd(6, b[0] + c * kBTileBytes, kTileRowBytes);
    _tile_loadd(5, a1 + c * kTileRowBytes, lda);
    TFMC_PRODUCT(0, 4, 6)
    TFMC_PRODUCT(2, 5, 6)
    if constexpr (Panels > 1) {
      _tile_loadd(7, b[1] + c * kBTileBytes, kTileRowBytes);
      TFMC_PRODUCT(1, 4, 7)
      TFMC_PRODUCT(3, 5, 7)
    }
  }
#undef TFMC_PRODUCT
#undef TFMC_START
  using Out = typename Format<Brain>::Out;
  constexpr int64_t bytes = sizeof(Out);
  if constexpr (Panels > 1) {
    _tile_stored(0, to[0].out, to[0].ld * bytes);
    _tile_stored(1, to[1].out, to[1].ld * bytes);
    _tile_stored(2, to[2].out, to[2].ld * bytes);
    _tile_stored(3, to[3].out, to[3].ld * bytes);
  } else {
    _tile_stored(0, to[0].out, to[0].ld * bytes);
    _tile_stored(2, to[1].out, to[1].ld * bytes);
  }
}

/// The k steps past the tiles' (`from` to `to`, groups of 4 int8 values or
/// pairs of bfloat16 ones, 64-byte panel rows) added to `rows` × `width`
/// outputs at `out` (rows `ld` apart), whose operands are `a` (rows `lda`
/// bytes apart).
template <bool Brain>
TFMC_AMX void addTail(const char *a, int64_t lda, int rows, const char *panel,
                      int64_t from, int64_t to,
                      typename Format<Brain>::Out *out, int64_t ld,
                      int64_t width) {
  const __mmask16 lanes = static_cast<__mmask16>((1u << width) - 1);
  for (int r = 0; r < rows; ++r) {
    auto *o = out + r * ld;
    if constexpr (Brain) {
      __m512 acc = _mm512_maskz_loadu_ps(lanes, o);
      for (int64_t s = from; s < to; ++s) {
        int32_t word;
        std::memcpy(&word, a + r * lda + s * 4, sizeof(word));
        acc = _mm512_dpbf16_ps(
            acc, reinterpret_cast<__m512bh>(_mm512_set1_epi32(word)),
            reinterpret_cast<__m512bh>(
                _mm512_loadu_si512(panel + s * kTileRowBytes)));
      }
      _mm512_mask_storeu_ps(o, lanes, acc);
    } else {
      __m512i acc = _mm512_maskz_loadu_epi32(lanes, o);
      for (int64_t s = from; s < to; ++s) {
        int32_t four;
        std::memcpy(&four, a + r * lda + s * 4, sizeof(four));
        acc =
            _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(four),
                                _mm512_loadu_si512(panel + s * kTileRowBytes));
      }
      _mm512_mask_storeu_epi32(o, lanes, acc);
    }
  }
}

/// A C tile's int32 sums (`rows` × `width`, rows 16 apart) turned into a
/// layer's outputs as dequantizeRow() turns them, lane for lane the same
/// operations: rows [row, row + rows) and columns [col, col + width) of
/// `to`.
TFMC_AMX void dequantizeTile(const int32_t *sums, int rows, int64_t width,
                             const int32_t *rowSums, const Int8Outputs &to,
                             int64_t row, int64_t col) {
  const __mmask16 lanes = static_cast<__mmask16>((1u << width) - 1);
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_set1_epi32(to.offset), _mm512_maskz_loadu_epi32(lanes, rowSums));
  const __m512 wScale = _mm512_maskz_loadu_ps(lanes, to.wScale + col);
  const __m512 bias = _mm512_maskz_loadu_ps(lanes, to.bias + col);
  for (int r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(
        to.y + (row + r) * to.ldy + col, lanes,
        dequantizedLanes(_mm512_load_si512(sums + r * kTileRows), offsets,
                         to.rowScales[row + r], wScale, bias, to.relu));
}

/// out (m × panels' columns, rows `ld` apart, panel firstPanel's first
/// column at out[0]) = the rows' operands `a` (m rows, `lda` bytes apart,
/// `steps` k steps of 4 bytes each) times the panels [firstPanel, endPanel)
/// of `w` (n columns, `steps` 64-byte rows a panel), plus `bias` for
/// bfloat16.
/// With `outputs` (int8 only), the sums are not stored at `out` but turned
/// into the layer's outputs there, rows counted from `a`'s first.
template <bool Brain>
TFMC_AMX void run(const char *a, int64_t m, int64_t lda, int64_t steps,
                  const PackedWeight &w, const float *bias,
                  typename Format<Brain>::Out *out, int64_t ld,
                  int64_t firstPanel, int64_t endPanel,
                  const Int8Outputs *outputs = nullptr) {
  using Out = typename Format<Brain>::Out;
  const int64_t n = w.n, panelBytes = steps * kTileRowBytes;
  const int64_t chunks = steps / kTileRows, tailFrom = chunks * kTileRows;
  const char *all = w.panels();
  const int64_t rowBlocks = (m + kTileRows - 1) / kTileRows;
  // The last row block, if short, is read from a copy padded with zero rows.
  thread_local std::vector<char> padded;
  const int64_t shortRows = m % kTileRows;
  if (shortRows) {
    padded.assign(kTileRows * lda, 0);
    std::memcpy(padded.data(), a + (m - shortRows) * lda, shortRows * lda);
  }
  auto rowBlock = [&](int64_t block) {
    return shortRows && block == rowBlocks - 1 ? padded.data()
                                               : a + block * kTileRows * lda;
  };
  alignas(64) Out scratch[4][kTileRows * kTileRows];
  alignas(64) float biases[4][kTileRows];
  configureTiles();
  // Pairs of row blocks against pairs of panels load each B tile once for
  // two multiplies, but reload the rows' A tiles for every pair of panels;
  // single row blocks against 4 panels keep a row block's A tiles in L1
  // and read every panel once per row block. Singles where the panels fit
  // well in L2 (1.5 MB) and a row block's A tiles in a third of L1 (16
  // KB): int8 512 × 512 weights at 64 rows 1.2-1.4x faster on a Sapphire
  // Rapids class Xeon (2 MB L2, 48 KB L1; alternating calls in one
  // process, 10th-percentile times), 1536 × 512 1.04-1.27x, 2048 × 512
  // level; bfloat16 512 × 512 and 1536 × 512 1.1-1.15x; pairs stay ahead
  // for 512 × 2048 (0.92x as singles) and 8000 × 512 (level or behind).
  const bool singles = (endPanel - firstPanel) * panelBytes <= (3 << 19) &&
                       kTileRows * steps * 4 <= (16 << 10);
  const int64_t perStep = rowBlocks == 1 || singles ? 4 : 2;
  // From 3 row blocks, the panels after the ones the blocks run are
  // requested into L2 meanwhile, each block (or pair) a share of them
  // (PanelPrefetch.h): a decoder step's layers, one thread, this library
  // before and after in one process alternating step by step (medians of
  // 150 steps, a Sapphire Rapids class Xeon): at 64 rows int8 1.13-1.16x
  // and bfloat16 1.11-1.15x faster, at 128 rows 1.03x and 1.06x; at 32
  // rows (2 blocks) int8 0.95x and bfloat16 1.05x, at 16 (1 block, its
  // requests in a burst) 0.93-1.11x: there the tiles request nothing.
  const bool requestAhead = rowBlocks >= 3;
  const int64_t perBlock = singles ? 1 : 2;
  const int64_t sharers = (rowBlocks + perBlock - 1) / perBlock;
  for (int64_t p = firstPanel; p < endPanel;) {
    const int panels = static_cast<int>(std::min(perStep, endPanel - p));
    const char *b[4];
    const float *start[4];
    int64_t width[4];
    for (int j = 0; j < panels; ++j) {
      int64_t col = (p + j) * kPanel;
      b[j] = all + (p + j) * panelBytes;
      width[j] = std::min<int64_t>(kPanel, n - col);
      if constexpr (Brain) {
        std::fill(biases[j], biases[j] + kTileRows, 0.0f);
        std::memcpy(biases[j], bias + col, width[j] * sizeof(float));
        start[j] = biases[j];
      }
    }
    for (int64_t block = 0; block < rowBlocks;) {
      const int blocks =
          !singles && rowBlocks - block >= 2 && panels <= 2 ? 2 : 1;
      // C tiles in order: the first block's panels, then the second's.
      Destination<Out> to[4];
      int tiles = 0;
      for (int i = 0; i < blocks; ++i)
        for (int j = 0; j < panels; ++j, ++tiles) {
          int64_t row = (block + i) * kTileRows;
          bool whole = !outputs && m - row >= kTileRows && width[j] == kPanel;
          to[tiles] = whole
                          ? Destination<Out>{out + row * ld +
                                                 (p + j - firstPanel) * kPanel,
                                             ld}
                          : Destination<Out>{scratch[tiles], kTileRows};
        }
      const char *a0 = rowBlock(block);
      auto multiply = [&](auto ahead) {
        if (blocks == 2) {
          const char *a1 = rowBlock(block + 1);
          if (panels == 2)
            twoRowBlocks<Brain, 2>(a0, a1, lda, b, chunks, start, to, ahead);
          else
            twoRowBlocks<Brain, 1>(a0, a1, lda, b, chunks, start, to, ahead);
          return;
        }
        switch (panels) {
        case 4:
          oneRowBlock<Brain, 4>(a0, lda, b, chunks, start, to, ahead);
          break;
        case 3:
          oneRowBlock<Brain, 3>(a0, lda, b, chunks, start, to, ahead);
          break;
        case 2:
          oneRowBlock<Brain, 2>(a0, lda, b, chunks, start, to, ahead);
          break;
        default:
          oneRowBlock<Brain, 1>(a0, lda, b, chunks, start, to, ahead);
          break;
        }
      };
      if (requestAhead)
        multiply(ShareAhead(all + (p + panels) * panelBytes,
                            panels * panelBytes, sharers, block / perBlock,
                            chunks));
      else
        multiply(NothingAhead());
      // Blocks that went to scratch: their rows and columns in the output.
      tiles = 0;
      for (int i = 0; i < blocks; ++i)
        for (int j = 0; j < panels; ++j, ++tiles) {
          int64_t row = (block + i) * kTileRows;
          int rows = static_cast<int>(std::min<int64_t>(kTileRows, m - row));
          if constexpr (!Brain) {
            if (outputs) {
              // The tail's k steps into the tile's sums, then out.
              if (tailFrom < steps)
                addTail<Brain>(a + row * lda, lda, rows, b[j], tailFrom, steps,
                               scratch[tiles], kTileRows, width[j]);
              const int64_t col = (p + j) * kPanel;
              dequantizeTile(scratch[tiles], rows, width[j],
                             w.rowSums.data() + col, *outputs, row, col);
              continue;
            }
          }
          Out *at = out + row * ld + (p + j - firstPanel) * kPanel;
          if (to[tiles].out == scratch[tiles])
            for (int r = 0; r < rows; ++r)
              std::memcpy(at + r * ld, scratch[tiles] + r * kTileRows,
                          width[j] * sizeof(Out));
          if (tailFrom < steps)
            addTail<Brain>(a + row * lda, lda, rows, b[j], tailFrom, steps, at,
                           ld, width[j]);
        }
      block += blocks;
    }
    p += panels;
  }
  _tile_release();
}

/// Rows of a stripe: more rows run stripe by stripe, each over all the
/// panels, so that the output rows a panel pair's tiles write stay within
/// 64 rows (their lines and pages stay cached while the stripe runs; each
/// stripe streams the panels again, from cache at these sizes). Measured
/// with 256 rows, one thread, a Sapphire Rapids class Xeon (medians of 3
/// alternating runs; this host's noise is about 2x): 8,000 × 512 weights
/// (beam search's output projection) bfloat16 7.0 -> 3.5 ms, int8 2.7 ->
/// 1.7 ms; 2,048 × 512 and 512 × 2,048 level.
constexpr int64_t kStripeRows = 64;

template <bool Brain>
void runStripes(const char *a, int64_t m, int64_t lda, int64_t steps,
                const PackedWeight &w, const float *bias,
                typename Format<Brain>::Out *out, int64_t ld,
                int64_t firstPanel, int64_t endPanel,
                const Int8Outputs *outputs = nullptr) {
  for (int64_t r = 0; r < m; r += kStripeRows) {
    Int8Outputs stripe;
    if (outputs) {
      stripe = *outputs;
      stripe.rowScales += r;
      stripe.y += r * stripe.ldy;
    }
    run<Brain>(a + r * lda, std::min(kStripeRows, m - r), lda, steps, w, bias,
               outputs ? nullptr : out + r * ld, ld, firstPanel, endPanel,
               outputs ? &stripe : nullptr);
  }
}

} // namespace

void packed::amx::int8Products(const uint8_t *xq, int64_t m,
                               const PackedWeight &w, int32_t *acc, int64_t ld,
                               int64_t firstPanel, int64_t endPanel) {
  if (m == 0 || firstPanel >= endPanel)
    return;
  runStripes<false>(reinterpret_cast<const char *>(xq), m, w.kPadded,
                    w.kPadded / 4, w, nullptr, acc, ld, firstPanel, endPanel);
}

void packed::amx::int8Linear(const uint8_t *xq, int64_t m,
                             const PackedWeight &w, const Int8Outputs &to,
                             int64_t firstPanel, int64_t endPanel) {
  if (m == 0 || firstPanel >= endPanel)
    return;
  runStripes<false>(reinterpret_cast<const char *>(xq), m, w.kPadded,
                    w.kPadded / 4, w, nullptr, nullptr, 0, firstPanel, endPanel,
                    &to);
}

void packed::amx::linearBFloat16(const uint16_t *operands, int64_t m,
                                 const PackedWeight &w, const float *bias,
                                 float *y, int64_t ldy, int64_t firstColumn,
                                 int64_t firstPanel, int64_t endPanel) {
  if (m == 0 || firstPanel >= endPanel)
    return;
  const int64_t pairs = pairsOf(w.k);
  runStripes<true>(reinterpret_cast<const char *>(operands), m, 4 * pairs,
                   pairs, w, bias, y + (firstPanel * kPanel - firstColumn), ldy,
                   firstPanel, endPanel);
}
