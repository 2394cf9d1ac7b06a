//===- search_heads.cpp - the output projection with and without its search
//===//
//
// tfmc-bench-heads [--rows 1,16,76,128] [--dims D,V] [--candidates C]
// [--hot]: the output projection of a model with d_model D and a target
// vocabulary of V (default: the bundled model's, 256,4000) for M rows, one
// thread, three ways through the runtime's C ABI, float32 weights:
// the plain linear layer (every logit written), tfm.linear_argmax
// (greedy's fused choice) and tfm.linear_topk (beam's fused candidates, C
// per row: 2 x beam, default 8). Prints each one's microseconds per call
// and GFLOP/s, and the fused heads' cost over the plain projection: what
// the search adds to the GEMM. Weights and inputs are random, so each
// row's logits are too: their best 8 change about 30 times over a row of
// 4,000 ids, as they did in the bundled model's beam-4 run over the dev
// set (1.8 entries per chunk of 256 ids, 2026-12-06), so the candidate
// scan does the work it does in a real search.
// Each call streams its own copy of the weight (about 64 MB of copies)
// unless --hot.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/TopKScan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace tfmc::runtime;

extern "C" void _mlir_ciface_tfm_rt_linear(MemRefDescriptor<3> *,
                                           MemRefDescriptor<2> *,
                                           MemRefDescriptor<1> *,
                                           MemRefDescriptor<3> *, int32_t);
extern "C" void _mlir_ciface_tfm_rt_linear_argmax(
    MemRefDescriptor<3> *, MemRefDescriptor<2> *, MemRefDescriptor<1> *,
    MemRefDescriptor<1, int32_t> *, int64_t, MemRefDescriptor<1, int32_t> *,
    MemRefDescriptor<1, int32_t> *);
extern "C" void _mlir_ciface_tfm_rt_linear_topk(
    MemRefDescriptor<3> *, MemRefDescriptor<2> *, MemRefDescriptor<1> *,
    MemRefDescriptor<1, int32_t> *, int64_t, MemRefDescriptor<1, int32_t> *,
    MemRefDescriptor<2> *, MemRefDescriptor<2, int32_t> *);

namespace {

template <typename T> MemRefDescriptor<1, T> vector1(T *p, int64_t n) {
  return {p, p, 0, {n}, {1}};
}

/// Median of 5 runs of `reps` calls, seconds per call (after `reps` calls
/// to pack the weights and warm the caches).
double timeIt(int reps, const std::function<void(int)> &call) {
  for (int i = 0; i < reps; ++i)
    call(i);
  std::vector<double> runs;
  for (int trial = 0; trial < 5; ++trial) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      call(i);
    runs.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        reps);
  }
  std::nth_element(runs.begin(), runs.begin() + 2, runs.end());
  return runs[2];
}

std::vector<int64_t> listOf(char *text) {
  std::vector<int64_t> values;
  for (char *s = std::strtok(text, ","); s; s = std::strtok(nullptr, ","))
    values.push_back(std::atoll(s));
  return values;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> rowCounts = {1, 16, 76, 128};
  std::vector<int64_t> dims = {256, 4000};
  int64_t candidates = 8;
  bool hot = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--hot")
      hot = true;
    else if (arg == "--rows" && i + 1 < argc)
      rowCounts = listOf(argv[++i]);
    else if (arg == "--dims" && i + 1 < argc)
      dims = listOf(argv[++i]);
    else if (arg == "--candidates" && i + 1 < argc)
      candidates = std::atoll(argv[++i]);
    else {
      std::fprintf(stderr,
                   "error: unknown argument '%s' (expected --rows M,.. "
                   "--dims D,V --candidates C --hot)\n",
                   arg.c_str());
      return 1;
    }
  }
  if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0 || rowCounts.empty() ||
      candidates <= 0 ||
      std::any_of(rowCounts.begin(), rowCounts.end(),
                  [](int64_t m) { return m <= 0; })) {
    std::fprintf(stderr, "error: --dims takes D,V (positive), --rows positive "
                         "counts, --candidates a positive count\n");
    return 1;
  }
  const int64_t d = dims[0], vocab = dims[1];
  setKernelThreads(1);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  int64_t copies =
      hot ? 1 : std::max<int64_t>(1, (int64_t(64) << 20) / (4 * vocab * d));
  std::vector<std::vector<float>> weights(copies);
  for (std::vector<float> &w : weights) {
    w.resize(vocab * d);
    for (float &v : w)
      v = 0.05f * dist(rng);
  }
  std::vector<float> bias(vocab, 0.0f);
  std::vector<int32_t> never; // nothing barred
  const int64_t eos = 2;
  std::printf(
      "| rows | projection us | GFLOP/s | + argmax us | over | + top-%lld "
      "us | over | scan alone us |\n|---|---|---|---|---|---|---|---|\n",
      (long long)candidates);
  for (int64_t m : rowCounts) {
    std::vector<float> x(m * d), y(m * vocab), values(m * candidates);
    std::vector<int32_t> allow(m, 1), tokens(m), ids(m * candidates);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t k = 0; k < d; ++k)
        x[r * d + k] = dist(rng);
    MemRefDescriptor<3> xd{x.data(), x.data(), 0, {m, 1, d}, {d, d, 1}};
    MemRefDescriptor<3> yd{
        y.data(), y.data(), 0, {m, 1, vocab}, {vocab, vocab, 1}};
    MemRefDescriptor<1> bd = vector1(bias.data(), vocab);
    MemRefDescriptor<1, int32_t> nd = vector1(never.data(), 0),
                                 ad = vector1(allow.data(), m),
                                 td = vector1(tokens.data(), m);
    MemRefDescriptor<2> vd{
        values.data(), values.data(), 0, {m, candidates}, {candidates, 1}};
    MemRefDescriptor<2, int32_t> id{
        ids.data(), ids.data(), 0, {m, candidates}, {candidates, 1}};
    double flops = 2.0 * m * vocab * d;
    // About 20 ms a run at 150 GFLOP/s.
    int reps = std::max<int>(3 * copies, int(3e9 / flops));
    auto weight = [&](int i) {
      float *w = weights[i % copies].data();
      return MemRefDescriptor<2>{w, w, 0, {vocab, d}, {d, 1}};
    };
    double plain = timeIt(reps, [&](int i) {
      auto wd = weight(i);
      _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, 0);
    });
    double argmax = timeIt(reps, [&](int i) {
      auto wd = weight(i);
      _mlir_ciface_tfm_rt_linear_argmax(&xd, &wd, &bd, &nd, eos, &ad, &td);
    });
    double topk = timeIt(reps, [&](int i) {
      auto wd = weight(i);
      _mlir_ciface_tfm_rt_linear_topk(&xd, &wd, &bd, &nd, eos, &ad, &vd, &id);
    });
    std::vector<TopKScan> scans(m);
    ScanExclusions none;
    none.eos = eos;
    double scanAlone = timeIt(std::max(reps, 20), [&](int) {
      for (int64_t r = 0; r < m; ++r) {
        scans[r].reset(candidates);
        scans[r].add(y.data() + r * vocab, 0, vocab, none);
      }
    });
    std::string err = takeKernelError();
    if (!err.empty()) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      return 1;
    }
    std::printf("| %lld | %.1f | %.1f | %.1f | %.2fx | %.1f | %.2fx | %.1f |\n",
                (long long)m, plain * 1e6, flops / plain / 1e9, argmax * 1e6,
                argmax / plain, topk * 1e6, topk / plain, scanAlone * 1e6);
  }
  return 0;
}
