//===- AmxTiles.h - the tile shape every AMX kernel here uses ---*- C++ -*-===//
//
// AMX's eight tile registers, each configured as 16 rows of 64 bytes (the
// largest shape): an int8 or bfloat16 operand of 16 rows × 64 bytes, or
// 16 × 16 int32 sums or float32 values. Loaded with LDTILECFG by the
// thread that uses them (the configuration is per thread) and given back
// with TILERELEASE when it is done, so that a thread between kernel calls
// carries no tile state. Needs the CPU's AMX and the operating system's
// leave (KernelIsa.h: packed::runs(Isa::Amx)).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_AMXTILES_H
#define RUNTIME_KERNELS_AMXTILES_H

#include <immintrin.h>

#include <cstdint>

namespace tfmc::runtime::amxtiles {

/// Rows of every tile, bytes of each of its rows, and a tile's bytes.
constexpr int kTileRows = 16;
constexpr int64_t kTileRowBytes = 64;
constexpr int64_t kTileBytes = kTileRows * kTileRowBytes;

/// LDTILECFG's 64-byte operand, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

/// All eight tiles 16 rows of 64 bytes, on the calling thread.
__attribute__((target("amx-tile"))) inline void configureTiles() {
  static const TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.bytesPerRow[t] = kTileRowBytes;
      c.rows[t] = kTileRows;
    }
    return c;
  }();
  _tile_loadconfig(&config);
}

} // namespace tfmc::runtime::amxtiles

#endif // RUNTIME_KERNELS_AMXTILES_H
