//===- OneDnnLinear.cpp - linear layers through oneDNN matmul -------------===//
//
// y[M, N] = act(x[M, K] · Wᵀ + b) with W in PyTorch's [N, K] layout, as a
// oneDNN inner product (forward inference) with a bias and an eltwise
// post-op. One primitive per (M, K, N, activation) is created on first use
// and cached; oneDNN 2.x exceptions are caught here and recorded for the
// runtime. Worker threads of a session may run the same primitive at once,
// so each thread has its own stream and scratchpad (user scratchpad mode:
// oneDNN's shared library scratchpad would tie a primitive to the thread
// that created it).
//
// Reduced-precision weights (tfm-quantize):
// * f16: the weight is widened to float32 per call into a per-thread buffer
//   (F16C, N·K conversions against 2·M·N·K flops: a few percent from the
//   16 rows where this kernel takes over) and run as above.
// * i8: each input row is quantized to [-63, 63] and stored offset by 64 as
//   u8 (Quantize.h); oneDNN's u8 x s8 -> s32 inner product runs on the
//   weight reordered once into its preferred layout; the result is
//   (acc - 64 · Σk W[n, k]) · xscale[m] · wscale[n] + b[n], then the
//   activation. With u8 inputs below 128 the pairwise int16 sums of AVX2's
//   vpmaddubsw cannot saturate, so the integers are exact.
//
//===----------------------------------------------------------------------===//
#include "frontends/model/Float16.h"
#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/Quantize.h"
#include "runtime/kernels/ArgmaxScan.h"
#include "runtime/kernels/TopKScan.h"
#include "runtime/kernels/RowTiles.h"
#include "runtime/kernels/StepTeam.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

using namespace tfmc::runtime;

namespace {

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

/// The activations as the loop kernels compute them (GELU in its exact erf
/// form).
float activate(float v, int32_t activation) {
  if (activation == static_cast<int32_t>(KernelActivation::Relu))
    return v > 0 ? v : 0;
  if (activation == static_cast<int32_t>(KernelActivation::Gelu))
    return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f));
  if (activation == static_cast<int32_t>(KernelActivation::Silu))
    return v / (1.0f + std::exp(-v));
  return v;
}

/// Widens n halves to floats (F16C where the CPU has it).
__attribute__((target("avx,f16c"))) void widenF16C(const uint16_t *in,
                                                   float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(in + i))));
  for (; i < n; ++i)
    out[i] = tfmc::halfToFloat(in[i]);
}

/// round-half-even(p[0..8] · inv) + offset as int32.
__attribute__((target("avx2"))) inline __m256i
quantize8(const float *p, __m256 inv, __m256i offset) {
  return _mm256_add_epi32(
      _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), inv)), offset);
}

/// Quantizes one input row to [-levels, levels] (as quantizeActivationRow)
/// and stores q + levels + 1 as unsigned bytes; returns the row's scale.
/// AVX2: vcvtps2dq rounds half to even like the scalar and loop kernels.
__attribute__((target("avx2"))) float quantizeRowU8Avx2(const float *x,
                                                        int64_t k,
                                                        uint8_t *out) {
  const __m256 signMask = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(signMask, _mm256_loadu_ps(x + i)));
  float lanes[8];
  _mm256_storeu_ps(lanes, vmax);
  float amax = 0;
  for (float l : lanes)
    amax = std::max(amax, l);
  for (; i < k; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  const float levels = static_cast<float>(kActivationLevels);
  const float inv = amax > 0 ? levels / amax : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i offset = _mm256_set1_epi32(kActivationLevels + 1);
  // 32 values at a time: int32 -> int16 -> uint8 (values in [1, 127]), the
  // packs interleave 128-bit lanes, a final permutation restores the order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  i = 0;
  for (; i + 32 <= k; i += 32) {
    __m256i ab = _mm256_packs_epi32(quantize8(x + i, vinv, offset), quantize8(x + i + 8, vinv, offset));
    __m256i cd =
        _mm256_packs_epi32(quantize8(x + i + 16, vinv, offset), quantize8(x + i + 24, vinv, offset));
    __m256i bytes =
        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), bytes);
  }
  for (; i < k; ++i)
    out[i] = static_cast<uint8_t>(
        static_cast<int>(std::nearbyint(x[i] * inv)) + kActivationLevels + 1);
  return amax / levels;
}

/// out[j] = act(float(acc[j] - offset·rowSums[j]) · (xScale · wScale[j]) +
/// bias[j]) over one output row; AVX2 for none/relu.
__attribute__((target("avx2,fma"))) void
dequantizeRowAvx2(const int32_t *acc, const int32_t *rowSums, int32_t offset,
                  float xScale, const float *wScale, const float *bias,
                  float *out, int64_t n, bool relu) {
  const __m256i voff = _mm256_set1_epi32(offset);
  const __m256 vxs = _mm256_set1_ps(xScale), zero = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i exact = _mm256_sub_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(acc + j)),
        _mm256_mullo_epi32(voff, _mm256_loadu_si256(
                                     reinterpret_cast<const __m256i *>(rowSums + j))));
    __m256 scale = _mm256_mul_ps(vxs, _mm256_loadu_ps(wScale + j));
    __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(exact), scale),
                             _mm256_loadu_ps(bias + j));
    if (relu)
      v = _mm256_max_ps(v, zero);
    _mm256_storeu_ps(out + j, v);
  }
  for (; j < n; ++j) {
    float v = static_cast<float>(acc[j] - offset * rowSums[j]) *
                  (xScale * wScale[j]) +
              bias[j];
    out[j] = relu && v < 0 ? 0.0f : v;
  }
}

bool haveAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

void widenHalves(const uint16_t *in, float *out, int64_t n) {
  // Every AVX2 processor has F16C (clang 14 cannot query "f16c" itself).
  if (haveAvx2()) {
    widenF16C(in, out, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = tfmc::halfToFloat(in[i]);
}

/// bfloat16 is the upper half of a float32.
void widenBFloat16(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(out + i, &bits, sizeof(float));
  }
}

struct LinearPrimitive {
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  dnnl::primitive primitive;
};

class OneDnn {
public:
  static OneDnn &get() {
    static OneDnn instance;
    return instance;
  }

  void linear(const MemRefDescriptor<3> &x, const MemRefDescriptor<2> &w,
              const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
              int32_t activation, bool packable = true) {
    int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
    if (m == 0)
      return;
    if (!contiguous(x) || !contiguous(y) || w.strides[1] != 1 ||
        w.strides[0] != k || b.strides[0] != 1 || y.sizes[2] != n ||
        w.sizes[1] != k) {
      fail("tfm_rt_linear: unexpected operand layout");
      return;
    }
    if (packable && inTeam() &&
        withTeam(w.aligned + w.offset, x.aligned + x.offset, m, k,
                 y.aligned + y.offset, n,
                 [&](const float *rows, int64_t total, float *out,
                     int64_t first, int64_t end) {
                   packed::linearColumns(
                       rows, total,
                       panels(w.aligned + w.offset, n, k, PanelType::F32),
                       b.aligned + b.offset, out + first * packed::kPanel, n,
                       first, end, activation, packed::preferredIsa());
                 }))
      return;
    if (m > kChunkRows) {
      // Large layers (the encoder's) run chunk by chunk: on oneDNN, except
      // where the AVX-512 packed kernel runs. Measured on the dev set's
      // encoder, one thread: AVX-512 host 0.655 -> 0.605 s (median of 5)
      // with packed chunks; AVX2 kernels against oneDNN's AVX2 GEMM
      // (TFMC_KERNEL_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2) 0.71 vs 0.74 s,
      // so AVX2 machines keep oneDNN. (Not when the caller said no: a
      // weight widened into scratch has no stable address to pack under.)
      // With more kernel threads oneDNN's parallel GEMM takes the chunks.
      // float32 inputs that are mostly zeros (a ReLU's) go to the packed
      // kernels on every ISA and thread count: they skip the zero steps
      // (RowTiles.h).
      bool packChunks =
          packable && ((packed::preferredIsa() == packed::Isa::Avx512 &&
                        omp_get_max_threads() == 1) ||
                       (packed::availableOnThisCpu() &&
                        packed::worthSkipping(x.aligned + x.offset, m, k)));
      forEachChunk(
          x, y,
          [&](const MemRefDescriptor<3> &xc, const MemRefDescriptor<3> &yc) {
            linear(xc, w, b, yc, activation, /*packable=*/packChunks);
          });
      return;
    }
    if (packable && usePacked(m)) {
      const packed::PackedWeight &pw =
          panels(w.aligned + w.offset, n, k, PanelType::F32);
      packed::linear(x.aligned + x.offset, m, pw, b.aligned + b.offset,
                     y.aligned + y.offset, activation, packed::preferredIsa(),
                     packedThreads(m, n, k));
      return;
    }
    try {
      const LinearPrimitive &p = primitive({m, k, n, activation});
      dnnl::memory src(p.src, engine, x.aligned + x.offset);
      dnnl::memory weights(p.weights, engine, w.aligned + w.offset);
      dnnl::memory bias(p.bias, engine, b.aligned + b.offset);
      dnnl::memory dst(p.dst, engine, y.aligned + y.offset);
      thread_local std::vector<char> scratch;
      if (scratch.size() < p.scratchpad.get_size())
        scratch.resize(p.scratchpad.get_size());
      dnnl::memory scratchpad(p.scratchpad, engine, scratch.data());
      dnnl::stream &stream = threadStream();
      p.primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_BIAS, bias},
                                   {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
      stream.wait();
    } catch (const dnnl::error &e) {
      fail(std::string("oneDNN: ") + e.what());
    }
  }

  /// 16-bit weights: IEEE halves or, with `brain`, bfloat16.
  void linearF16(const MemRefDescriptor<3> &x,
                 const MemRefDescriptor<2, uint16_t> &w,
                 const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
                 int32_t activation, bool brain = false) {
    int64_t n = w.sizes[0], k = w.sizes[1];
    int64_t m = x.sizes[0] * x.sizes[1];
    if (w.strides[1] != 1 || w.strides[0] != k || x.sizes[2] != k ||
        !contiguous(x) || !contiguous(y) || y.sizes[2] != n ||
        b.strides[0] != 1) {
      fail(brain ? "tfm_rt_linear_bf16: unexpected operand layout"
                 : "tfm_rt_linear_f16: unexpected operand layout");
      return;
    }
    if (m == 0)
      return;
    if (inTeam() &&
        withTeam(w.aligned + w.offset, x.aligned + x.offset, m, k,
                 y.aligned + y.offset, n,
                 [&](const float *rows, int64_t total, float *out,
                     int64_t first, int64_t end) {
                   packed::linearColumns(
                       rows, total,
                       panels(w.aligned + w.offset, n, k,
                              brain ? PanelType::BF16 : PanelType::F16),
                       b.aligned + b.offset, out + first * packed::kPanel, n,
                       first, end, activation, packed::preferredIsa());
                 }))
      return;
    if (usePacked(m)) {
      // Halves stay halves: the kernel widens them, half the bytes move.
      const packed::PackedWeight &pw =
          panels(w.aligned + w.offset, n, k,
                 brain ? PanelType::BF16 : PanelType::F16);
      packed::linear(x.aligned + x.offset, m, pw, b.aligned + b.offset,
                     y.aligned + y.offset, activation, packed::preferredIsa(),
                     packedThreads(m, n, k));
      return;
    }
    thread_local std::vector<float> wide;
    if (wide.size() < static_cast<size_t>(n * k))
      wide.resize(n * k);
    if (brain)
      widenBFloat16(w.aligned + w.offset, wide.data(), n * k);
    else
      widenHalves(w.aligned + w.offset, wide.data(), n * k);
    MemRefDescriptor<2> w32{wide.data(), wide.data(), 0, {n, k}, {k, 1}};
    linear(x, w32, b, y, activation, /*packable=*/false);
  }

  /// The outputs linear() or linearF16() would give for x, computed
  /// exactly as they compute them, fed to each row's scan (ArgmaxScan or
  /// TopKScan: `scans[r].add(values, first, count, exclusions)`, ids in
  /// `never` and eos unless allow[r] excluded) a block of columns at a
  /// time: where they run the packed kernels (decoder steps), blocks of
  /// about 256 KB that stay in cache (whole chunks of TopKScan::kChunk
  /// columns), so the [m, n] outputs are never written; otherwise the
  /// whole output at once. False (after fail()) when the operands are not
  /// laid out as expected.
  template <typename Weight, typename RowScan>
  bool scanOutputs(const char *kernel, const MemRefDescriptor<3> &x,
                   const Weight &w, const MemRefDescriptor<1> &b, bool brain,
                   const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                   const MemRefDescriptor<1, int32_t> &allow,
                   std::vector<RowScan> &scans) {
    constexpr bool half = sizeof(*w.aligned) == 2;
    int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
    if (!contiguous(x) || w.strides[1] != 1 || w.strides[0] != k ||
        w.sizes[1] != k || b.strides[0] != 1 || b.sizes[0] != n ||
        allow.sizes[0] != m || static_cast<int64_t>(scans.size()) != m ||
        (never.sizes[0] > 0 && never.strides[0] != 1) ||
        (m > 0 && allow.strides[0] != 1)) {
      fail(std::string(kernel) + ": unexpected operand layout");
      return false;
    }
    if (m == 0)
      return true;
    ScanExclusions excluded;
    excluded.never = never.aligned + never.offset;
    excluded.neverCount = never.sizes[0];
    excluded.eos = eos;
    const int32_t *allowed = allow.aligned + allow.offset;
    auto scan = [&](const float *values, int64_t ld, int64_t first,
                    int64_t count) {
      for (int64_t r = 0; r < m; ++r) {
        excluded.allowEos = allowed[r] != 0;
        scans[r].add(values + r * ld, first, count, excluded);
      }
    };
    const float *bias = b.aligned + b.offset;
    thread_local std::vector<float> block;
    if (usePacked(m)) {
      const packed::PackedWeight &pw = panels(
          w.aligned + w.offset, n, k,
          !half ? PanelType::F32 : brain ? PanelType::BF16 : PanelType::F16);
      // Blocks of whole chunks (and so of whole panel pairs), m x width
      // floats of about 256 KB.
      static_assert(TopKScan::kChunk % (2 * packed::kPanel) == 0);
      int64_t width = std::clamp<int64_t>((int64_t(1) << 16) / m,
                                          TopKScan::kChunk, 8192);
      width -= width % TopKScan::kChunk;
      int64_t blockPanels = width / packed::kPanel;
      if (block.size() < static_cast<size_t>(m * width))
        block.resize(m * width);
      int threads = packedThreads(m, n, k);
      for (int64_t p = 0; p < packed::panelCount(n); p += blockPanels) {
        int64_t end = std::min(packed::panelCount(n), p + blockPanels);
        packed::linearColumns(x.aligned + x.offset, m, pw, bias, block.data(),
                              width, p, end,
                              static_cast<int32_t>(KernelActivation::None),
                              packed::preferredIsa(), threads);
        int64_t first = p * packed::kPanel;
        scan(block.data(), width, first,
             std::min(n, end * packed::kPanel) - first);
      }
    } else {
      if (block.size() < static_cast<size_t>(m * n))
        block.resize(m * n);
      MemRefDescriptor<3> y{block.data(), block.data(), 0, {1, m, n},
                            {m * n, n, 1}};
      if constexpr (half)
        linearF16(x, w, b, y, static_cast<int32_t>(KernelActivation::None),
                  brain);
      else
        linear(x, w, b, y, static_cast<int32_t>(KernelActivation::None));
      scan(block.data(), n, 0, n);
    }
    return true;
  }

  /// tfm.linear_argmax: each row's greedy choice (ArgmaxScan.h) among the
  /// outputs linear() or linearF16() would give (scanOutputs).
  template <typename Weight>
  void linearArgmax(const MemRefDescriptor<3> &x, const Weight &w,
                    const MemRefDescriptor<1> &b,
                    const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                    const MemRefDescriptor<1, int32_t> &allow,
                    const MemRefDescriptor<1, int32_t> &out,
                    bool brain = false) {
    int64_t m = x.sizes[0] * x.sizes[1];
    if (out.sizes[0] != m || (m > 0 && out.strides[0] != 1)) {
      fail("tfm_rt_linear_argmax: unexpected operand layout");
      return;
    }
    if (teamArgmax(x, w, b, brain, never, eos, allow, out))
      return;
    thread_local std::vector<ArgmaxScan> scans;
    scans.assign(m, ArgmaxScan());
    if (!scanOutputs("tfm_rt_linear_argmax", x, w, b, brain, never, eos,
                     allow, scans))
      return;
    int32_t *tokens = out.aligned + out.offset;
    for (int64_t r = 0; r < m; ++r)
      tokens[r] = scans[r].best;
  }

  /// tfm.linear_topk: each row's best `candidates` allowed ids and their
  /// log-probabilities (TopKScan.h) among the outputs linear() or
  /// linearF16() would give (scanOutputs).
  template <typename Weight>
  void linearTopk(const MemRefDescriptor<3> &x, const Weight &w,
                  const MemRefDescriptor<1> &b,
                  const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                  const MemRefDescriptor<1, int32_t> &allow,
                  const MemRefDescriptor<2> &values,
                  const MemRefDescriptor<2, int32_t> &ids,
                  bool brain = false) {
    int64_t m = x.sizes[0] * x.sizes[1], count = values.sizes[1];
    if (values.sizes[0] != m || ids.sizes[0] != m || ids.sizes[1] != count ||
        (m > 0 && (values.strides[1] != 1 || ids.strides[1] != 1))) {
      fail("tfm_rt_linear_topk: unexpected operand layout");
      return;
    }
    thread_local std::vector<TopKScan> scans;
    scans.resize(m);
    for (TopKScan &scan : scans)
      scan.reset(count);
    if (!scanOutputs("tfm_rt_linear_topk", x, w, b, brain, never, eos, allow,
                     scans))
      return;
    for (int64_t r = 0; r < m; ++r)
      scans[r].write(values.aligned + values.offset + r * values.strides[0],
                     ids.aligned + ids.offset + r * ids.strides[0], count);
  }

  void linearI8(const MemRefDescriptor<3> &x,
                const MemRefDescriptor<2, int8_t> &w,
                const MemRefDescriptor<1> &wScale,
                const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
                int32_t activation, bool packable = true) {
    int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
    if (m == 0)
      return;
    if (!contiguous(x) || !contiguous(y) || w.strides[1] != 1 ||
        w.strides[0] != k || w.sizes[1] != k || y.sizes[2] != n ||
        b.strides[0] != 1 || wScale.strides[0] != 1) {
      fail("tfm_rt_linear_i8: unexpected operand layout");
      return;
    }
    if (m > kChunkRows) {
      forEachChunk(x, y, [&](const MemRefDescriptor<3> &xc,
                             const MemRefDescriptor<3> &yc) {
        linearI8(xc, w, wScale, b, yc, activation, /*packable=*/false);
      });
      return;
    }
    try {
      const int8_t *weight = w.aligned + w.offset;
      // A team step's members (at most kPackedMaxRows rows each) run the
      // panels, together when they can.
      bool team = packable && inTeam();
      bool usePanels = packable && (usePacked(m) || team);
      const packed::PackedWeight *panelWeight =
          usePanels ? &panels(weight, n, k, PanelType::I8) : nullptr;
      const LinearPrimitive *p =
          usePanels ? nullptr : &primitive({m, k, n, 0, /*int8=*/true});
      const PackedInt8Weight *reordered =
          usePanels ? nullptr : &packInt8(weight, n, k, p->weights);
      const int32_t *rowSums =
          usePanels ? panelWeight->rowSums.data() : reordered->rowSums.data();
      // Quantize the rows; store q + 64 as u8 (rows kPadded apart for the
      // panel kernel, whose padding bytes meet zero weights: their values,
      // left from earlier calls, do not matter).
      int64_t ldq = usePanels ? panelWeight->kPadded : k;
      thread_local std::vector<int8_t> q;
      thread_local std::vector<float> rowScales;
      thread_local std::vector<int32_t> acc;
      q.resize(m * ldq);
      rowScales.resize(m);
      acc.resize(m * n);
      const float *in = x.aligned + x.offset;
      bool avx2 = haveAvx2();
      for (int64_t r = 0; r < m; ++r) {
        int8_t *row = q.data() + r * ldq;
        if (avx2) {
          rowScales[r] = quantizeRowU8Avx2(in + r * k, k,
                                           reinterpret_cast<uint8_t *>(row));
          continue;
        }
        rowScales[r] =
            quantizeActivationRow(in + r * k, k, kActivationLevels, row);
        for (int64_t i = 0; i < k; ++i)
          row[i] = static_cast<int8_t>(row[i] + kActivationLevels + 1);
      }
      const auto *xq = reinterpret_cast<const uint8_t *>(q.data());
      if (team &&
          withTeam(weight, xq, m, ldq, acc.data(), n,
                   [&](const uint8_t *rows, int64_t total, int32_t *out,
                       int64_t first, int64_t end) {
                     packed::int8ProductsColumns(rows, total, *panelWeight,
                                                 out, first, end);
                   })) {
        // acc holds this member's rows.
      } else if (usePanels) {
        packed::int8Products(xq, m, *panelWeight, acc.data(),
                             packed::preferredIsa(), packedThreads(m, n, k));
      } else {
        dnnl::memory src(p->src, engine, q.data());
        dnnl::memory dst(p->dst, engine, acc.data());
        thread_local std::vector<char> scratch;
        if (scratch.size() < p->scratchpad.get_size())
          scratch.resize(p->scratchpad.get_size());
        dnnl::memory scratchpad(p->scratchpad, engine, scratch.data());
        dnnl::stream &stream = threadStream();
        p->primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                      {DNNL_ARG_WEIGHTS, reordered->weights},
                                      {DNNL_ARG_DST, dst},
                                      {DNNL_ARG_SCRATCHPAD, scratchpad}});
        stream.wait();
      }
      const float *scales = wScale.aligned + wScale.offset;
      const float *bias = b.aligned + b.offset;
      float *out = y.aligned + y.offset;
      const int32_t offset = kActivationLevels + 1;
      bool vectorEpilogue =
          avx2 && (activation == static_cast<int32_t>(KernelActivation::None) ||
                   activation == static_cast<int32_t>(KernelActivation::Relu));
      for (int64_t r = 0; r < m; ++r) {
        const int32_t *a = acc.data() + r * n;
        float *o = out + r * n;
        if (vectorEpilogue) {
          dequantizeRowAvx2(
              a, rowSums, offset, rowScales[r], scales, bias, o,
              n, activation == static_cast<int32_t>(KernelActivation::Relu));
          continue;
        }
        for (int64_t j = 0; j < n; ++j) {
          int32_t exact = a[j] - offset * rowSums[j];
          float v = static_cast<float>(exact) * (rowScales[r] * scales[j]) +
                    bias[j];
          o[j] = activate(v, activation);
        }
      }
    } catch (const dnnl::error &e) {
      fail(std::string("oneDNN: ") + e.what());
    }
  }

  /// Whether the calling thread runs a decoder step in a StepTeam (and the
  /// packed kernels, which teams share, run here).
  static bool inTeam() {
    int member;
    return StepTeam::current(member) && packed::availableOnThisCpu();
  }

  /// A packed layer computed with the other members of the calling
  /// thread's StepTeam, when they are at the same layer: every member's
  /// rows (`ldx` inputs apart) are gathered, this member computes its
  /// share of the panels for all of them, `columns(rows, total, out,
  /// firstPanel, endPanel)` writing outputs (r, c) to out[r · n + c], and
  /// copies its own rows of every member's share to y ([m, n]). False
  /// (nothing written): the caller computes its rows alone.
  template <typename In, typename Out, typename Columns>
  static bool withTeam(const void *layer, const In *x, int64_t m, int64_t ldx,
                       Out *y, int64_t n, Columns columns) {
    int member;
    StepTeam *team = StepTeam::current(member);
    const TeamOffer *all = nullptr;
    if (!team || !team->meet({layer, m, x}, all))
      return false;
    int members = team->size();
    int64_t total = 0, before = 0;
    for (int p = 0; p < members; ++p) {
      if (p == member)
        before = total;
      total += all[p].rows;
    }
    // Every member sees the same offers: they all decline together.
    if (total > kPackedMaxRows)
      return false;
    thread_local std::vector<In> gathered;
    thread_local std::vector<Out> results;
    gathered.resize(total * ldx);
    results.resize(total * n);
    int64_t at = 0;
    for (int p = 0; p < members; ++p) {
      std::memcpy(gathered.data() + at * ldx, all[p].input,
                  all[p].rows * ldx * sizeof(In));
      at += all[p].rows;
    }
    int64_t panelsOfN = packed::panelCount(n);
    auto [first, end] = packed::panelShare(panelsOfN, member, members);
    if (first < end)
      columns(gathered.data(), total, results.data(), first, end);
    if (!team->publish(results.data()))
      return false;
    for (int p = 0; p < members; ++p) {
      auto [f, e] = packed::panelShare(panelsOfN, p, members);
      if (f >= e)
        continue;
      int64_t col = f * packed::kPanel,
              width = std::min(n, e * packed::kPanel) - col;
      const Out *share = static_cast<const Out *>(all[p].result);
      for (int64_t r = 0; r < m; ++r)
        std::memcpy(y + r * n + col, share + (before + r) * n + col,
                    width * sizeof(Out));
    }
    return true;
  }

  /// tfm.linear_argmax with the other members of a StepTeam (withTeam):
  /// each member scans its share of the columns for every member's rows,
  /// and each row's choice is merged from the shares in id order. Exact:
  /// a later share's choice replaces an earlier one's only when strictly
  /// greater, as in one scan; where a share's choice is a NaN taken first
  /// the merge cannot tell what one scan would have done, and the member
  /// scans its own rows again alone. False: the caller scans alone.
  template <typename Weight>
  bool teamArgmax(const MemRefDescriptor<3> &x, const Weight &w,
                  const MemRefDescriptor<1> &b, bool brain,
                  const MemRefDescriptor<1, int32_t> &never, int64_t eos,
                  const MemRefDescriptor<1, int32_t> &allow,
                  const MemRefDescriptor<1, int32_t> &out) {
    constexpr bool half = sizeof(*w.aligned) == 2;
    int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
    // Layouts scanOutputs would refuse are left to it (alone).
    if (!inTeam() || !contiguous(x) || w.strides[1] != 1 ||
        w.strides[0] != k || w.sizes[1] != k || b.strides[0] != 1 ||
        b.sizes[0] != n || allow.sizes[0] != m || allow.strides[0] != 1 ||
        (never.sizes[0] > 0 && never.strides[0] != 1) || m == 0)
      return false;
    int member;
    StepTeam *team = StepTeam::current(member);
    const TeamOffer *all = nullptr;
    TeamOffer mine{w.aligned + w.offset, m, x.aligned + x.offset};
    mine.extra = allow.aligned + allow.offset;
    if (!team->meet(mine, all))
      return false;
    int members = team->size();
    int64_t total = 0, before = 0;
    for (int p = 0; p < members; ++p) {
      if (p == member)
        before = total;
      total += all[p].rows;
    }
    if (total > kPackedMaxRows)
      return false;
    thread_local std::vector<float> gathered, block;
    thread_local std::vector<int32_t> allowed;
    thread_local std::vector<ArgmaxScan> partial;
    gathered.resize(total * k);
    allowed.resize(total);
    int64_t at = 0;
    for (int p = 0; p < members; ++p) {
      std::memcpy(gathered.data() + at * k, all[p].input,
                  all[p].rows * k * sizeof(float));
      std::memcpy(allowed.data() + at, all[p].extra,
                  all[p].rows * sizeof(int32_t));
      at += all[p].rows;
    }
    partial.assign(total, ArgmaxScan());
    const packed::PackedWeight &pw = panels(
        w.aligned + w.offset, n, k,
        !half ? PanelType::F32 : brain ? PanelType::BF16 : PanelType::F16);
    auto [first, end] =
        packed::panelShare(packed::panelCount(n), member, members);
    ScanExclusions excluded;
    excluded.never = never.aligned + never.offset;
    excluded.neverCount = never.sizes[0];
    excluded.eos = eos;
    // Blocks of whole panel pairs, about 256 KB of outputs.
    int64_t width = std::clamp<int64_t>((int64_t(1) << 16) / total,
                                        2 * packed::kPanel, 8192);
    width -= width % (2 * packed::kPanel);
    int64_t blockPanels = width / packed::kPanel;
    if (block.size() < static_cast<size_t>(total * width))
      block.resize(total * width);
    for (int64_t p = first; p < end; p += blockPanels) {
      int64_t stop = std::min(end, p + blockPanels);
      packed::linearColumns(gathered.data(), total, pw, b.aligned + b.offset,
                            block.data(), width, p, stop,
                            static_cast<int32_t>(KernelActivation::None),
                            packed::preferredIsa());
      int64_t col = p * packed::kPanel,
              count = std::min(n, stop * packed::kPanel) - col;
      for (int64_t r = 0; r < total; ++r) {
        excluded.allowEos = allowed[r] != 0;
        partial[r].add(block.data() + r * width, col, count, excluded);
      }
    }
    if (!team->publish(partial.data()))
      return false;
    int32_t *tokens = out.aligned + out.offset;
    for (int64_t r = 0; r < m; ++r) {
      ArgmaxScan best;
      for (int p = 0; p < members; ++p) {
        const ArgmaxScan &s =
            static_cast<const ArgmaxScan *>(all[p].result)[before + r];
        if (s.best < 0 || (best.best >= 0 && std::isnan(best.value)))
          continue;
        if (best.best >= 0 && std::isnan(s.value))
          return false; // one scan might have chosen a later id
        if (best.best < 0 || s.value > best.value)
          best = s;
      }
      tokens[r] = best.best;
    }
    return true;
  }

  void release(const void *weight) {
    std::lock_guard<std::mutex> lock(mutex);
    packedInt8.erase(weight);
    packedPanels.erase(weight);
  }

  void fail(const std::string &message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty())
      error = message;
  }

  std::string takeError() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string e = std::move(error);
    error.clear();
    return e;
  }

private:
  OneDnn() : engine(dnnl::engine::kind::cpu, 0) {}

  dnnl::stream &threadStream() {
    thread_local std::unique_ptr<dnnl::stream> stream;
    if (!stream)
      stream = std::make_unique<dnnl::stream>(engine);
    return *stream;
  }

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
    auto view = [](const MemRefDescriptor<3> &d, int64_t first,
                   int64_t count) {
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

  enum class PanelType { F32, F16, BF16, I8 };

  /// The weight at `weight` ([n, k] floats, halves or int8) in panel
  /// layout, packed on first use.
  const packed::PackedWeight &panels(const void *weight, int64_t n, int64_t k,
                                     PanelType type) {
    bool brain = type == PanelType::BF16;
    bool half = type == PanelType::F16 || brain, int8 = type == PanelType::I8;
    std::lock_guard<std::mutex> lock(mutex);
    std::deque<packed::PackedWeight> &copies = packedPanels[weight];
    for (const packed::PackedWeight &c : copies)
      if (c.n == n && c.k == k && c.half == half && c.brain == brain &&
          c.int8 == int8)
        return c;
    const auto *bits = static_cast<const uint16_t *>(weight);
    copies.push_back(
        int8    ? packed::packInt8(static_cast<const int8_t *>(weight), n, k)
        : brain ? packed::packBFloat16(bits, n, k)
        : half  ? packed::packHalves(bits, n, k)
                : packed::pack(static_cast<const float *>(weight), n, k));
    return copies.back();
  }

  /// The int8 weight in the layout `layout` (what the primitive chose for
  /// it) and its row sums, made on first use.
  const PackedInt8Weight &packInt8(const int8_t *weight, int64_t n, int64_t k,
                                   const dnnl::memory::desc &layout) {
    std::lock_guard<std::mutex> lock(mutex);
    std::deque<PackedInt8Weight> &copies = packedInt8[weight];
    for (const PackedInt8Weight &c : copies)
      if (c.weights.get_desc() == layout)
        return c;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    PackedInt8Weight packed;
    packed.weights = dnnl::memory(layout, engine);
    dnnl::memory plain({{n, k}, dt::s8, tag::oi}, engine,
                       const_cast<int8_t *>(weight));
    dnnl::stream stream(engine);
    dnnl::reorder(plain, packed.weights).execute(stream, plain, packed.weights);
    stream.wait();
    packed.rowSums.resize(n);
    for (int64_t r = 0; r < n; ++r) {
      int32_t sum = 0;
      for (int64_t c = 0; c < k; ++c)
        sum += weight[r * k + c];
      packed.rowSums[r] = sum;
    }
    // A deque keeps references to earlier copies valid.
    copies.push_back(std::move(packed));
    return copies.back();
  }

  const LinearPrimitive &primitive(const LinearKey &key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    LinearPrimitive p;
    if (key.int8) {
      p.src = dnnl::memory::desc({key.m, key.k}, dt::u8, tag::ab);
      p.weights = dnnl::memory::desc({key.n, key.k}, dt::s8, tag::any);
      p.dst = dnnl::memory::desc({key.m, key.n}, dt::s32, tag::ab);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::inner_product_forward::desc desc(
          dnnl::prop_kind::forward_inference, p.src, p.weights, p.dst);
      dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine);
      p.weights = pd.weights_desc();
      p.scratchpad = pd.scratchpad_desc();
      p.primitive = dnnl::inner_product_forward(pd);
      return cache.emplace(key, std::move(p)).first->second;
    }
    p.src = dnnl::memory::desc({key.m, key.k}, dt::f32, tag::ab);
    // An inner product takes W in PyTorch's [N, K] ("oi") layout as is.
    p.weights = dnnl::memory::desc({key.n, key.k}, dt::f32, tag::oi);
    p.bias = dnnl::memory::desc({key.n}, dt::f32, tag::a);
    p.dst = dnnl::memory::desc({key.m, key.n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.activation != static_cast<int32_t>(KernelActivation::None)) {
      dnnl::post_ops ops;
      // swish with alpha 1 is x * sigmoid(x).
      auto algorithm =
          key.activation == static_cast<int32_t>(KernelActivation::Relu)
              ? dnnl::algorithm::eltwise_relu
          : key.activation == static_cast<int32_t>(KernelActivation::Silu)
              ? dnnl::algorithm::eltwise_swish
              : dnnl::algorithm::eltwise_gelu_erf;
      float alpha =
          key.activation == static_cast<int32_t>(KernelActivation::Silu)
              ? 1.0f
              : 0.0f;
      ops.append_eltwise(1.0f, algorithm, alpha, 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           p.src, p.weights, p.bias, p.dst);
    dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine);
    p.scratchpad = pd.scratchpad_desc();
    p.primitive = dnnl::inner_product_forward(pd);
    return cache.emplace(key, std::move(p)).first->second;
  }

  dnnl::engine engine;
  std::mutex mutex;
  std::map<LinearKey, LinearPrimitive> cache;
  std::map<const void *, std::deque<PackedInt8Weight>> packedInt8;
  std::map<const void *, std::deque<packed::PackedWeight>> packedPanels;
  std::string error;
};

} // namespace

extern "C" void _mlir_ciface_tfm_rt_linear(MemRefDescriptor<3> *x,
                                           MemRefDescriptor<2> *w,
                                           MemRefDescriptor<1> *b,
                                           MemRefDescriptor<3> *y,
                                           int32_t activation) {
  OneDnn::get().linear(*x, *w, *b, *y, activation);
}

extern "C" void
_mlir_ciface_tfm_rt_linear_f16(MemRefDescriptor<3> *x,
                               MemRefDescriptor<2, uint16_t> *w,
                               MemRefDescriptor<1> *b, MemRefDescriptor<3> *y,
                               int32_t activation) {
  OneDnn::get().linearF16(*x, *w, *b, *y, activation);
}

extern "C" void _mlir_ciface_tfm_rt_linear_i8(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, int8_t> *w,
    MemRefDescriptor<1> *scale, MemRefDescriptor<1> *b, MemRefDescriptor<3> *y,
    int32_t activation) {
  OneDnn::get().linearI8(*x, *w, *scale, *b, *y, activation);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  OneDnn::get().linearArgmax(*x, *w, *b, *never, eos, *allow, *out);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  OneDnn::get().linearArgmax(*x, *w, *b, *never, eos, *allow, *out);
}

extern "C" void
_mlir_ciface_tfm_rt_linear_bf16(MemRefDescriptor<3> *x,
                                MemRefDescriptor<2, uint16_t> *w,
                                MemRefDescriptor<1> *b, MemRefDescriptor<3> *y,
                                int32_t activation) {
  OneDnn::get().linearF16(*x, *w, *b, *y, activation, /*brain=*/true);
}

extern "C" void _mlir_ciface_tfm_rt_linear_argmax_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out) {
  OneDnn::get().linearArgmax(*x, *w, *b, *never, eos, *allow, *out,
                             /*brain=*/true);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  OneDnn::get().linearTopk(*x, *w, *b, *never, eos, *allow, *values, *ids);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  OneDnn::get().linearTopk(*x, *w, *b, *never, eos, *allow, *values, *ids);
}

extern "C" void _mlir_ciface_tfm_rt_linear_topk_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids) {
  OneDnn::get().linearTopk(*x, *w, *b, *never, eos, *allow, *values, *ids,
                           /*brain=*/true);
}

void tfmc::runtime::releaseKernelWeights(const void *weight) {
  OneDnn::get().release(weight);
}

bool tfmc::runtime::haveLibraryKernels() { return true; }

int64_t tfmc::runtime::libraryKernelMinRows() {
  return packed::availableOnThisCpu() ? 1 : 8;
}

void tfmc::runtime::setKernelThreads(int threads) {
  omp_set_num_threads(threads);
}

int tfmc::runtime::kernelThreads() { return omp_get_max_threads(); }

std::string tfmc::runtime::takeKernelError() {
  return OneDnn::get().takeError();
}

std::vector<std::pair<std::string, void *>> tfmc::runtime::kernelSymbols() {
  auto symbols = bufferPoolSymbols();
  for (auto &symbol : searchKernelSymbols())
    symbols.push_back(symbol);
  symbols.emplace_back("_mlir_ciface_tfm_rt_linear_topk",
                       reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_topk));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_topk_f16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_topk_f16));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_topk_bf16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_topk_bf16));
  symbols.emplace_back("_mlir_ciface_tfm_rt_linear",
                       reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_f16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_f16));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_i8",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_i8));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_argmax",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_argmax));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_argmax_f16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_argmax_f16));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_bf16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_bf16));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_argmax_bf16",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_argmax_bf16));
  return symbols;
}
