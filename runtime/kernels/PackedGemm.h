//===- PackedGemm.h - small-M linear layers on pre-packed weights -*- C++
//-*-===//
//
// y[M, N] = act(x[M, K] · Wᵀ + b) for the decoder's few rows (M up to a
// few dozen), where oneDNN 2.6's AVX2 sgemm reaches only about half of its
// large-matrix rate on these shapes. The weight is packed once into panels
// of 16 output columns, k-major inside a panel (panel p holds W[16p + j, k]
// at [k·16 + j]), so a register tile of up to 6 rows × 16 columns streams
// one contiguous panel: 12 FMAs per k for 2 vector loads and 6 broadcasts.
// float16 weights are packed as halves and widened in the kernel (F16C),
// which halves the bytes streamed. bfloat16 weights are packed in pairs of
// consecutive k per column (panel p, pair i: 16 columns × 2 values, the
// even k first) and multiply the layer's input rounded to bfloat16
// (BFloat16Operands.h): with avx512_bf16, one vdpbf16ps per pair and 16
// columns; elsewhere each pair widened and two FMAs (odd k, then even),
// the same sums. int8 weights are packed in groups of 4
// consecutive k per column (panel p, group g: 16 columns × 4 bytes) for
// vpmaddubsw on unsigned 7-bit inputs (exact, see Quantize.h), then
// vpmaddwd into int32. Needs AVX2 + FMA (+ F16C); callers check
// availableOnThisCpu() and fall back to oneDNN otherwise. On CPUs with
// AVX-512 (F, BW, VL and VNNI) the same panels run through 8 × 32 tiles of
// zmm registers and vpdpbusd (PackedGemmAvx512.cpp), with results
// bit-identical to the AVX2 kernels' (bfloat16 panels take the AVX-512
// kernel only where the CPU has avx512_bf16, the AVX2 one otherwise);
// TFMC_KERNEL_ISA=avx2 in the environment keeps the AVX2 kernels. Where
// the CPU has AMX (and the process its tile state), int8 and bfloat16
// panels run on tiles instead (PackedGemmAmx.cpp): int8 to the same
// integer sums, bfloat16 to sums in the tiles' own order.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_PACKEDGEMM_H
#define RUNTIME_KERNELS_PACKEDGEMM_H

#include "frontends/model/PageMemory.h"
#include "runtime/kernels/KernelIsa.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace tfmc::runtime::packed {

/// Output columns per panel.
constexpr int64_t kPanel = 16;
/// Rows of the widest register tile: 6 × 16 columns on AVX2 (12 of the 16
/// ymm registers accumulate), 8 × 32 on AVX-512 (16 of the 32 zmm). On an
/// AVX-512 EPYC (Zen 4), one thread, 16 rows × 65,001 × 512 ran at 89 GFLOP/s
/// in 8-row tiles against 58 in 6-row tiles (6 + 6 + 4 rows stream each panel
/// pair three times, 8 + 8 twice), and 64 × 2048 × 512 at 105 against 96.
constexpr int kNarrowTileRows = 6;
constexpr int kWideTileRows = 8;

/// Panels of a weight with `n` output columns.
constexpr int64_t panelCount(int64_t n) { return (n + kPanel - 1) / kPanel; }

/// How float panels store their values: float32, IEEE half (widened to
/// float32 exactly in the kernels) or bfloat16 pairs (multiplied with the
/// input rounded to bfloat16, accumulated in float32).
enum class PanelFormat { F32, F16, BF16 };

/// A weight in panel layout; the last panel (and, for int8, k up to a
/// multiple of 4) is zero-padded.
struct PackedWeight {
  int64_t n = 0, k = 0;
  /// `half`: 16-bit panels (in `f16`), IEEE half or, with `brain`,
  /// bfloat16. `exactHalves`: packed from float32 values that are all IEEE
  /// halves exactly (pack()), so kept as halves. `notHalves`: float32
  /// panels of values known not to be all halves (pack() was asked to
  /// look, or OneDnn::panels() looked).
  bool half = false, brain = false, int8 = false, exactHalves = false,
       notHalves = false;
  PanelFormat format() const {
    return !half ? PanelFormat::F32 : brain ? PanelFormat::BF16
                                            : PanelFormat::F16;
  }
  pages::Vector<float> f32;
  pages::Vector<uint16_t> f16;
  pages::Vector<int8_t> i8;
  /// int8: k rounded up to a multiple of 4, and Σk W[n, k] per column.
  int64_t kPadded = 0;
  std::vector<int32_t> rowSums;

  /// The panels' first byte.
  const char *panels() const;
};

/// Packs W ([n, k], row-major) as float32 or, from IEEE-half bits, as halves.
/// A float32 W whose every value is an IEEE half exactly (a model stored as
/// float16 and widened at load) is packed as halves unless `exactAsHalves`
/// is false: the kernels widen them back exactly and run the same FMAs in
/// the same order, so the results are bit for bit those of float32 panels,
/// from half the bytes.
PackedWeight pack(const float *w, int64_t n, int64_t k,
                  bool exactAsHalves = true);
PackedWeight packHalves(const uint16_t *w, int64_t n, int64_t k);
/// ... and from bfloat16 bits, in pairs of k (kept in `f16`, with `brain`
/// set; subnormals as zeros, BFloat16Operands.h).
PackedWeight packBFloat16(const uint16_t *w, int64_t n, int64_t k);

PackedWeight packInt8(const int8_t *w, int64_t n, int64_t k);

/// From this many rows a float32 weight that is all halves runs on float32
/// panels (a second copy, packed on first use) rather than its halves: the
/// results are the same bits; halves move half the bytes, which is what
/// counts while the rows are few and the weights stream from memory, and
/// cost a conversion per panel row and tile, which is what counts once the
/// FMAs set the pace. Float32 against half panels on a Sapphire Rapids
/// class Xeon (one thread, the library's two copies alternating step by
/// step): hot weights of the bundled model's shapes 0.95x at 8 rows, 1.12x
/// at 16, 1.08-1.09x at 32-128; a streamed decoder step of the base model's
/// 0.86x at 16 rows, 1.07x at 32, 1.09x at 64; the AVX2 kernels
/// (TFMC_KERNEL_ISA=avx2) hot 1.04x at 16 rows, 1.14x at 32 and 76,
/// streamed 0.95x at 16, 1.13x at 32, 1.10x at 64. The bundled model (all
/// halves) on the dev set, alternating `translate --stats` against halves
/// at every row count: beam 4 decoded in 0.892x the time (float32 panels
/// from 16 rows 0.953x, at every row count 0.933x), greedy 0.988x, greedy
/// at batch 64 0.947x (2026-12-06).
constexpr int64_t kFloatPanelRows = 32;

/// Whether every one of the `count` floats at `w` is an IEEE half exactly
/// (what pack() looks at; false without AVX2, where no panels run).
bool allHalves(const float *w, int64_t count);

/// Panels [first, end) of share `t` of `threads`: whole pairs of panels
/// (the AVX-512 tiles take two at a time), so every column is computed by
/// the same tile code whatever the split, and results do not depend on it.
std::pair<int64_t, int64_t> panelShare(int64_t panels, int t, int threads);

/// acc[m, n] = Σk xq[m, k] · W[n, k] in int32, xq unsigned bytes below 128
/// with rows `kPadded` apart (the padding bytes' values do not matter).
/// `threads` > 1 splits the output columns between that many OpenMP
/// threads (whole pairs of panels each; the results are the same).
void int8Products(const uint8_t *xq, int64_t m, const PackedWeight &w,
                  int32_t *acc, Isa isa = preferredIsa(), int threads = 1);
/// The columns of panels [firstPanel, endPanel) of int8Products(), on the
/// calling thread (acc rows still n wide).
void int8ProductsColumns(const uint8_t *xq, int64_t m, const PackedWeight &w,
                         int32_t *acc, int64_t firstPanel, int64_t endPanel,
                         Isa isa = preferredIsa());
/// The same columns into a block: output (r, c) goes to
/// acc[r · ld + c - 16 · firstPanel].
void int8ProductsBlock(const uint8_t *xq, int64_t m, const PackedWeight &w,
                       int32_t *acc, int64_t ld, int64_t firstPanel,
                       int64_t endPanel, Isa isa = preferredIsa());

/// What turns an int8 layer's products into its outputs (Int8Rows.h's
/// dequantizeRow): y[r · ldy + c] = act(fma(float(acc[r, c] - offset ·
/// rowSums[c]), rowScales[r] · wScale[c], bias[c])), act none or ReLU.
struct Int8Outputs {
  const float *rowScales;
  const float *wScale;
  const float *bias;
  int32_t offset;
  bool relu;
  float *y;
  int64_t ldy;
};
/// int8Products() turned into outputs by `to`, the columns split between
/// `threads` as there: every output has dequantizeRow()'s bits. The AMX
/// and AVX-512 kernels turn their sums into outputs as they leave the tiles
/// or registers; with AVX2 each thread's columns go through a block of sums
/// of its own.
void int8Linear(const uint8_t *xq, int64_t m, const PackedWeight &w,
                const Int8Outputs &to, Isa isa = preferredIsa(),
                int threads = 1);

/// y = act(x · Wᵀ + bias); x [m, k] and y [m, n] row-major, activation as
/// KernelActivation (with bfloat16 panels, x rounded to bfloat16 first);
/// `threads` as for int8Products. With `skipZeros`, the k steps at which all
/// rows of a row tile are zero are skipped (RowTiles.h: the results stay the
/// same).
void linear(const float *x, int64_t m, const PackedWeight &w, const float *bias,
            float *y, int32_t activation, Isa isa = preferredIsa(),
            int threads = 1, bool skipZeros = true);

/// The columns of panels [firstPanel, endPanel) of linear(): output (r, c)
/// goes to y[r · ldy + c - 16 · firstPanel], so y may be a block just
/// that wide (greedy search's fused projection scans the output block by
/// block). Each output is computed exactly as linear() computes it.
void linearColumns(const float *x, int64_t m, const PackedWeight &w,
                   const float *bias, float *y, int64_t ldy,
                   int64_t firstPanel, int64_t endPanel, int32_t activation,
                   Isa isa = preferredIsa(), int threads = 1,
                   bool skipZeros = true);

} // namespace tfmc::runtime::packed

#endif // RUNTIME_KERNELS_PACKEDGEMM_H
