//===- linear_shapes.cpp - GFLOP/s of tfmc's linear kernels per shape -----===//
//
// tfmc-bench-linear [--rows 1,16,64] [--dims D,F,V] [--hot] [--zeros P]
// [--step L [--threads T]]: for
// the linear shapes (N x K) of a model with d_model D, d_ff F and a target
// vocabulary of V (default: the base model, 512,2048,8000), M rows, runs the
// runtime's library kernels through their C ABI (what compiled code calls:
// float32, float16 and int8 weights, each on the path the runtime picks for M
// rows) and oneDNN's plain float32 inner product, one thread. Each kernel
// cycles through enough copies of its weight to stream about 64 MB, as a
// decoder step streams its layers;
// --hot uses one copy (the weights stay in cache, as a small model's do).
// --zeros P adds a row for ff2 whose inputs are zero with probability P
// (0 <= P < 1, each value on its own), as a ReLU leaves them: the packed
// kernels skip the k steps where a whole row tile is zero.
// Prints a markdown table of GFLOP/s (int8: GOP/s).
// --step L instead runs the linear layers of a decoder step of L layers
// (each layer's merged QKV, self-attention output, cross-attention query and
// output, ff1, ff2, then the output projection) one after another, as a
// decoder step streams them, and prints the step's GFLOP/s (median of 100
// steps), float32, bfloat16 and int8, per row count; with --threads T, on a
// step team of T threads as `tfmc translate --threads T` runs a step (its
// rows cut into T ranges whose linear layers meet: runtime/kernels/
// StepTeam.h), the layers alone, without the attention between them.
//
//===----------------------------------------------------------------------===//
#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"
#include "runtime/kernels/StepTeam.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace tfmc::runtime;

extern "C" void _mlir_ciface_tfm_rt_linear(MemRefDescriptor<3> *,
                                           MemRefDescriptor<2> *,
                                           MemRefDescriptor<1> *,
                                           MemRefDescriptor<3> *, int32_t);
extern "C" void _mlir_ciface_tfm_rt_linear_f16(MemRefDescriptor<3> *,
                                               MemRefDescriptor<2, uint16_t> *,
                                               MemRefDescriptor<1> *,
                                               MemRefDescriptor<3> *, int32_t);
extern "C" void _mlir_ciface_tfm_rt_linear_bf16(MemRefDescriptor<3> *,
                                                MemRefDescriptor<2, uint16_t> *,
                                                MemRefDescriptor<1> *,
                                                MemRefDescriptor<3> *, int32_t);
extern "C" void _mlir_ciface_tfm_rt_linear_i8(MemRefDescriptor<3> *,
                                              MemRefDescriptor<2, int8_t> *,
                                              MemRefDescriptor<1> *,
                                              MemRefDescriptor<1> *,
                                              MemRefDescriptor<3> *, int32_t);

namespace {

template <typename T>
MemRefDescriptor<2, T> matrix(T *p, int64_t n, int64_t k) {
  return {p, p, 0, {n, k}, {k, 1}};
}
MemRefDescriptor<1> vector1(float *p, int64_t n) { return {p, p, 0, {n}, {1}}; }
MemRefDescriptor<3> rows3(float *p, int64_t m, int64_t n) {
  return {p, p, 0, {m, 1, n}, {n, n, 1}};
}

/// Best of 3 runs of `reps` calls, seconds per call.
double timeIt(int reps, const std::function<void(int)> &call) {
  for (int i = 0; i < reps; ++i)
    call(i); // warm up (packing, primitives)
  double best = 1e9;
  for (int trial = 0; trial < 3; ++trial) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      call(i);
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                                  .count() /
                              reps);
  }
  return best;
}

/// --step: the linear layers of a decoder step of `layers` layers, in order.
int stepRates(const std::vector<int64_t> &rowCounts, int64_t d, int64_t ff,
              int64_t vocab, int64_t layers, int members) {
  struct Layer {
    int64_t n, k;
    std::vector<float> w, bias;
    std::vector<uint16_t> brain;
    QuantizedMatrix q;
  };
  std::vector<Layer> step;
  for (int64_t l = 0; l < layers; ++l)
    for (auto [n, k] : {std::pair{3 * d, d}, std::pair{d, d}, std::pair{d, d},
                        std::pair{d, d}, std::pair{ff, d}, std::pair{d, ff}})
      step.push_back({n, k, {}, {}, {}, {}});
  step.push_back({vocab, d, {}, {}, {}, {}});
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  int64_t widest = 0;
  for (Layer &l : step) {
    l.w.resize(l.n * l.k);
    for (float &v : l.w)
      v = dist(rng);
    l.bias.assign(l.n, 0.1f);
    l.q = quantizeRows(l.w.data(), l.n, l.k);
    for (float v : l.w)
      l.brain.push_back(tfmc::floatToBFloat16(v));
    widest = std::max({widest, l.n, l.k});
  }
  std::printf("| decoder step, %lld layers, %d thread(s) | M | tfmc f32 "
              "GFLOP/s | tfmc bf16 GFLOP/s | tfmc int8 (GOP/s) |\n"
              "|---|---|---|---|---|\n",
              (long long)layers, members);
  // With more than one thread, the rows run as a decoder step's do with
  // --threads: cut into one contiguous range per member of a StepTeam,
  // whose linear layers meet (each member computing a share of every
  // layer's columns for all rows).
  std::unique_ptr<StepTeam> team;
  if (members > 1)
    team = std::make_unique<StepTeam>(members);
  for (int64_t m : rowCounts) {
    if (m < members) {
      // A member without rows never meets the others: the team would
      // break and one thread compute alone.
      std::printf("| | %lld | fewer rows than threads: not run | | |\n",
                  (long long)m);
      continue;
    }
    std::vector<float> x(m * widest), y(m * widest);
    for (float &v : x)
      v = dist(rng) * 20;
    double flops = 0;
    for (const Layer &l : step)
      flops += 2.0 * m * l.n * l.k;
    enum Kind { F32, BF16, I8 };
    auto median = [&](Kind kind) {
      std::vector<double> times;
      for (int rep = 0; rep < 103; ++rep) {
        auto start = std::chrono::steady_clock::now();
        auto run = [&](int member) {
          int64_t first = m * member / members,
                  rows = m * (member + 1) / members - first;
          for (Layer &l : step) {
            MemRefDescriptor<3> xd = rows3(x.data() + first * l.k, rows, l.k),
                                yd = rows3(y.data() + first * l.n, rows, l.n);
            MemRefDescriptor<1> bd = vector1(l.bias.data(), l.n);
            if (kind == I8) {
              auto wd = matrix(l.q.values.data(), l.n, l.k);
              MemRefDescriptor<1> sd = vector1(l.q.scales.data(), l.n);
              _mlir_ciface_tfm_rt_linear_i8(&xd, &wd, &sd, &bd, &yd, 0);
            } else if (kind == BF16) {
              auto wd = matrix(l.brain.data(), l.n, l.k);
              _mlir_ciface_tfm_rt_linear_bf16(&xd, &wd, &bd, &yd, 0);
            } else {
              auto wd = matrix(l.w.data(), l.n, l.k);
              _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, 0);
            }
          }
        };
        if (team)
          team->run(run);
        else
          run(0);
        if (rep >= 3) // the first steps pack the weights
          times.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2,
                       times.end());
      return times[times.size() / 2];
    };
    double f32 = median(F32), bf16 = median(BF16), i8 = median(I8);
    std::string err = takeKernelError();
    if (!err.empty()) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      return 1;
    }
    std::printf("| | %lld | %.1f | %.1f | %.1f |\n", (long long)m,
                flops / f32 / 1e9, flops / bf16 / 1e9, flops / i8 / 1e9);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> rowCounts = {1, 16, 64};
  std::vector<int64_t> dims = {512, 2048, 8000};
  bool hot = false;
  double zeros = -1;
  int64_t stepLayers = 0;
  int threads = 1;
  auto list = [](char *text) {
    std::vector<int64_t> values;
    for (char *s = std::strtok(text, ","); s; s = std::strtok(nullptr, ","))
      values.push_back(std::atoll(s));
    return values;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--hot")
      hot = true;
    else if (arg == "--rows" && i + 1 < argc)
      rowCounts = list(argv[++i]);
    else if (arg == "--dims" && i + 1 < argc)
      dims = list(argv[++i]);
    else if (arg == "--step" && i + 1 < argc) {
      stepLayers = std::atoll(argv[++i]);
      if (stepLayers <= 0) {
        std::fprintf(stderr, "error: --step takes a positive layer count\n");
        return 1;
      }
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads <= 0) {
        std::fprintf(stderr, "error: --threads takes a positive count\n");
        return 1;
      }
    } else if (arg == "--zeros" && i + 1 < argc) {
      char *end = nullptr;
      zeros = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(zeros >= 0 && zeros < 1)) {
        std::fprintf(stderr, "error: --zeros takes a fraction in [0, 1)\n");
        return 1;
      }
    } else {
      std::fprintf(stderr,
                   "error: unknown argument '%s' (expected --rows "
                   "M,.. --dims D,F,V --hot --zeros P --step L --threads "
                   "T)\n",
                   arg.c_str());
      return 1;
    }
  }
  if (dims.size() != 3 || rowCounts.empty()) {
    std::fprintf(stderr, "error: --dims takes D,F,V and --rows at least one "
                         "count\n");
    return 1;
  }
  for (int64_t v : rowCounts)
    if (v <= 0) {
      std::fprintf(stderr, "error: row counts must be positive\n");
      return 1;
    }
  for (int64_t v : dims)
    if (v <= 0) {
      std::fprintf(stderr, "error: dimensions must be positive\n");
      return 1;
    }
  const int64_t d = dims[0], ff = dims[1], vocab = dims[2];
  setKernelThreads(1);
  if (threads > 1 && stepLayers == 0) {
    std::fprintf(stderr, "error: --threads goes with --step\n");
    return 1;
  }
  if (stepLayers > 0)
    return stepRates(rowCounts, d, ff, vocab, stepLayers, threads);
  struct Shape {
    std::string name;
    int64_t n, k;
    double zeros = 0; // the fraction of zero inputs
  };
  std::vector<Shape> shapes = {{"qkv", 3 * d, d},
                               {"self-out / cross-q / cross-out", d, d},
                               {"ff1", ff, d},
                               {"ff2", d, ff},
                               {"output projection", vocab, d}};
  if (zeros >= 0) {
    char name[64];
    std::snprintf(name, sizeof(name), "ff2, %.0f%% zero inputs", zeros * 100);
    shapes.insert(shapes.begin() + 4, {name, d, ff, zeros});
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf(
      "| shape (N x K) | M | oneDNN f32 GFLOP/s | tfmc f32 | tfmc f16 | "
      "tfmc int8 (GOP/s) |\n|---|---|---|---|---|---|\n");
  for (const Shape &s : shapes) {
    // About 64 MB of each type's weights, so every call streams from memory.
    auto copiesOf = [&](int64_t bytes) {
      if (hot)
        return int64_t(1);
      return std::max<int64_t>(1, (int64_t(64) << 20) / (bytes * s.n * s.k));
    };
    int64_t c32 = copiesOf(4), c16 = copiesOf(2), c8 = copiesOf(1);
    std::vector<std::vector<float>> w32(c8);
    std::vector<std::vector<uint16_t>> w16(c16);
    std::vector<QuantizedMatrix> w8(c8);
    for (int64_t c = 0; c < c8; ++c) {
      w32[c].resize(s.n * s.k);
      for (float &v : w32[c])
        v = dist(rng);
      if (c < c16) {
        w16[c].resize(s.n * s.k);
        for (int64_t i = 0; i < s.n * s.k; ++i)
          w16[c][i] = tfmc::floatToHalf(w32[c][i]);
      }
      w8[c] = quantizeRows(w32[c].data(), s.n, s.k);
    }
    w32.resize(c32);
    int64_t copies = c8;
    std::vector<float> bias(s.n, 0.1f);
    for (int64_t m : rowCounts) {
      std::vector<float> x(m * s.k), y(m * s.n);
      for (float &v : x)
        v = uniform(rng) < s.zeros ? 0.0f : dist(rng) * 20;
      double flops = 2.0 * m * s.n * s.k;
      int reps = std::max<int>(3 * copies, int(2e9 / flops / 50));
      MemRefDescriptor<3> xd = rows3(x.data(), m, s.k),
                          yd = rows3(y.data(), m, s.n);
      MemRefDescriptor<1> bd = vector1(bias.data(), s.n);
      // oneDNN's plain inner product (the weights as stored).
      using dt = dnnl::memory::data_type;
      using tag = dnnl::memory::format_tag;
      dnnl::memory::desc src({m, s.k}, dt::f32, tag::ab),
          wdesc({s.n, s.k}, dt::f32, tag::oi), bdesc({s.n}, dt::f32, tag::a),
          ddesc({m, s.n}, dt::f32, tag::ab);
      dnnl::inner_product_forward::primitive_desc pd(
          dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference,
                                            src, wdesc, bdesc, ddesc),
          engine);
      dnnl::inner_product_forward ip(pd);
      dnnl::memory sm(src, engine, x.data()), bm(bdesc, engine, bias.data()),
          dm(ddesc, engine, y.data());
      double onednn = timeIt(reps, [&](int i) {
        dnnl::memory wm(wdesc, engine, w32[i % c32].data());
        ip.execute(stream, {{DNNL_ARG_SRC, sm},
                            {DNNL_ARG_WEIGHTS, wm},
                            {DNNL_ARG_BIAS, bm},
                            {DNNL_ARG_DST, dm}});
        stream.wait();
      });
      double f32 = timeIt(reps, [&](int i) {
        auto wd = matrix(w32[i % c32].data(), s.n, s.k);
        _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, 0);
      });
      double f16 = timeIt(reps, [&](int i) {
        auto wd = matrix(w16[i % c16].data(), s.n, s.k);
        _mlir_ciface_tfm_rt_linear_f16(&xd, &wd, &bd, &yd, 0);
      });
      double i8 = timeIt(reps, [&](int i) {
        QuantizedMatrix &q = w8[i % c8];
        auto wd = matrix(q.values.data(), s.n, s.k);
        MemRefDescriptor<1> sd = vector1(q.scales.data(), s.n);
        _mlir_ciface_tfm_rt_linear_i8(&xd, &wd, &sd, &bd, &yd, 0);
      });
      std::string err = takeKernelError();
      if (!err.empty()) {
        std::fprintf(stderr, "error: %s\n", err.c_str());
        return 1;
      }
      std::printf("| %s (%lld x %lld) | %lld | %.1f | %.1f | %.1f | %.1f |\n",
                  s.name.c_str(), (long long)s.n, (long long)s.k, (long long)m,
                  flops / onednn / 1e9, flops / f32 / 1e9, flops / f16 / 1e9,
                  flops / i8 / 1e9);
    }
  }
  return 0;
}
