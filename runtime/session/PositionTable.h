//===- PositionTable.h - sinusoidal encodings, filled on demand -*- C++ -*-===//
//
// The compiled functions read a [max_len, d_model] table of sinusoidal
// positional encodings (model.json's "positional_encoding": "sinusoidal";
// learned tables are weights). A model may declare a max_len far beyond
// what it will ever be asked to translate (50,000,000 positions of 32 floats
// is 6.4 GB and two sines or cosines per float: over a minute), so the table
// is reserved whole, at its final address, and its rows are computed only
// when a call first needs them: ensure(rows) before each encode, decode or
// forward call. Pages never filled are never touched (Buffer.h: large
// buffers are fresh mappings).
//
// Calls on several threads may ensure() at once: rows are filled under a
// lock, and a caller that finds enough rows filled (an acquire load of the
// count the filler stored with release) reads them without one.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_POSITIONTABLE_H
#define RUNTIME_SESSION_POSITIONTABLE_H

#include "runtime/session/Buffer.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace tfmc::runtime {

class PositionTable {
public:
  /// Room for `maxLen` positions of `d` values; none computed yet.
  PositionTable(int64_t maxLen, int64_t d);
  PositionTable(const PositionTable &) = delete;
  PositionTable &operator=(const PositionTable &) = delete;

  /// The table, [maxLen, d], row-major; its address never changes. Only
  /// the rows ensure() asked for hold values.
  const float *data() const { return table.data(); }
  /// Rows computed so far.
  int64_t rows() const { return filled.load(std::memory_order_acquire); }
  /// Computes the first `rows` positions (at most maxLen) where they are
  /// not yet: pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(...),
  /// in double, rounded to float.
  void ensure(int64_t rows);

private:
  int64_t maxLen, d;
  Buffer<float> table;
  std::atomic<int64_t> filled{0};
  std::mutex mutex;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_POSITIONTABLE_H
