//===- PackedGemmIsa.h - per-instruction-set packed kernels -----*- C++ -*-===//
//
// Internal to the packed kernels: the per-instruction-set variants that
// PackedGemm.cpp dispatches to: AVX2 (PackedGemmAvx2.cpp, every supported
// CPU), AVX-512 (PackedGemmAvx512.cpp), and AMX for int8 and bfloat16
// panels (PackedGemmAmx.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_PACKEDGEMMISA_H
#define RUNTIME_KERNELS_PACKEDGEMMISA_H

#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/RowTiles.h"

#include <type_traits>

namespace tfmc::runtime::packed {

/// Bytes of a panel row: one k step of float32 or halves, one pair of k of
/// bfloat16.
template <PanelFormat Format> constexpr int64_t panelRowBytes() {
  return Format == PanelFormat::F16 ? kPanel * 2 : kPanel * 4;
}

/// Calls body(std::integral_constant<PanelFormat, F>{}) for `format` F: a
/// kernel templated on the panels' format, chosen at run time.
template <class Body> void withFormat(PanelFormat format, Body &&body) {
  switch (format) {
  case PanelFormat::F16:
    body(std::integral_constant<PanelFormat, PanelFormat::F16>{});
    break;
  case PanelFormat::BF16:
    body(std::integral_constant<PanelFormat, PanelFormat::BF16>{});
    break;
  case PanelFormat::F32:
    body(std::integral_constant<PanelFormat, PanelFormat::F32>{});
    break;
  }
}

} // namespace tfmc::runtime::packed

namespace tfmc::runtime::packed::avx2 {

/// avx512::linear() on AVX2 for any panels (float32, float16, bfloat16),
/// with tiles of at most kNarrowTileRows rows; for bfloat16 panels x holds
/// the rows' operands widened to floats (widenBFloat16Operands(), rows
/// 2 · pairsOf(k) apart). The same outputs, bit for bit.
void linear(const float *x, const RowTiles &plan, const PackedWeight &w,
            const float *bias, float *y, int64_t ldy, int64_t firstColumn,
            int64_t firstPanel, int64_t endPanel, const char *after);
/// avx512::int8Products() on AVX2 (7-bit inputs): the same int32 sums.
void int8Products(const uint8_t *xq, int64_t m, const PackedWeight &w,
                  int32_t *acc, int64_t ld, int64_t firstPanel,
                  int64_t endPanel);

} // namespace tfmc::runtime::packed::avx2

namespace tfmc::runtime::packed::avx512 {

/// y = x · Wᵀ + bias (no activation) for float32 or float16 panels, or
/// bfloat16 ones where bfloat16DotAvailable() (x then holds the rows'
/// bfloat16 operands in pairs, k counting pairs), the columns of panels
/// [firstPanel, endPanel) only, the rows in the tiles of `plan` (x's rows,
/// their k steps). Output (r, c) goes to
/// y[r · ldy + c - firstColumn]. `after` (or nullptr): the panels of the
/// layer expected next, whose start the last panels' tiles prefetch.
void linear(const float *x, const RowTiles &plan, const PackedWeight &w,
            const float *bias, float *y, int64_t ldy, int64_t firstColumn,
            int64_t firstPanel, int64_t endPanel, const char *after);
/// Σk xq · W of panels [firstPanel, endPanel): output (r, c) goes to
/// acc[r · ld + c - 16 · firstPanel].
void int8Products(const uint8_t *xq, int64_t m, const PackedWeight &w,
                  int32_t *acc, int64_t ld, int64_t firstPanel,
                  int64_t endPanel);
/// The outputs of panels [firstPanel, endPanel) of int8Linear(): each
/// tile's sums turned into outputs in its registers (output (r, c) to
/// to.y[r · to.ldy + c]).
void int8Linear(const uint8_t *xq, int64_t m, const PackedWeight &w,
                const Int8Outputs &to, int64_t firstPanel, int64_t endPanel);

} // namespace tfmc::runtime::packed::avx512

namespace tfmc::runtime::packed::amx {

/// avx512::int8Products() on AMX tiles: the same int32 sums.
void int8Products(const uint8_t *xq, int64_t m, const PackedWeight &w,
                  int32_t *acc, int64_t ld, int64_t firstPanel,
                  int64_t endPanel);
/// The outputs of panels [firstPanel, endPanel) of int8Linear(): the sums
/// of int8Products(), each C tile turned into outputs as it leaves the
/// tiles (output (r, c) to to.y[r · to.ldy + c]).
void int8Linear(const uint8_t *xq, int64_t m, const PackedWeight &w,
                const Int8Outputs &to, int64_t firstPanel, int64_t endPanel);
/// y = x · Wᵀ + bias (no activation) for bfloat16 panels, the columns of
/// panels [firstPanel, endPanel): `operands` are x's m rows rounded to
/// bfloat16 pairs (bfloat16Operands(), rows 2 · pairsOf(k) values apart);
/// output (r, c) goes to y[r · ldy + c - firstColumn].
void linearBFloat16(const uint16_t *operands, int64_t m, const PackedWeight &w,
                    const float *bias, float *y, int64_t ldy,
                    int64_t firstColumn, int64_t firstPanel, int64_t endPanel);

} // namespace tfmc::runtime::packed::amx

#endif // RUNTIME_KERNELS_PACKEDGEMMISA_H
