//===- tfmc/Profile.h - where a translation's time went ---------*- C++ -*-===//
//
// Part of tfmc's public C++ API. A Translator loaded with
// `LoadOptions::profile` runs a variant of the compiled model with a cycle
// counter read around every op; Translator::profile() returns what it
// counted since load (or the last reset) as a Profile, and formatProfile
// writes it as `tfmc profile` prints it (docs/profile.md).
//
//===----------------------------------------------------------------------===//
#ifndef TFMC_PROFILE_H
#define TFMC_PROFILE_H

#include "tfmc/Result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc {

/// One row: a compiled op, the rest of a compiled function outside its ops,
/// or one of the runtime's phases.
struct ProfileRow {
  /// "op", "function rest" or "runtime".
  std::string category;
  /// The compiled function ("encode", "decode_step", ...); "" for runtime
  /// rows.
  std::string function;
  /// The op as in `tfmc compile --emit=fused` ("tfm.linear"), its name in
  /// the model ("decoder_layers.0.feed_forward.linear1"; "" when it has
  /// none), and a short description (activation and weight, mask, ...).
  std::string kind, name, detail;
  int64_t calls = 0;
  double seconds = 0;
  /// Of the profile's wall time.
  double share = 0;
  /// Counted per the op's cost model (docs/profile.md), summed over calls;
  /// 0 for rows that are not ops.
  double flop = 0, bytes = 0;
  /// flop / seconds and bytes / seconds.
  double gflops = 0, gbs = 0;
  /// The op's roofline time, max(flop / peak rate of its arithmetic,
  /// bytes / memory bandwidth), over its measured time: 1 is the machine's
  /// limit; above 1 means its data came from caches, not memory.
  double roofline = 0;
  /// The arithmetic of the op's FLOP, whose peak its roofline uses:
  /// "float32" (the sgemm rate; float16 weights multiply in float32),
  /// "bfloat16" or "int8" (Profile's bfloat16Gflops, int8Gops); "" for rows
  /// that are not ops.
  std::string arithmetic;
};

/// A compiled function's calls and total time (ops and the rest).
struct ProfileFunction {
  std::string name;
  int64_t calls = 0;
  double seconds = 0;
};

struct Profile {
  /// "cpu: MODEL, ISA" and the limits measured when profiling started.
  std::string host;
  /// What the profiled model computes with (Translator::configuration()).
  std::string configuration;
  int threads = 1;
  double peakGflops = 0, bandwidthGBs = 0;
  /// The peak rates of bfloat16 and int8 products (the model's layers of
  /// those types only; else 0): the threads' AMX tile multiplies where the
  /// kernels run on tiles, else their vector instruction (vdpbf16ps;
  /// vpdpbusd, or AVX2's vpmaddubsw sequence), one thread's rate on
  /// registers alone times the threads. 0 (also where the CPU has no
  /// bfloat16 instruction: its layers multiply at the float32 rate) means
  /// the sgemm rate is used.
  double bfloat16Gflops = 0, int8Gops = 0;
  /// Time inside translate calls (translate, translateIds,
  /// translateStream) since load or the last reset.
  double wallSeconds = 0;
  std::vector<ProfileFunction> functions;
  /// Sorted by time, largest first; the rows' seconds add up to
  /// wallSeconds (one thread; with more, compiled functions on worker
  /// threads add their time too).
  std::vector<ProfileRow> rows;
};

/// The profile as "md" (a Markdown table with a header of host and
/// totals), "json", "csv" (one line per row) or "svg" (a bar chart of the
/// rows); an error for any other format.
Result<std::string> formatProfile(const Profile &profile,
                                  const std::string &format);

} // namespace tfmc

#endif // TFMC_PROFILE_H
