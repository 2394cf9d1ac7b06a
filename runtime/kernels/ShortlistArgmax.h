//===- ShortlistArgmax.h - greedy's choice via int8 shortlist ---*- C++ -*-===//
//
// Greedy search needs only the best allowed id of each row of logits, not
// the logits. Over a large vocabulary, reading the float32 output
// projection every step costs more than the rest of the decoder (65,001 ×
// 512 floats: 133 MB a step), so the fused projection (tfm.linear_argmax)
// can first compute every logit cheaply and approximately from an int8
// copy of the weight (a quarter of the bytes), with a rigorous bound B on
// how far each approximation A is from the value the float kernels
// compute, L:
//
//   |L - A| <= B = ‖x‖·E_c + ‖x - x̂‖·Q_c + C_c
//
// (x̂: the row quantized as the int8 layers quantize it; per output column c,
// E_c = ‖w_c - ŵ_c‖ + γ‖w_c‖ + ε‖ŵ_c‖, Q_c = (1 + ε)‖ŵ_c‖, C_c = (γ + ε)|b_c|,
// ŵ_c the int8 codes times their scale, γ = (k + 1)u / (1 - (k + 1)u) the float
// kernels' rounding over k multiply-adds and a bias, ε = 1e-6 for the rounding
// of A and B themselves; norms by Cauchy-Schwarz). With M the greatest
// A - B over the allowed ids of a row, no id whose A + B is below M can be
// the greatest L; the few that are left (the candidates) are computed
// again exactly as the float kernels compute them (bias, then one FMA per
// k in k order, from the weight's own rows; bfloat16 on AMX tiles: their
// panel through the tiles) and scanned in id order, so the choice is the
// one a full scan makes: the same id, and the same value up to the sign of
// a zero. (The tiles' sums of a bfloat16 layer are within the same γ of
// the exact sum.)
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_SHORTLISTARGMAX_H
#define RUNTIME_KERNELS_SHORTLISTARGMAX_H

#include "runtime/kernels/ArgmaxScan.h"
#include "runtime/kernels/PackedGemm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// An output projection's weight ([n, k], row c = output column c, as
/// float32, IEEE halves or bfloat16) and bias, prepared for
/// shortlistArgmax(): int8 codes per column with their scales, and the
/// per-column terms of the bound (rounded up).
struct ShortlistWeight {
  int64_t n = 0, k = 0;
  const void *weight = nullptr;
  const float *bias = nullptr;
  packed::PanelFormat format = packed::PanelFormat::F32;
  /// W[c, :] ≈ scale[c] · codes (packed::packInt8 panels).
  packed::PackedWeight codes;
  std::vector<float> scale, error, codeNorm, biasSlack;
  /// The largest codeNorm, error, biasSlack and |bias|: a row whose bound
  /// could overflow is refused before it is scanned.
  float maxCodeNorm = 0, maxError = 0, maxBiasSlack = 0, maxBias = 0;
  /// bfloat16 weights where the full projection runs on AMX tiles
  /// (packed::bfloat16Tiles()): the weight's panels, on which the
  /// candidates are computed again as the tiles compute them (their sums
  /// are not the pairs of FMAs of the vector kernels). Without them such a
  /// shortlist refuses every row (the caller scans the full outputs).
  const packed::PackedWeight *tilePanels = nullptr;
};

/// The prepared weight, or null when the weight or bias holds a value that
/// is not finite (the full scan's rules for NaNs then apply). `panels`: the
/// weight's own panels, kept as tilePanels where bfloat16 runs on AMX tiles
/// (elsewhere unused; may be null).
std::unique_ptr<ShortlistWeight>
prepareShortlist(const void *weight, packed::PanelFormat format,
                 const float *bias, int64_t n, int64_t k,
                 const packed::PackedWeight *panels = nullptr);

/// For each of x's m rows ([m, k]), the state ArgmaxScan reaches scanning
/// the outputs of panels [firstPanel, endPanel) from a fresh start
/// (`excluded` with each row's allowEos from `allowEos[r] != 0`) into
/// scans[r]. False when a row holds a value that is not finite, its
/// bounds could overflow, or more ids than can be recomputed cheaply stay
/// candidates: `scans` are then unspecified and the caller scans the full
/// outputs. Runs on the calling thread.
bool shortlistArgmax(const ShortlistWeight &w, const float *x, int64_t m,
                     int64_t firstPanel, int64_t endPanel,
                     ScanExclusions excluded, const int32_t *allowEos,
                     ArgmaxScan *scans);

/// For tests: the bounds shortlistArgmax works with for one row x (w.k
/// values) on every output c: lower[c] = A - B and upper[c] = A + B, each
/// computed as there. False as for shortlistArgmax (a row it refuses).
bool shortlistBounds(const ShortlistWeight &w, const float *x, float *lower,
                     float *upper);

/// When tfm.linear_argmax takes the shortlist (where the packed kernels
/// run): TFMC_GREEDY_SHORTLIST=auto (default: where shortlistPays), always
/// or never (the full scan; read once; another value gives one `note:`
/// line on stderr and auto).
enum class ShortlistPolicy { Auto, Always, Never };
ShortlistPolicy shortlistPolicy();
/// The policy for a TFMC_GREEDY_SHORTLIST value (null: unset); `note` gets
/// the line for a value that is not understood.
ShortlistPolicy shortlistPolicyFor(const char *value, std::string &note);
/// Auto's rule for a projection whose weight is in `format`: everywhere
/// but bfloat16 on AMX tiles (`tiles`: packed::bfloat16Tiles()), whose full
/// scan is as fast or faster. Projection time against the full scan
/// (`tfmc profile`, paired runs), one thread, Sapphire Rapids class Xeon:
/// base model with 8,000 outputs (16 MB float32) 0.49x at 16 rows and
/// 0.34x at 64 (int8 products on AMX tiles), 0.47x, 0.49x, 0.48x at 4, 16,
/// 64 rows with vpdpbusd (TFMC_KERNEL_ISA=avx512), 0.50x, 0.63x, 0.65x with
/// the AVX2 kernels; float16 0.6x at 16, 0.4x at 64; bfloat16 on
/// vdpbf16ps 0.85x at 1 row, 0.8x at 4, 0.38x at 16, 0.31x at 64, but on
/// AMX tiles 1.0x at 1 row, 1.2-1.3x at 4 and 1.6-2.2x at 16-64 (with
/// 65,001 outputs level); the bundled model (4,000 x 256 halves, 2 MB, in
/// cache) 0.56x at 1 row, 0.62x at 2, 0.67x at 8, 0.51x at 32, 0.46x at 64
/// and 256 (AVX2 kernels 0.41x and 0.44x at 1 and 2 rows). Until
/// 2026-12-06 a block holding an excluded id (pad and bos always, eos
/// before --min-length) took every bound through scalar calls, and the rule
/// was a vocabulary of 8,192 or more or a weight of 8 MiB or more.
constexpr bool shortlistPays(packed::PanelFormat format, bool tiles) {
  return !(format == packed::PanelFormat::BF16 && tiles);
}

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_SHORTLISTARGMAX_H
