//===- PanelPrefetch.h - row tiles request the panels ahead ----*- C++ -*-===//
//
// While the row tiles of a packed layer run over one group of panels (a
// pair of them on AVX-512, one on AVX2), the next group is requested from
// memory so that it is in cache when the tiles reach it. With more than
// two row tiles, every tile requests an equal share of the group, its
// lines spread evenly over the tile's own k steps (ShareAhead), so the
// requests leave at one steady pace while all the tiles run; one or two
// tiles request, at each step, the rows of the group ahead that match the
// rows they read (RowsAhead).
//
// Until 2026-12-06 the first tile or two requested the whole group,
// whatever the number of tiles: at 64 rows (8 AVX-512 tiles) a quarter of
// the time carried every request and the rest none. A harness running a
// decoder step's float32 layers (`tfmc-bench-linear --step 6`'s shapes,
// one thread) through the library before and after, both loaded in one
// process and alternating step by step (medians of 150-300 steps each,
// Sapphire Rapids class Xeon): AVX-512 1.07-1.13x faster at 64 rows, 1.22x
// at 32, 1.12x at 24, 1.00-1.02x at 1, 8 and 16 (2 tiles: the rows as
// before); AVX2 (TFMC_KERNEL_ISA=avx2) 1.54x at 16 rows, 1.63x at 64; AVX2
// int8 1.04x at 16, 1.02x at 64; `tfmc translate` decoded batch 64 in
// 0.88x the time (6 alternating pairs). The AVX-512 int8 tiles keep their
// own scheme (PackedGemmAvx512.cpp): shares there were 1.06x slower at 64
// rows and level at 32, and even their old requests spelt with these
// classes ran 1.03-1.07x slower (their steps are short: each instruction
// shows).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_PANELPREFETCH_H
#define RUNTIME_KERNELS_PANELPREFETCH_H

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

namespace tfmc::runtime::packed {

/// Where a tile's requests go: into L1 (T0) or into L2 (T1).
enum class Request { IntoL1, IntoL2 };

/// Requests the cache line at `line`, into L1 or L2.
template <Request Into> inline void requestLine(const char *line) {
  _mm_prefetch(line, Into == Request::IntoL2 ? _MM_HINT_T1 : _MM_HINT_T0);
}

/// A tile that requests nothing.
struct NothingAhead {
  template <Request Into> void at(int64_t, int64_t) {}
};

/// The requests of a layer of one row tile: at each of its steps c, row c
/// of each of the `Panels` panels at `from` (`panelBytes` apart, rows
/// `RowBytes` apart): the rows it reads of its own panels. (A lone tile's
/// requests spread as ShareAhead spreads them were 1.07-1.12x slower at
/// 1-8 rows on the harness above.)
template <int Panels, int64_t RowBytes> struct RowsAhead {
  const char *from;
  int64_t panelBytes;

  template <Request Into> void at(int64_t, int64_t c) {
    for (int p = 0; p < Panels; ++p)
      requestLine<Into>(from + p * panelBytes + c * RowBytes);
  }
};

/// Tile `index` of `tiles`, running `steps` k steps: its share of the
/// `bytes` at `ahead`, whole lines spread evenly over its steps. The
/// group's lines are dealt out in order, as many to each tile (the last
/// tiles fewer, or none where there are more tiles than lines); a tile
/// without steps (every input of its rows zero) requests nothing, its
/// share left to the hardware's own prefetchers.
class ShareAhead {
public:
  ShareAhead(const char *ahead, int64_t bytes, int64_t tiles, int64_t index,
             int64_t steps) {
    if (steps <= 0 || tiles <= 0 || bytes <= 0)
      return;
    int64_t lines = (bytes + kLine - 1) / kLine;
    int64_t perTile = (lines + tiles - 1) / tiles;
    int64_t first = index * perTile;
    int64_t count = std::min(perTile, lines - first);
    if (count <= 0)
      return;
    next = from = ahead + first * kLine;
    perStep = (static_cast<uint64_t>(count * kLine) << kFraction) /
              static_cast<uint64_t>(steps);
  }

  /// At each step, the lines due by its end (step()).
  template <Request Into> void at(int64_t, int64_t) { step(requestLine<Into>); }

  /// One step: request(line) for each line due by its end, in order:
  /// usually one every few steps, or a few a step where the tile has few
  /// steps for its share; by the end of its last step, all of its share.
  template <class Fn> void step(Fn &&request) {
    done += perStep;
    for (const char *due = from + (done >> kFraction); next < due;
         next += kLine)
      request(next);
  }

private:
  static constexpr int64_t kLine = 64;
  /// Bits after the point of perStep and done (bytes, fixed point).
  static constexpr int kFraction = 16;
  const char *from = nullptr, *next = nullptr;
  uint64_t perStep = 0, done = 0;
};

} // namespace tfmc::runtime::packed

#endif // RUNTIME_KERNELS_PANELPREFETCH_H
