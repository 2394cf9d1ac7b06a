//===- OneDnnLinear.h - the library kernels' shared state -------*- C++ -*-===//
//
// Internal to runtime/kernels: the one object behind the library kernels
// (oneDNN primitives made on first use, weights packed into panels on
// first use, the first failure), used by the linear layers
// (OneDnnLinear.cpp), the output projections fused with a search
// (FusedProjection.cpp) and the layers a StepTeam shares (TeamLinear.h).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_ONEDNNLINEAR_H
#define RUNTIME_KERNELS_ONEDNNLINEAR_H

#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/ShortlistArgmax.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace tfmc::runtime::library {

struct LinearKey {
  int64_t m, k, n;
  int32_t activation;
  bool int8 = false;
  bool operator<(const LinearKey &o) const {
    return std::tie(m, k, n, activation, int8) <
           std::tie(o.m, o.k, o.n, o.activation, o.int8);
  }
};

/// An int8 weight in oneDNN's preferred layout, and its row sums.
struct PackedInt8Weight {
  dnnl::memory weights;
  std::vector<int32_t> rowSums;
};

struct LinearPrimitive {
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  dnnl::primitive primitive;
};

class OneDnn {
public:
  /// How a weight's panels store it (panels()).
  enum class PanelType { F32, F16, BF16, I8 };
  /// The float kernels' panel format of a float, half or bfloat16 type.
  static packed::PanelFormat panelFormat(PanelType type) {
    return type == PanelType::BF16  ? packed::PanelFormat::BF16
           : type == PanelType::F16 ? packed::PanelFormat::F16
                                    : packed::PanelFormat::F32;
  }

  static OneDnn &get() {
    static OneDnn instance;
    return instance;
  }

  /// tfm_rt_linear: y = act(x · Wᵀ + b), float32 weights; `packable`
  /// false keeps the packed kernels out (a weight with no stable address),
  /// `shareable` false a StepTeam's meeting (parts of a layer: every
  /// member meets once per layer, at the top).
  void linear(const MemRefDescriptor<3> &x, const MemRefDescriptor<2> &w,
              const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
              int32_t activation, bool packable = true, bool shareable = true);

  /// 16-bit weights: IEEE halves or, with `brain`, bfloat16.
  void linearF16(const MemRefDescriptor<3> &x,
                 const MemRefDescriptor<2, uint16_t> &w,
                 const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
                 int32_t activation, bool brain = false, bool shareable = true);

  /// A float32, float16 or bfloat16 layer (weight `w`, [n, k]) computed
  /// with the calling thread's StepTeam (TeamLinear.h); false: alone.
  bool teamLinear(const MemRefDescriptor<3> &x, const void *w, int64_t n,
                  int64_t k, const MemRefDescriptor<1> &b,
                  const MemRefDescriptor<3> &y, int32_t activation,
                  PanelType type);

  /// tfm_rt_linear_i8: int8 weights with per-row scales (the file's
  /// header says how). `shareable`: a StepTeam's members may compute it
  /// together (not a chunk of a larger layer, which only this thread runs).
  void linearI8(const MemRefDescriptor<3> &x,
                const MemRefDescriptor<2, int8_t> &w,
                const MemRefDescriptor<1> &wScale, const MemRefDescriptor<1> &b,
                const MemRefDescriptor<3> &y, int32_t activation,
                bool packable = true, bool shareable = true);

  /// How many panel copies of `weight` exist (without packing any).
  size_t panelCopies(const void *weight) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = packedPanels.find(weight);
    return it == packedPanels.end() ? 0 : it->second.size();
  }

  void release(const void *weight) {
    std::lock_guard<std::mutex> lock(mutex);
    packedInt8.erase(weight);
    packedPanels.erase(weight);
    shortlists.erase(weight);
  }

  void fail(const std::string &message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty())
      error = message;
  }

  std::string takeError();

  dnnl::stream &threadStream();

  static bool contiguous(const MemRefDescriptor<3> &d) {
    return d.strides[2] == 1 && d.strides[1] == d.sizes[2] &&
           d.strides[0] == d.sizes[1] * d.sizes[2];
  }

  /// Layers of more rows than this (the encoder's batch x source length)
  /// run in chunks of this many rows and a remainder. oneDNN primitives are
  /// made per row count and each holds its own JIT code, so without chunks
  /// every new batch shape compiled and kept one more (the cache grew
  /// without bound in a long run or a server); with them a (weight shape,
  /// activation) has at most kChunkRows of them, and fewer compile: the
  /// bundled model's encoder on 3,000 dev lines took 1.3-1.4 s instead of
  /// 1.6-1.9 s. A chunk of 256 rows already runs oneDNN's GEMM near its
  /// large-matrix rate.
  static constexpr int64_t kChunkRows = 256;

  /// Calls `body` on views of rows [r, r + kChunkRows) of x and y (flattened
  /// to [1, rows, width]; both contiguous, checked by the callers' layout
  /// tests on each view).
  template <typename Body>
  static void forEachChunk(const MemRefDescriptor<3> &x,
                           const MemRefDescriptor<3> &y, Body body) {
    int64_t rows = x.sizes[0] * x.sizes[1];
    auto view = [](const MemRefDescriptor<3> &d, int64_t first, int64_t count) {
      int64_t width = d.sizes[2];
      MemRefDescriptor<3> v = d;
      v.offset = d.offset + first * width;
      v.sizes[0] = 1;
      v.sizes[1] = count;
      v.strides[0] = count * width;
      v.strides[1] = width;
      return v;
    };
    for (int64_t r = 0; r < rows; r += kChunkRows) {
      int64_t count = std::min(kChunkRows, rows - r);
      body(view(x, r, count), view(y, r, count));
    }
  }

  /// Up to this many rows (decoder steps, beam batches), float32 and
  /// float16 layers run the packed-panel kernel, on the calling thread.
  /// Measured on the base model's decoder shapes, one thread: 70 GFLOP/s
  /// at 16 rows and 87 at 64 where oneDNN's inner product reaches 45-75;
  /// beam 4 on the bundled model (128 rows) 4.89 -> 4.63 s with 256 rather
  /// than 64. With more kernel threads (a batch too small for worker
  /// slices) it still beats oneDNN's parallel GEMM at these sizes (AMD
  /// EPYC, --threads 2, decoder seconds: base model batch 1 5.2 vs 6.0,
  /// batch 16 1.0 vs 2.4; bundled model beam 4 at batch 16 3.9 vs 4.8-5.3).
  /// The kernel threads split its columns instead (packedThreads): base
  /// model batch 1 5.5 -> 3.8-4.8 s, batch 8 1.3-1.7 -> 0.95-1.0 s; bundled
  /// model, 200 dev lines, batch 1 0.93 -> 0.58 s, batch 8 0.33 -> 0.16-0.21.
  static constexpr int64_t kPackedMaxRows = 256;

  static bool usePacked(int64_t m) {
    return m <= kPackedMaxRows && packed::availableOnThisCpu();
  }

  /// Kernel threads a packed layer's columns are split between: all of
  /// them once a layer has enough multiply-adds to pay for waking them
  /// (decoder steps of a small batch with --threads > 1; worker slices run
  /// with one kernel thread each).
  static int packedThreads(int64_t m, int64_t n, int64_t k) {
    int threads = omp_get_max_threads();
    return threads > 1 && m * n * k >= kMinSplitProducts ? threads : 1;
  }
  static constexpr int64_t kMinSplitProducts = int64_t(1) << 17;

  /// The weight at `weight` ([n, k] floats, halves or int8) in panel
  /// layout, packed on first use, for a call of `rows` rows: a float32
  /// weight that is all halves exactly has half panels for fewer than
  /// packed::kFloatPanelRows rows and float32 ones from there (the same
  /// results).
  const packed::PackedWeight &panels(const void *weight, int64_t n, int64_t k,
                                     PanelType type, int64_t rows);

  /// The output projection at `weight` ([n, k] floats or 16-bit halves of
  /// `type`) with `bias` prepared for greedy's int8 shortlist
  /// (ShortlistArgmax.h), made on first use; null where it cannot be (a
  /// value that is not finite).
  const ShortlistWeight *shortlist(const void *weight, const float *bias,
                                   int64_t n, int64_t k, PanelType type);

private:
  OneDnn() : engine(dnnl::engine::kind::cpu, 0) {}

  struct ShortlistEntry {
    const float *bias;
    int64_t n, k;
    PanelType type;
    std::unique_ptr<ShortlistWeight> prepared;
  };

  /// The int8 weight in the layout `layout` (what the primitive chose for
  /// it) and its row sums, made on first use.
  const PackedInt8Weight &packInt8(const int8_t *weight, int64_t n, int64_t k,
                                   const dnnl::memory::desc &layout);

  const LinearPrimitive &primitive(const LinearKey &key);

  dnnl::engine engine;
  std::mutex mutex;
  std::map<LinearKey, LinearPrimitive> cache;
  std::map<const void *, std::deque<PackedInt8Weight>> packedInt8;
  std::map<const void *, std::deque<packed::PackedWeight>> packedPanels;
  std::map<const void *, std::deque<ShortlistEntry>> shortlists;
  std::string error;
};

} // namespace tfmc::runtime::library

#endif // RUNTIME_KERNELS_ONEDNNLINEAR_H
