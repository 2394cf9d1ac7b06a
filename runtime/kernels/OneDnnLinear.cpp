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
#include "runtime/kernels/OneDnnLinear.h"

#include "frontends/model/Float16.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/Quantize.h"
#include "runtime/kernels/RowTiles.h"
#include "runtime/kernels/TeamLinear.h"

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
using namespace tfmc::runtime::library;

namespace {

/// The activations as the loop kernels compute them (GELU in its exact erf
/// form).
float activate(float v, int32_t activation) {
  if (activation == static_cast<int32_t>(KernelActivation::Relu))
    return v < 0 ? 0 : v; // a NaN stays, as in torch.relu
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

/// bfloat16 is the upper half of a float32 (subnormals read as zeros, as
/// the packed kernels read them: BFloat16Operands.h).
void widenBFloat16(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(bfloat16Operand(in[i])) << 16;
    std::memcpy(out + i, &bits, sizeof(float));
  }
}

} // namespace

namespace tfmc::runtime::library {

bool OneDnn::teamLinear(const MemRefDescriptor<3> &x, const void *w, int64_t n,
                        int64_t k, const MemRefDescriptor<1> &b,
                        const MemRefDescriptor<3> &y, int32_t activation,
                        PanelType type) {
  return inTeam() &&
         withTeam(w, b.aligned + b.offset,
                  4 * activation + static_cast<int>(type), x.aligned + x.offset,
                  x.sizes[0] * x.sizes[1], k, y.aligned + y.offset, n,
                  [&](const float *rows, int64_t total, float *out,
                      int64_t first, int64_t end) {
                    packed::linearColumns(
                        rows, total, panels(w, n, k, type, total),
                        b.aligned + b.offset, out + first * packed::kPanel, n,
                        first, end, activation, packed::preferredIsa());
                  });
}

/// Whether a layer of more than kChunkRows rows may run its chunks on the
/// packed panels (columns split between the kernel threads) at this
/// thread count: measured against oneDNN at one and two threads
/// (2026-12-06, bench/README's twenty-fourth session); with more, oneDNN's
/// parallel GEMM, which splits the rows too, keeps them until measured.
static bool panelChunkThreads() { return omp_get_max_threads() <= 2; }

void OneDnn::linear(const MemRefDescriptor<3> &x, const MemRefDescriptor<2> &w,
                    const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
                    int32_t activation, bool packable, bool shareable) {
  int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
  if (m == 0)
    return;
  if (!contiguous(x) || !contiguous(y) || w.strides[1] != 1 ||
      w.strides[0] != k || b.strides[0] != 1 || y.sizes[2] != n ||
      w.sizes[1] != k) {
    fail("tfm_rt_linear: unexpected operand layout");
    return;
  }
  if (packable && shareable &&
      teamLinear(x, w.aligned + w.offset, n, k, b, y, activation,
                 PanelType::F32))
    return;
  if (m > kChunkRows) {
    // Large layers (the encoder's) run chunk by chunk on the packed
    // kernels wherever they run, so that a row's outputs are the bits it
    // gets alone or in any batch (oneDNN's GEMM sums in an order that
    // depends on the row's place in its block: on AVX2 hosts, which kept
    // it until 2026-12-06, a batch of 64 scored in the sixth decimal
    // otherwise than the same sentences one by one). Measured on the dev
    // set's encoder, one thread: AVX-512 host 0.655 -> 0.605 s (median of
    // 5) against oneDNN; AVX2 kernels against oneDNN's AVX2 GEMM
    // (TFMC_KERNEL_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2) 0.71 vs 0.74 s on an
    // AMD EPYC, and on a Sapphire Rapids class Xeon (6 alternating runs,
    // batch 64) 0.611 -> 0.545 s (two threads 0.412 -> 0.383 s), the base
    // model's encoder at batch 64 1.170 -> 1.057 s. (Not when the caller
    // said no: a weight widened into scratch has no stable address to pack
    // under.) With two kernel threads too (panelChunkThreads()), each
    // chunk's columns split between them as the decoder's are: the dev
    // set's encoder on two threads 0.215-0.271 s with oneDNN's parallel
    // GEMM taking the chunks, 0.167-0.186 s packed (one thread 0.279-0.310
    // s; AMD EPYC Zen 5, AVX-512, 3 alternating runs), and the same bits
    // as one thread. float32 inputs that are mostly zeros (a ReLU's) go to
    // the packed kernels at every thread count: they skip the zero steps
    // (RowTiles.h).
    bool packChunks = packable && packed::availableOnThisCpu() &&
                      (panelChunkThreads() ||
                       packed::worthSkipping(x.aligned + x.offset, m, k));
    forEachChunk(
        x, y,
        [&](const MemRefDescriptor<3> &xc, const MemRefDescriptor<3> &yc) {
          linear(xc, w, b, yc, activation, /*packable=*/packChunks,
                 /*shareable=*/false);
        });
    return;
  }
  if (packable && usePacked(m)) {
    const packed::PackedWeight &pw =
        panels(w.aligned + w.offset, n, k, PanelType::F32, m);
    packed::linear(x.aligned + x.offset, m, pw, b.aligned + b.offset,
                   y.aligned + y.offset, activation, packed::preferredIsa(),
                   packedThreads(m, n, k));
    return;
  }
  try {
    // ReLU runs after the primitive, over output still in cache: oneDNN's
    // (alpha 0) is a vmaxps that turns NaN into 0, where torch.relu keeps
    // it.
    bool relu = activation == static_cast<int32_t>(KernelActivation::Relu);
    const LinearPrimitive &p = primitive(
        {m, k, n,
         relu ? static_cast<int32_t>(KernelActivation::None) : activation});
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
    if (relu) {
      float *out = y.aligned + y.offset;
      for (int64_t i = 0; i < m * n; ++i)
        out[i] = activate(out[i], activation);
    }
  } catch (const dnnl::error &e) {
    fail(std::string("oneDNN: ") + e.what());
  }
}

void OneDnn::linearF16(const MemRefDescriptor<3> &x,
                       const MemRefDescriptor<2, uint16_t> &w,
                       const MemRefDescriptor<1> &b,
                       const MemRefDescriptor<3> &y, int32_t activation,
                       bool brain, bool shareable) {
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
  if (shareable && teamLinear(x, w.aligned + w.offset, n, k, b, y, activation,
                              brain ? PanelType::BF16 : PanelType::F16))
    return;
  // float16 and bfloat16 chunks too, on their 16-bit panels rather than
  // oneDNN's sgemm over the widened weight (and, for bfloat16, the rounded
  // inputs), so that a row's outputs do not depend on its batch (linear()
  // above). float16, the dev set's encoder at beam 4: AMD EPYC Zen 5,
  // AVX-512, 0.399 -> 0.296 s on one thread, 0.176 -> 0.155 s on two (3
  // alternating runs, medians); with the AVX2 kernels
  // (TFMC_KERNEL_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2) there one thread lost
  // (0.821 -> 0.895 s) and two gained (0.537 -> 0.462 s), so AVX2 kept
  // oneDNN until 2026-12-06; on a Sapphire Rapids class Xeon with the AVX2
  // kernels, batch 64, 6 alternating runs: float16 0.746 -> 0.589 s,
  // bfloat16 0.786 -> 0.689 s, the base model's encoder at batch 64 float16
  // 1.261 -> 1.164 s and bfloat16 level (1.392 -> 1.393 s).
  bool panelChunks = packed::availableOnThisCpu() && panelChunkThreads();
  if (m > kChunkRows && (panelChunks || (brain && packed::bfloat16DotRuns()))) {
    // Chunk by chunk, so that a chunk's rounded inputs stay in L2 while
    // the weight's panels stream past once per chunk (in one call every
    // panel pair streamed all the rows from L3). Base model, batch 64
    // (2,048 encoder rows), AMD EPYC Zen 5, alternating runs: the
    // encoder's linear layers 0.382 -> 0.304 s on one thread (`tfmc
    // profile`, medians of 6), the encoder 0.297 -> 0.206 s on two
    // (`translate --stats`, medians of 6).
    forEachChunk(
        x, y,
        [&](const MemRefDescriptor<3> &xc, const MemRefDescriptor<3> &yc) {
          linearF16(xc, w, b, yc, activation, brain, /*shareable=*/false);
        });
    return;
  }
  // bfloat16 takes the packed kernels at any row count where they run
  // vdpbf16ps (twice sgemm's multiply rate); elsewhere a layer of more
  // than kPackedMaxRows rows that is not chunked (more than two kernel
  // threads), and every layer on a CPU without AVX2, goes to oneDNN's
  // sgemm on the rounded inputs (below), faster
  // there than the AVX2 kernel's widened pairs over all rows at once
  // (base model, batch 64, encoder: 0.85 s against 2.07 s a batch,
  // TFMC_KERNEL_ISA=avx2 on an AMD EPYC Zen 5, before chunks).
  if (usePacked(m) || (brain && packed::bfloat16DotRuns())) {
    // Halves stay halves: the kernel widens them, half the bytes move.
    const packed::PackedWeight &pw =
        panels(w.aligned + w.offset, n, k,
               brain ? PanelType::BF16 : PanelType::F16, m);
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
  if (brain) {
    // A bfloat16 layer multiplies its input rounded to bfloat16.
    thread_local std::vector<float> rounded;
    if (rounded.size() < static_cast<size_t>(m * k))
      rounded.resize(m * k);
    roundToBFloat16Operands(x.aligned + x.offset, m * k, rounded.data());
    MemRefDescriptor<3> in{rounded.data(),
                           rounded.data(),
                           0,
                           {x.sizes[0], x.sizes[1], k},
                           {x.sizes[1] * k, k, 1}};
    linear(in, w32, b, y, activation, /*packable=*/false);
    return;
  }
  linear(x, w32, b, y, activation, /*packable=*/false);
}

void OneDnn::linearI8(const MemRefDescriptor<3> &x,
                      const MemRefDescriptor<2, int8_t> &w,
                      const MemRefDescriptor<1> &wScale,
                      const MemRefDescriptor<1> &b,
                      const MemRefDescriptor<3> &y, int32_t activation,
                      bool packable, bool shareable) {
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
    // Chunk by chunk, on the packed kernels where they run (until
    // 2026-12-06 on oneDNN's int8 primitive): the products are exact
    // integers either way, so the outputs are the same bits. AMD EPYC
    // Zen 5, alternating runs, medians: the dev set's encoder at beam 4
    // 0.170 -> 0.133 s on one thread, 0.100 -> 0.083 s on two; the base
    // model's at batch 64 0.443 -> 0.284 s; with the AVX2 kernels against
    // oneDNN's AVX2 code (TFMC_KERNEL_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2)
    // 0.361 -> 0.344 s and 0.201 -> 0.196 s.
    forEachChunk(
        x, y,
        [&](const MemRefDescriptor<3> &xc, const MemRefDescriptor<3> &yc) {
          linearI8(xc, w, wScale, b, yc, activation,
                   packable && panelChunkThreads(),
                   /*shareable=*/false);
        });
    return;
  }
  try {
    const int8_t *weight = w.aligned + w.offset;
    // A team step's members (at most kPackedMaxRows rows each) run the
    // panels, together when they can.
    bool team = packable && shareable && inTeam();
    bool usePanels = packable && (usePacked(m) || team);
    const packed::PackedWeight *panelWeight =
        usePanels ? &panels(weight, n, k, PanelType::I8, m) : nullptr;
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
    const float *in = x.aligned + x.offset;
    bool avx2 = haveAvx2();
    for (int64_t r = 0; r < m; ++r) {
      int8_t *row = q.data() + r * ldq;
      if (avx2) {
        rowScales[r] =
            quantizeRowU8(in + r * k, k, reinterpret_cast<uint8_t *>(row));
        continue;
      }
      rowScales[r] =
          quantizeActivationRow(in + r * k, k, kActivationLevels, row);
      for (int64_t i = 0; i < k; ++i)
        row[i] = static_cast<int8_t>(row[i] + kActivationLevels + 1);
    }
    const auto *xq = reinterpret_cast<const uint8_t *>(q.data());
    const float *scales = wScale.aligned + wScale.offset;
    const float *bias = b.aligned + b.offset;
    float *out = y.aligned + y.offset;
    const int32_t offset = kActivationLevels + 1;
    bool vectorEpilogue =
        avx2 && (activation == static_cast<int32_t>(KernelActivation::None) ||
                 activation == static_cast<int32_t>(KernelActivation::Relu));
    bool relu = activation == static_cast<int32_t>(KernelActivation::Relu);
    if (usePanels && !team && vectorEpilogue) {
      // Products and outputs in one pass (on AMX, tile by tile): no [m, n]
      // block of sums to write and read back.
      packed::int8Linear(xq, m, *panelWeight,
                         {rowScales.data(), scales, bias, offset, relu, out, n},
                         packed::preferredIsa(), packedThreads(m, n, k));
      return;
    }
    acc.resize(m * n);
    // The members share only the integer products (each applies its own
    // rows' scales, bias and activation), so the weight and its scales
    // name the layer.
    if (team &&
        withTeam(weight, wScale.aligned + wScale.offset,
                 static_cast<int>(PanelType::I8), xq, m, ldq, acc.data(), n,
                 [&](const uint8_t *rows, int64_t total, int32_t *out,
                     int64_t first, int64_t end) {
                   packed::int8ProductsColumns(rows, total, *panelWeight, out,
                                               first, end);
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
    for (int64_t r = 0; r < m; ++r) {
      const int32_t *a = acc.data() + r * n;
      float *o = out + r * n;
      if (vectorEpilogue) {
        dequantizeRow(a, rowSums, offset, rowScales[r], scales, bias, o, n,
                      relu);
        continue;
      }
      for (int64_t j = 0; j < n; ++j) {
        int32_t exact = a[j] - offset * rowSums[j];
        // One rounding for the product and the bias, as dequantizeRow.
        float v = std::fma(static_cast<float>(exact), rowScales[r] * scales[j],
                           bias[j]);
        o[j] = activate(v, activation);
      }
    }
  } catch (const dnnl::error &e) {
    fail(std::string("oneDNN: ") + e.what());
  }
}

std::string OneDnn::takeError() {
  std::lock_guard<std::mutex> lock(mutex);
  std::string e = std::move(error);
  error.clear();
  return e;
}

dnnl::stream &OneDnn::threadStream() {
  thread_local std::unique_ptr<dnnl::stream> stream;
  if (!stream)
    stream = std::make_unique<dnnl::stream>(engine);
  return *stream;
}

const packed::PackedWeight &OneDnn::panels(const void *weight, int64_t n,
                                           int64_t k, PanelType type,
                                           int64_t rows) {
  bool brain = type == PanelType::BF16;
  bool half = type == PanelType::F16 || brain, int8 = type == PanelType::I8;
  std::lock_guard<std::mutex> lock(mutex);
  std::deque<packed::PackedWeight> &copies = packedPanels[weight];
  const auto *bits = static_cast<const uint16_t *>(weight);
  if (type != PanelType::F32) {
    for (const packed::PackedWeight &c : copies)
      if (c.n == n && c.k == k && c.half == half && c.brain == brain &&
          c.int8 == int8 && !c.exactHalves)
        return c;
    copies.push_back(
        int8    ? packed::packInt8(static_cast<const int8_t *>(weight), n, k)
        : brain ? packed::packBFloat16(bits, n, k)
                : packed::packHalves(bits, n, k));
    return copies.back();
  }
  // float32: the exact halves' panels, or float32 ones (packed::
  // kFloatPanelRows).
  packed::PackedWeight *halves = nullptr, *floats = nullptr;
  for (packed::PackedWeight &c : copies)
    if (c.n == n && c.k == k && !c.brain && !c.int8 &&
        (c.exactHalves || !c.half))
      (c.exactHalves ? halves : floats) = &c;
  const auto *values = static_cast<const float *>(weight);
  if (rows >= packed::kFloatPanelRows) {
    if (!floats) {
      copies.push_back(packed::pack(values, n, k, /*exactAsHalves=*/false));
      floats = &copies.back();
    }
    return *floats;
  }
  if (halves)
    return *halves;
  if (floats && floats->notHalves)
    return *floats;
  if (floats && !packed::allHalves(values, n * k)) {
    // (packed first for many rows, never looked at: not halves.)
    floats->notHalves = true;
    return *floats;
  }
  copies.push_back(packed::pack(values, n, k));
  return copies.back();
}

const ShortlistWeight *OneDnn::shortlist(const void *weight, const float *bias,
                                         int64_t n, int64_t k, PanelType type) {
  // bfloat16 on AMX tiles: the candidates are computed on the weight's
  // panels (packed before the lock, which panels() takes too).
  const packed::PackedWeight *tilePanels =
      type == PanelType::BF16 && packed::bfloat16Tiles()
          ? &panels(weight, n, k, type, 1)
          : nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  std::deque<ShortlistEntry> &entries = shortlists[weight];
  for (const ShortlistEntry &e : entries)
    if (e.bias == bias && e.n == n && e.k == k && e.type == type)
      return e.prepared.get();
  entries.push_back(
      {bias, n, k, type,
       prepareShortlist(weight, panelFormat(type), bias, n, k, tilePanels)});
  return entries.back().prepared.get();
}

const PackedInt8Weight &OneDnn::packInt8(const int8_t *weight, int64_t n,
                                         int64_t k,
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

const LinearPrimitive &OneDnn::primitive(const LinearKey &key) {
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
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           p.src, p.weights, p.dst);
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
    float alpha = key.activation == static_cast<int32_t>(KernelActivation::Silu)
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

} // namespace tfmc::runtime::library

extern "C" void _mlir_ciface_tfm_rt_linear(MemRefDescriptor<3> *x,
                                           MemRefDescriptor<2> *w,
                                           MemRefDescriptor<1> *b,
                                           MemRefDescriptor<3> *y,
                                           int32_t activation) {
  OneDnn::get().linear(*x, *w, *b, *y, activation);
}

extern "C" void _mlir_ciface_tfm_rt_linear_f16(MemRefDescriptor<3> *x,
                                               MemRefDescriptor<2, uint16_t> *w,
                                               MemRefDescriptor<1> *b,
                                               MemRefDescriptor<3> *y,
                                               int32_t activation) {
  OneDnn::get().linearF16(*x, *w, *b, *y, activation);
}

extern "C" void _mlir_ciface_tfm_rt_linear_i8(MemRefDescriptor<3> *x,
                                              MemRefDescriptor<2, int8_t> *w,
                                              MemRefDescriptor<1> *scale,
                                              MemRefDescriptor<1> *b,
                                              MemRefDescriptor<3> *y,
                                              int32_t activation) {
  OneDnn::get().linearI8(*x, *w, *scale, *b, *y, activation);
}

extern "C" void _mlir_ciface_tfm_rt_linear_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<3> *y, int32_t activation) {
  OneDnn::get().linearF16(*x, *w, *b, *y, activation, /*brain=*/true);
}

// FusedProjection.cpp
extern "C" void _mlir_ciface_tfm_rt_linear_argmax(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out);
extern "C" void _mlir_ciface_tfm_rt_linear_argmax_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out);
extern "C" void _mlir_ciface_tfm_rt_linear_argmax_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out);
extern "C" void _mlir_ciface_tfm_rt_linear_argmax_i8(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, int8_t> *w,
    MemRefDescriptor<1> *scale, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<1, int32_t> *out);
extern "C" void _mlir_ciface_tfm_rt_linear_topk_i8(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, int8_t> *w,
    MemRefDescriptor<1> *scale, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids);
extern "C" void _mlir_ciface_tfm_rt_linear_topk(
    MemRefDescriptor<3> *x, MemRefDescriptor<2> *w, MemRefDescriptor<1> *b,
    MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids);
extern "C" void _mlir_ciface_tfm_rt_linear_topk_f16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids);
extern "C" void _mlir_ciface_tfm_rt_linear_topk_bf16(
    MemRefDescriptor<3> *x, MemRefDescriptor<2, uint16_t> *w,
    MemRefDescriptor<1> *b, MemRefDescriptor<1, int32_t> *never, int64_t eos,
    MemRefDescriptor<1, int32_t> *allow, MemRefDescriptor<2> *values,
    MemRefDescriptor<2, int32_t> *ids);

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

int64_t tfmc::runtime::threadNeutralRows() {
  return packed::availableOnThisCpu() ? OneDnn::kPackedMaxRows : 0;
}

std::string tfmc::runtime::takeKernelError() {
  return OneDnn::get().takeError();
}

std::vector<std::pair<std::string, void *>> tfmc::runtime::kernelSymbols() {
  auto symbols = bufferPoolSymbols();
  for (auto &symbol : searchKernelSymbols())
    symbols.push_back(symbol);
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_topk",
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
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_argmax_i8",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_argmax_i8));
  symbols.emplace_back(
      "_mlir_ciface_tfm_rt_linear_topk_i8",
      reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear_topk_i8));
  return symbols;
}
