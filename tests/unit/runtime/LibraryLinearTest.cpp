//===- LibraryLinearTest.cpp - the library kernels' entry points ----------===//
//
// tfm_rt_linear / tfm_rt_linear_i8 as compiled code calls them, at row
// counts on every route: the packed kernels (up to 256 rows, with one
// kernel thread or more) and 256-row chunks (more rows; oneDNN, or the
// packed kernel where it runs AVX-512 on one thread), against plain loops.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"
#include "tests/unit/runtime/RandomData.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

extern "C" void
_mlir_ciface_tfm_rt_linear(tfmc::runtime::MemRefDescriptor<3> *x,
                           tfmc::runtime::MemRefDescriptor<2> *w,
                           tfmc::runtime::MemRefDescriptor<1> *b,
                           tfmc::runtime::MemRefDescriptor<3> *y,
                           int32_t activation);
extern "C" void
_mlir_ciface_tfm_rt_linear_i8(tfmc::runtime::MemRefDescriptor<3> *x,
                              tfmc::runtime::MemRefDescriptor<2, int8_t> *w,
                              tfmc::runtime::MemRefDescriptor<1> *scale,
                              tfmc::runtime::MemRefDescriptor<1> *b,
                              tfmc::runtime::MemRefDescriptor<3> *y,
                              int32_t activation);

using namespace tfmc::runtime;
using tfmc::testing::normal;

namespace {

template <typename T> MemRefDescriptor<1, T> vector1(std::vector<T> &v) {
  auto n = static_cast<int64_t>(v.size());
  return {v.data(), v.data(), 0, {n}, {1}};
}

template <typename T>
MemRefDescriptor<2, T> matrix(std::vector<T> &v, int64_t rows, int64_t cols) {
  return {v.data(), v.data(), 0, {rows, cols}, {cols, 1}};
}

/// [batch, rows / batch, cols] over `v`.
MemRefDescriptor<3> rows3(std::vector<float> &v, int64_t batch, int64_t rows,
                          int64_t cols) {
  int64_t t = rows / batch;
  return {v.data(), v.data(), 0, {batch, t, cols}, {t * cols, cols, 1}};
}

struct Route {
  int64_t batch, rows, threads;
};
// Few rows, 256 rows on two kernel threads (packed either way), 700 rows
// (chunks of 256, 256 and 188) on one and on two threads.
const Route kRoutes[] = {{1, 3, 1}, {4, 256, 2}, {7, 700, 1}, {5, 700, 2}};

TEST(LibraryLinear, Float32MatchesPlainLoopsOnEveryRoute) {
  std::mt19937 rng(11);
  const int64_t n = 40, k = 24; // a ragged last panel
  for (Route route : kRoutes) {
    setKernelThreads(static_cast<int>(route.threads));
    std::vector<float> x = normal(route.rows * k, rng), w = normal(n * k, rng),
                       b = normal(n, rng), y(route.rows * n, NAN);
    auto xd = rows3(x, route.batch, route.rows, k);
    auto yd = rows3(y, route.batch, route.rows, n);
    auto wd = matrix(w, n, k);
    auto bd = vector1(b);
    _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, /*relu*/ 1);
    ASSERT_EQ(takeKernelError(), "");
    for (int64_t r = 0; r < route.rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double want = b[c];
        for (int64_t i = 0; i < k; ++i)
          want += double(x[r * k + i]) * w[c * k + i];
        want = std::max(want, 0.0);
        ASSERT_NEAR(y[r * n + c], want, 1e-4 * (1 + std::fabs(want)))
            << route.rows << " rows, " << route.threads << " threads, at " << r
            << "," << c;
      }
    // Packed copies are keyed by the weight's address (as the WeightStore
    // does when it frees a weight).
    releaseKernelWeights(w.data());
  }
  setKernelThreads(1);
}

TEST(LibraryLinear, Int8MatchesItsDefinitionOnEveryRoute) {
  std::mt19937 rng(13);
  const int64_t n = 40, k = 24;
  for (Route route : kRoutes) {
    setKernelThreads(static_cast<int>(route.threads));
    std::vector<float> x = normal(route.rows * k, rng), wf = normal(n * k, rng),
                       b = normal(n, rng), y(route.rows * n, NAN);
    QuantizedMatrix q = quantizeRows(wf.data(), n, k);
    auto xd = rows3(x, route.batch, route.rows, k);
    auto yd = rows3(y, route.batch, route.rows, n);
    auto wd = matrix(q.values, n, k);
    auto sd = vector1(q.scales);
    auto bd = vector1(b);
    _mlir_ciface_tfm_rt_linear_i8(&xd, &wd, &sd, &bd, &yd, /*none*/ 0);
    ASSERT_EQ(takeKernelError(), "");
    std::vector<int8_t> row(k);
    for (int64_t r = 0; r < route.rows; ++r) {
      // y = scale_x · scale_w · Σ q_x q_w + b, the integers exact.
      float sx = quantizeActivationRow(x.data() + r * k, k, kActivationLevels,
                                       row.data());
      for (int64_t c = 0; c < n; ++c) {
        int64_t sum = 0;
        for (int64_t i = 0; i < k; ++i)
          sum += int64_t(row[i]) * q.values[c * k + i];
        double want = double(sum) * sx * q.scales[c] + b[c];
        ASSERT_NEAR(y[r * n + c], want, 1e-4 * (1 + std::fabs(want)))
            << route.rows << " rows, " << route.threads << " threads, at " << r
            << "," << c;
      }
    }
    releaseKernelWeights(q.values.data());
  }
  setKernelThreads(1);
}

} // namespace
