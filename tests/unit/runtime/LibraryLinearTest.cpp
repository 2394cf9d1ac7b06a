//===- LibraryLinearTest.cpp - the library kernels' entry points ----------===//
//
// tfm_rt_linear / tfm_rt_linear_i8 as compiled code calls them, at row
// counts on every route: the packed kernels (up to 256 rows, with one
// kernel thread or more) and 256-row chunks (more rows; the packed kernels
// with up to two kernel threads, oneDNN with more), against plain loops;
// and the same calls made by the members of a StepTeam, each with its own
// rows, against one call over all of them.
//
//===----------------------------------------------------------------------===//
#include "frontends/model/Float16.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/OneDnnLinear.h"
#include "runtime/kernels/PackedGemm.h"
#include "runtime/kernels/Quantize.h"
#include "runtime/kernels/StepTeam.h"
#include "tests/unit/runtime/RandomData.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

extern "C" void
_mlir_ciface_tfm_rt_linear(tfmc::runtime::MemRefDescriptor<3> *x,
                           tfmc::runtime::MemRefDescriptor<2> *w,
                           tfmc::runtime::MemRefDescriptor<1> *b,
                           tfmc::runtime::MemRefDescriptor<3> *y,
                           int32_t activation);
extern "C" void _mlir_ciface_tfm_rt_linear_argmax(
    tfmc::runtime::MemRefDescriptor<3> *x, tfmc::runtime::MemRefDescriptor<2> *w,
    tfmc::runtime::MemRefDescriptor<1> *b,
    tfmc::runtime::MemRefDescriptor<1, int32_t> *never, int64_t eos,
    tfmc::runtime::MemRefDescriptor<1, int32_t> *allow,
    tfmc::runtime::MemRefDescriptor<1, int32_t> *out);
extern "C" void
_mlir_ciface_tfm_rt_linear_f16(tfmc::runtime::MemRefDescriptor<3> *x,
                               tfmc::runtime::MemRefDescriptor<2, uint16_t> *w,
                               tfmc::runtime::MemRefDescriptor<1> *b,
                               tfmc::runtime::MemRefDescriptor<3> *y,
                               int32_t activation);
extern "C" void
_mlir_ciface_tfm_rt_linear_bf16(tfmc::runtime::MemRefDescriptor<3> *x,
                                tfmc::runtime::MemRefDescriptor<2, uint16_t> *w,
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

/// A float32 weight whose values are all halves runs on its half panels
/// for fewer than packed::kFloatPanelRows rows and on float32 panels from
/// there, whichever row count comes first: tfm_rt_linear packs each copy
/// once, when the first call of its kind comes (counted without packing),
/// and gives the float32 panels' results bit for bit; a weight that is not
/// all halves keeps one float32 copy.
TEST(LibraryLinear, ExactHalvesRunOnHalfPanelsForFewRowsOnly) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  using library::OneDnn;
  std::mt19937 rng(5);
  const int64_t n = 48, k = 40, many = packed::kFloatPanelRows;
  OneDnn &lib = OneDnn::get();
  for (bool halves : {true, false})
    for (bool manyFirst : {true, false}) {
      std::vector<float> w = normal(n * k, rng), b = normal(n, rng);
      for (float &v : w)
        v = tfmc::halfToFloat(tfmc::floatToHalf(v));
      if (!halves)
        w[n * k / 2] = std::nextafter(w[n * k / 2], 10.0f);
      packed::PackedWeight floats =
          packed::pack(w.data(), n, k, /*exactAsHalves=*/false);
      std::vector<int64_t> counts = {1, many - 1, many, 2 * many, 3, many};
      if (manyFirst)
        std::rotate(counts.begin(), counts.begin() + 2, counts.end());
      ASSERT_EQ(lib.panelCopies(w.data()), 0u);
      bool sawFew = false, sawMany = false;
      for (int64_t m : counts) {
        std::vector<float> x = normal(m * k, rng), y(m * n, NAN), want(m * n);
        auto xd = rows3(x, 1, m, k);
        auto yd = rows3(y, 1, m, n);
        auto wd = matrix(w, n, k);
        auto bd = vector1(b);
        _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, /*relu*/ 0);
        ASSERT_EQ(takeKernelError(), "");
        packed::linear(x.data(), m, floats, b.data(), want.data(), 0,
                       packed::preferredIsa());
        EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * 4))
            << m << " rows, halves " << halves;
        (m < many ? sawFew : sawMany) = true;
        // One copy a kind, made by the first call that needs it.
        size_t expected = halves ? size_t(sawFew) + size_t(sawMany) : 1;
        EXPECT_EQ(lib.panelCopies(w.data()), expected)
            << "after " << m << " rows, halves " << halves << ", many first "
            << manyFirst;
      }
      // Both kinds exist now: the lookups pack nothing and name them.
      const packed::PackedWeight &few =
          lib.panels(w.data(), n, k, OneDnn::PanelType::F32, 1);
      const packed::PackedWeight &wide =
          lib.panels(w.data(), n, k, OneDnn::PanelType::F32, many);
      EXPECT_EQ(few.format(),
                halves ? packed::PanelFormat::F16 : packed::PanelFormat::F32);
      EXPECT_EQ(wide.format(), packed::PanelFormat::F32);
      EXPECT_EQ(&few == &wide, !halves);
      EXPECT_EQ(lib.panelCopies(w.data()), halves ? 2u : 1u);
      releaseKernelWeights(w.data());
    }
}

/// bfloat16 on every route: bias, then per pair of k the odd k's FMA and
/// the even k's, on the input rounded to bfloat16 (BFloat16Operands.h).
/// Bit for bit where the packed vector kernels run (every route with AVX2,
/// the 700-row layers in 256-row chunks); AMX's tiles (the first 64 values
/// of k; the rest by vdpbf16ps) sum in their own order.
TEST(LibraryLinear, BFloat16MatchesItsDefinitionOnEveryRoute) {
  std::mt19937 rng(13);
  const int64_t n = 40, k = 71; // a ragged last panel, an odd k
  for (Route route : kRoutes) {
    setKernelThreads(static_cast<int>(route.threads));
    std::vector<float> x = normal(route.rows * k, rng), w = normal(n * k, rng),
                       b = normal(n, rng), y(route.rows * n, NAN);
    std::vector<uint16_t> bits(w.size());
    for (size_t i = 0; i < w.size(); ++i)
      bits[i] = tfmc::floatToBFloat16(w[i]);
    auto xd = rows3(x, route.batch, route.rows, k);
    auto yd = rows3(y, route.batch, route.rows, n);
    auto wd = matrix(bits, n, k);
    auto bd = vector1(b);
    _mlir_ciface_tfm_rt_linear_bf16(&xd, &wd, &bd, &yd, /*relu*/ 1);
    ASSERT_EQ(takeKernelError(), "");
    bool exact = packed::availableOnThisCpu() && !packed::bfloat16Tiles();
    std::vector<float> xr(x.size());
    roundToBFloat16Operands(x.data(), x.size(), xr.data());
    for (int64_t r = 0; r < route.rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        float want = b[c];
        for (int64_t i = 0; i < k; i += 2)
          for (int64_t j = std::min(i + 1, k - 1); j >= i; --j)
            want = std::fma(xr[r * k + j],
                            tfmc::bfloat16ToFloat(bits[c * k + j]), want);
        want = std::max(want, 0.0f);
        float got = y[r * n + c];
        if (exact)
          ASSERT_EQ(0, std::memcmp(&got, &want, sizeof(float)))
              << route.rows << " rows, " << route.threads << " threads, at "
              << r << "," << c << ": " << got << " against " << want;
        else
          ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want)))
              << route.rows << " rows, " << route.threads << " threads, at "
              << r << "," << c;
      }
    releaseKernelWeights(bits.data());
  }
  setKernelThreads(1);
}

/// A row's outputs do not depend on the rows beside it: the same row alone
/// and at every position of a 700-row call (256-row chunks, on one and on
/// two kernel threads) gives the same bits, float32, float16 and bfloat16,
/// on whichever kernels this run's ISA picks (TFMC_KERNEL_ISA: the AVX2
/// kernels too, whose chunks ran on oneDNN's GEMM until 2026-12-06, whose
/// bits depended on the row's place in its block: a batch of 64 scored
/// differently in the sixth decimal than the same sentences one by one).
TEST(LibraryLinear, ARowsOutputsDoNotDependOnTheRowsBesideIt) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "no AVX2: every layer runs on oneDNN";
  std::mt19937 rng(29);
  const int64_t n = 72, k = 40, rows = 700;
  std::vector<float> x = normal(rows * k, rng), w = normal(n * k, rng),
                     b = normal(n, rng);
  std::vector<uint16_t> halves(w.size()), brains(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    halves[i] = tfmc::floatToHalf(w[i]);
    brains[i] = tfmc::floatToBFloat16(w[i]);
  }
  auto wd = matrix(w, n, k);
  auto hd = matrix(halves, n, k);
  auto bfd = matrix(brains, n, k);
  auto bd = vector1(b);
  for (int threads : {1, 2}) {
    setKernelThreads(threads);
    for (int kind = 0; kind < 3; ++kind) {
      auto call = [&](std::vector<float> &in, std::vector<float> &out,
                      int64_t m) {
        auto xd = rows3(in, 1, m, k);
        auto yd = rows3(out, 1, m, n);
        if (kind == 0)
          _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, 0);
        else if (kind == 1)
          _mlir_ciface_tfm_rt_linear_f16(&xd, &hd, &bd, &yd, 0);
        else
          _mlir_ciface_tfm_rt_linear_bf16(&xd, &bfd, &bd, &yd, 0);
      };
      std::vector<float> all(rows * n, NAN);
      call(x, all, rows);
      for (int64_t r : {int64_t(0), int64_t(5), int64_t(255), int64_t(256),
                        int64_t(300), int64_t(699)}) {
        std::vector<float> one(x.begin() + r * k, x.begin() + (r + 1) * k),
            alone(n, NAN);
        call(one, alone, 1);
        ASSERT_EQ(takeKernelError(), "");
        for (int64_t c = 0; c < n; ++c)
          ASSERT_EQ(0, std::memcmp(&alone[c], &all[r * n + c], sizeof(float)))
              << "kind " << kind << ", " << threads << " threads, row " << r
              << ", column " << c << ": " << alone[c] << " alone against "
              << all[r * n + c];
      }
    }
  }
  setKernelThreads(1);
  releaseKernelWeights(w.data());
  releaseKernelWeights(halves.data());
  releaseKernelWeights(brains.data());
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

/// ReLU keeps a NaN (torch.relu(nan) is nan): an input row holding a NaN
/// gives NaN in every output of that row with the activation on, for
/// float32, bfloat16 and int8 (whose row scale is then NaN), on every route;
/// the other rows stay finite. max(v, 0) with v the first operand of
/// vmaxps gave 0 for them.
TEST(LibraryLinear, ReluKeepsNotANumber) {
  std::mt19937 rng(19);
  const int64_t n = 40, k = 24;
  for (Route route : kRoutes) {
    setKernelThreads(static_cast<int>(route.threads));
    std::vector<float> x = normal(route.rows * k, rng), w = normal(n * k, rng),
                       b = normal(n, rng);
    const int64_t nanRow = route.rows / 2;
    x[nanRow * k + 5] = NAN;
    std::vector<uint16_t> bits(w.size());
    for (size_t i = 0; i < w.size(); ++i)
      bits[i] = tfmc::floatToBFloat16(w[i]);
    QuantizedMatrix q = quantizeRows(w.data(), n, k);
    auto xd = rows3(x, route.batch, route.rows, k);
    auto bd = vector1(b);
    for (const char *type : {"float32", "bfloat16", "int8"}) {
      std::vector<float> y(route.rows * n, 0.5f);
      auto yd = rows3(y, route.batch, route.rows, n);
      if (type[0] == 'f') {
        auto wd = matrix(w, n, k);
        _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, /*relu*/ 1);
      } else if (type[0] == 'b') {
        auto wd = matrix(bits, n, k);
        _mlir_ciface_tfm_rt_linear_bf16(&xd, &wd, &bd, &yd, /*relu*/ 1);
      } else {
        auto wd = matrix(q.values, n, k);
        auto sd = vector1(q.scales);
        _mlir_ciface_tfm_rt_linear_i8(&xd, &wd, &sd, &bd, &yd, /*relu*/ 1);
      }
      ASSERT_EQ(takeKernelError(), "");
      for (int64_t r = 0; r < route.rows; ++r)
        for (int64_t c = 0; c < n; ++c) {
          float v = y[r * n + c];
          if (r == nanRow)
            ASSERT_TRUE(std::isnan(v))
                << type << ", " << route.rows << " rows, " << route.threads
                << " threads, column " << c << ": " << v;
          else
            ASSERT_TRUE(std::isfinite(v) && v >= 0)
                << type << ", " << route.rows << " rows, at " << r << "," << c;
        }
    }
    releaseKernelWeights(w.data());
    releaseKernelWeights(bits.data());
    releaseKernelWeights(q.values.data());
  }
  setKernelThreads(1);
}

/// Members of a StepTeam each call the kernels with their own rows (as the
/// slices of a decoder step do); the layers meet and split the columns.
/// Every output must be bit for bit what one call over all the rows gives,
/// for 2 and 3 members, float32, int8 and the fused argmax, with row
/// counts that fill several tiles and a ragged last panel pair.
TEST(LibraryLinear, TeamMembersComputeWhatOneCallComputes) {
  std::mt19937 rng(17);
  const int64_t n = 200, k = 40, rows = 21;
  std::vector<float> x = normal(rows * k, rng), w = normal(n * k, rng),
                     b = normal(n, rng);
  // Outputs 60 and 150 tie above all others (in different members'
  // shares): the argmax keeps the lower id.
  for (int64_t c = 0; c < k; ++c)
    w[150 * k + c] = w[60 * k + c];
  b[60] = b[150] = 100;
  QuantizedMatrix q = quantizeRows(w.data(), n, k);
  std::vector<int32_t> never = {3, 7}, allow(rows);
  for (int64_t r = 0; r < rows; ++r)
    allow[r] = r % 3 != 0;
  auto wd = matrix(w, n, k);
  auto qd = matrix(q.values, n, k);
  auto sd = vector1(q.scales);
  auto bd = vector1(b);
  auto nd = vector1(never);
  const int64_t eos = 2;

  setKernelThreads(1);
  std::vector<float> want(rows * n), wantI8(rows * n);
  std::vector<int32_t> wantIds(rows);
  {
    auto xd = rows3(x, 1, rows, k);
    auto yd = rows3(want, 1, rows, n);
    auto y8 = rows3(wantI8, 1, rows, n);
    auto ad = vector1(allow);
    auto od = vector1(wantIds);
    _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, /*relu*/ 1);
    _mlir_ciface_tfm_rt_linear_i8(&xd, &qd, &sd, &bd, &y8, /*none*/ 0);
    _mlir_ciface_tfm_rt_linear_argmax(&xd, &wd, &bd, &nd, eos, &ad, &od);
    ASSERT_EQ(takeKernelError(), "");
  }
  for (int members : {2, 3}) {
    StepTeam team(members);
    std::vector<float> y(rows * n, NAN), y8(rows * n, NAN);
    std::vector<int32_t> ids(rows, -5);
    auto body = [&](int member) {
      int64_t first = rows * member / members,
              count = rows * (member + 1) / members - first;
      MemRefDescriptor<3> xd{x.data(), x.data(), first * k, {1, count, k},
                             {count * k, k, 1}};
      MemRefDescriptor<3> yd{y.data(), y.data(), first * n, {1, count, n},
                             {count * n, n, 1}};
      MemRefDescriptor<3> yd8{y8.data(), y8.data(), first * n, {1, count, n},
                              {count * n, n, 1}};
      MemRefDescriptor<1, int32_t> ad{allow.data(), allow.data(), first,
                                      {count}, {1}};
      MemRefDescriptor<1, int32_t> od{ids.data(), ids.data(), first, {count},
                                      {1}};
      _mlir_ciface_tfm_rt_linear(&xd, &wd, &bd, &yd, /*relu*/ 1);
      _mlir_ciface_tfm_rt_linear_i8(&xd, &qd, &sd, &bd, &yd8, /*none*/ 0);
      _mlir_ciface_tfm_rt_linear_argmax(&xd, &wd, &bd, &nd, eos, &ad, &od);
    };
    team.run(body);
    ASSERT_EQ(takeKernelError(), "");
    for (int64_t i = 0; i < rows * n; ++i) {
      ASSERT_EQ(y[i], want[i]) << members << " members, at " << i;
      ASSERT_EQ(y8[i], wantI8[i]) << members << " members, at " << i;
    }
    EXPECT_EQ(ids, wantIds) << members << " members";
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(ids[r], 60) << "row " << r;
  }
  releaseKernelWeights(w.data());
  releaseKernelWeights(q.values.data());
}

} // namespace
