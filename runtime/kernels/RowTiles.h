//===- RowTiles.h - row tiles of a packed layer, their k steps -*- C++ -*-===//
//
// The packed float kernels compute the rows of a layer in tiles of up to
// 6 (AVX2) or 8 (AVX-512) rows while that many are left, then 4, 2 or 1.
// At a k step where every row of a tile
// has a zero input, each of the tile's accumulators would only add 0 · w:
// the kernels skip such steps. Inputs that come out of a ReLU are mostly
// zeros (the bundled model's feed-forward layers: 4% of the hidden values
// are non-zero in the encoder, 13-19% in the decoder); neighbouring rows
// share many of their zeros, so on that model a tile keeps about a sixth
// of its steps in the encoder and about half in the decoder, and the
// second feed-forward layer costs that much less.
//
// Skipping changes no result: an accumulator plus (±0 · w) is the
// accumulator itself, except that a sum of exactly zero may change its
// sign and that a weight of ±inf or NaN times zero would have given NaN.
// Inputs that are NaN count as non-zero. Everything here needs AVX2, as
// the kernels do (packed::availableOnThisCpu()).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_ROWTILES_H
#define RUNTIME_KERNELS_ROWTILES_H

#include <cstdint>
#include <vector>

namespace tfmc::runtime::packed {

/// Rows [row, row + rows) of a layer, with the k steps the tile runs.
struct RowTile {
  int64_t row = 0;
  int rows = 0;
  /// The tile's steps are RowTiles::steps[first, first + count); a count
  /// below zero means all k steps in order.
  int64_t first = 0;
  int64_t count = -1;
};

struct RowTiles {
  std::vector<RowTile> tiles;
  std::vector<int32_t> steps;

  /// The steps of tile `t` (nullptr for all k) and how many.
  const int32_t *stepsOf(const RowTile &t) const {
    return t.count < 0 ? nullptr : steps.data() + t.first;
  }
  static int64_t countOf(const RowTile &t, int64_t k) {
    return t.count < 0 ? k : t.count;
  }
};

/// Whether a layer's rows x ([m, k], row-major) are worth planning: its
/// first row is at least a sixteenth zeros (most of a ReLU output's row is,
/// 80-96% on the bundled model; almost nothing of a layer norm's or an
/// attention's) and its first row tile would keep at most 7/8 of its
/// steps.
bool worthSkipping(const float *x, int64_t m, int64_t k);

/// Splits `m` rows of x ([m, k], row-major) into tiles of `maxRows` (the
/// kernel's widest, 6 or 8) while that many are left, then 4, 2, 1, and, with
/// `skipZeros`, lists each tile's steps at which some row is non-zero.
/// Where there is little to skip the scan itself would cost more than it
/// saves, so a layer whose first row is less than a sixteenth zeros keeps
/// all its steps, and a tile that would keep more than 7/8 of its steps
/// keeps all of them, as do the tiles after it. Reuses the storage of
/// `plan`.
void planRowTiles(const float *x, int64_t m, int64_t k, bool skipZeros,
                  RowTiles &plan, int maxRows);

/// planRowTiles() for a bfloat16 layer's input in pairs (bfloat16Operands():
/// rows of k 32-bit words, each a pair of k): a step is a pair, zero where
/// both of its values are ±0, tested on the bits (never through a float
/// comparison, which a subnormal-as-zero mode would fool: a pair whose odd
/// value is zero reads as a subnormal float).
void planPairTiles(const uint32_t *pairs, int64_t m, int64_t k, bool skipZeros,
                   RowTiles &plan, int maxRows);

} // namespace tfmc::runtime::packed

#endif // RUNTIME_KERNELS_ROWTILES_H
