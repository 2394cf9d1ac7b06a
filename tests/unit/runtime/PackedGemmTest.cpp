//===- PackedGemmTest.cpp - the packed-panel kernels against plain loops --===//
#include "runtime/kernels/PackedGemm.h"
#include "frontends/model/BFloat16.h"
#include "frontends/model/Float16.h"
#include "runtime/kernels/BFloat16Operands.h"
#include "runtime/kernels/GnuOpenMp.h"
#include "runtime/kernels/Int8Rows.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/Quantize.h"
#include "tests/unit/runtime/RandomData.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <memory>
#include <random>

using namespace tfmc::runtime;
using tfmc::testing::normal;

namespace {

// Widths that are not multiples of the 16-column panel or of 4 (int8 k
// groups); every row count from 1 to 13 exercises the 6/4/2/1-row tiles.
struct Shape {
  int64_t n, k;
};
const Shape kShapes[] = {{16, 8}, {37, 19}, {5, 64}, {100, 33}, {64, 24}};

/// The instruction sets whose kernels this CPU runs (AVX-512 ones only on
/// such CPUs, AMX only where this process got its tiles: elsewhere their
/// tests have nothing to run on).
std::vector<packed::Isa> isasHere() {
  std::vector<packed::Isa> isas;
  for (packed::Isa isa :
       {packed::Isa::Avx2, packed::Isa::Avx512, packed::Isa::Amx})
    if (packed::runs(isa))
      isas.push_back(isa);
  if (!packed::runs(packed::Isa::Avx512))
    std::printf("note: no AVX-512 VNNI here; only the AVX2 kernels run\n");
  else if (!packed::runs(packed::Isa::Amx))
    std::printf("note: no AMX tiles here; their kernels do not run\n");
  return isas;
}

TEST(PackedGemm, Float32Float16AndBFloat16MatchPlainLoops) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(3);
  using packed::PanelFormat;
  for (packed::Isa isa : isasHere())
    for (Shape s : kShapes)
      for (int64_t m = 1; m <= 13; ++m)
        for (PanelFormat format :
             {PanelFormat::F32, PanelFormat::F16, PanelFormat::BF16})
          for (int32_t act : {0, 1, 2}) {
            int half = static_cast<int>(format);
            std::vector<float> x = normal(m * s.k, rng),
                               w = normal(s.n * s.k, rng), b = normal(s.n, rng),
                               y(m * s.n);
            std::vector<uint16_t> halves(w.size());
            // w becomes what the kernel multiplies.
            if (format == PanelFormat::F16)
              for (size_t i = 0; i < w.size(); ++i) {
                halves[i] = tfmc::floatToHalf(w[i]);
                w[i] = tfmc::halfToFloat(halves[i]);
              }
            // bfloat16: the input too is rounded (BFloat16Operands.h).
            std::vector<float> xr = x;
            if (format == PanelFormat::BF16) {
              for (size_t i = 0; i < w.size(); ++i) {
                halves[i] = tfmc::floatToBFloat16(w[i]);
                w[i] = tfmc::bfloat16ToFloat(halves[i]);
              }
              roundToBFloat16Operands(x.data(), x.size(), xr.data());
            }
            packed::PackedWeight pw =
                format == PanelFormat::F16
                    ? packed::packHalves(halves.data(), s.n, s.k)
                : format == PanelFormat::BF16
                    ? packed::packBFloat16(halves.data(), s.n, s.k)
                    : packed::pack(w.data(), s.n, s.k);
            packed::linear(x.data(), m, pw, b.data(), y.data(), act, isa);
            for (int64_t r = 0; r < m; ++r)
              for (int64_t c = 0; c < s.n; ++c) {
                double want = b[c];
                for (int64_t i = 0; i < s.k; ++i)
                  want += double(xr[r * s.k + i]) * w[c * s.k + i];
                if (act == 1)
                  want = std::max(want, 0.0);
                else if (act == 2)
                  want = 0.5 * want * (1 + std::erf(want / std::sqrt(2.0)));
                EXPECT_NEAR(y[r * s.n + c], want, 1e-4 * (1 + std::fabs(want)))
                    << "isa " << int(isa) << " n " << s.n << " k " << s.k
                    << " m " << m << " half " << half << " act " << act
                    << " at " << r << "," << c;
              }
          }
}

TEST(PackedGemm, Int8ProductsAreExact) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(5);
  // Extremes included: inputs up to 127 (q + 64 for q = 63) times weights
  // of ±127 are the largest pair sums vpmaddubsw sees.
  std::uniform_int_distribution<int> xs(0, 2 * kActivationLevels + 1);
  std::uniform_int_distribution<int> ws(-127, 127);
  // k of 200 and 256: whole AMX tiles of k (64 values), and 200's two
  // groups of 4 past them; 16 rows and more: AMX's pairs of row blocks.
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back({70, 200});
  shapes.push_back({130, 256});
  for (packed::Isa isa : isasHere())
    for (Shape s : shapes)
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 32, 40}) {
        std::vector<int8_t> w(s.n * s.k);
        for (size_t i = 0; i < w.size(); ++i)
          w[i] = static_cast<int8_t>(i % 7 == 0    ? 127
                                     : i % 11 == 0 ? -127
                                                   : ws(rng));
        packed::PackedWeight pw = packed::packInt8(w.data(), s.n, s.k);
        ASSERT_EQ(pw.kPadded % 4, 0);
        std::vector<uint8_t> x(m * pw.kPadded, 0xAB); // padding: any value
        for (int64_t r = 0; r < m; ++r)
          for (int64_t i = 0; i < s.k; ++i)
            x[r * pw.kPadded + i] = static_cast<uint8_t>(
                i % 5 == 0 ? 2 * kActivationLevels + 1 : xs(rng));
        std::vector<int32_t> acc(m * s.n);
        packed::int8Products(x.data(), m, pw, acc.data(), isa);
        for (int64_t c = 0; c < s.n; ++c) {
          int32_t sum = 0;
          for (int64_t i = 0; i < s.k; ++i)
            sum += w[c * s.k + i];
          EXPECT_EQ(pw.rowSums[c], sum);
        }
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < s.n; ++c) {
            int32_t want = 0;
            for (int64_t i = 0; i < s.k; ++i)
              want += int32_t(x[r * pw.kPadded + i]) * w[c * s.k + i];
            EXPECT_EQ(acc[r * s.n + c], want)
                << "isa " << int(isa) << " n " << s.n << " k " << s.k << " m "
                << m;
          }
      }
}

/// int8ProductsBlock writes panels [first, end) into a block of its own
/// width (rows `ld` apart, column c at c - 16 · first): the products of
/// int8Products, on every instruction set, for blocks that end in the last
/// (partial) panel, single panels and pairs.
TEST(PackedGemm, Int8ProductsIntoBlocks) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> xs(0, 2 * kActivationLevels + 1);
  std::uniform_int_distribution<int> ws(-127, 127);
  for (packed::Isa isa : isasHere())
    for (Shape s :
         {Shape{100, 33}, Shape{37, 19}, Shape{160, 64}, Shape{150, 136}})
      for (int64_t m : {1, 3, 8, 13, 33}) {
        std::vector<int8_t> w(s.n * s.k);
        for (int8_t &v : w)
          v = static_cast<int8_t>(ws(rng));
        packed::PackedWeight pw = packed::packInt8(w.data(), s.n, s.k);
        std::vector<uint8_t> x(m * pw.kPadded, 0);
        for (uint8_t &v : x)
          v = static_cast<uint8_t>(xs(rng));
        std::vector<int32_t> all(m * s.n);
        packed::int8Products(x.data(), m, pw, all.data(), isa);
        int64_t panels = packed::panelCount(s.n);
        for (int64_t blockPanels : {1, 2, 3}) {
          int64_t ld = blockPanels * packed::kPanel + 5; // wider than needed
          for (int64_t p = 0; p < panels; p += blockPanels) {
            int64_t end = std::min(panels, p + blockPanels);
            std::vector<int32_t> block(m * ld, -1);
            packed::int8ProductsBlock(x.data(), m, pw, block.data(), ld, p,
                                      end, isa);
            for (int64_t r = 0; r < m; ++r)
              for (int64_t c = p * packed::kPanel;
                   c < std::min(s.n, end * packed::kPanel); ++c)
                ASSERT_EQ(block[r * ld + c - p * packed::kPanel],
                          all[r * s.n + c])
                    << "isa " << int(isa) << " n " << s.n << " m " << m
                    << " panels [" << p << ", " << end << ") c " << c;
          }
        }
      }
}

/// Both instruction sets accumulate every output in the same order, so a
/// model translates identically on AVX2 and AVX-512 machines.
TEST(PackedGemm, Avx512ResultsAreBitIdenticalToAvx2) {
  if (!packed::runs(packed::Isa::Avx512))
    GTEST_SKIP() << "needs AVX-512 VNNI (this CPU runs only the AVX2 kernels)";
  std::mt19937 rng(7);
  for (Shape s : {Shape{512, 512}, Shape{1000, 256}, Shape{48, 77}})
    for (int64_t m : {1, 5, 6, 16, 23, 64})
      for (int half : {0, 1, 2}) { // float32, float16, bfloat16
        std::vector<float> x = normal(m * s.k, rng), w = normal(s.n * s.k, rng),
                           b = normal(s.n, rng);
        std::vector<uint16_t> halves(w.size());
        for (size_t i = 0; i < w.size(); ++i)
          halves[i] = half == 2 ? tfmc::floatToBFloat16(w[i])
                                : tfmc::floatToHalf(w[i]);
        packed::PackedWeight pw =
            half == 1   ? packed::packHalves(halves.data(), s.n, s.k)
            : half == 2 ? packed::packBFloat16(halves.data(), s.n, s.k)
                        : packed::pack(w.data(), s.n, s.k);
        std::vector<float> y2(m * s.n), y512(m * s.n);
        packed::linear(x.data(), m, pw, b.data(), y2.data(), 1,
                       packed::Isa::Avx2);
        packed::linear(x.data(), m, pw, b.data(), y512.data(), 1,
                       packed::Isa::Avx512);
        EXPECT_EQ(
            0, std::memcmp(y2.data(), y512.data(), y2.size() * sizeof(float)))
            << "n " << s.n << " k " << s.k << " m " << m << " half " << half;
      }
}

/// AMX's int8 tiles give the integer sums of vpdpbusd and of the AVX2
/// kernels, bit for bit, at the decoder's and the encoder's sizes (row
/// counts that fill pairs of 16-row blocks, and ones that leave a short
/// block; k with and without a remainder past the 64-value tiles).
/// A random int8 layer of shape `s`, packed, and `m` rows of operands for
/// it (u8 codes as the layers store them, rows kPadded apart).
struct Int8Case {
  packed::PackedWeight weight;
  std::vector<uint8_t> rows;
};
Int8Case randomInt8Case(Shape s, int64_t m, std::mt19937 &rng) {
  std::uniform_int_distribution<int> xs(1, 2 * kActivationLevels + 1);
  std::uniform_int_distribution<int> ws(-127, 127);
  std::vector<int8_t> w(s.n * s.k);
  for (int8_t &v : w)
    v = static_cast<int8_t>(ws(rng));
  Int8Case c{packed::packInt8(w.data(), s.n, s.k), {}};
  c.rows.resize(m * c.weight.kPadded);
  for (uint8_t &v : c.rows)
    v = static_cast<uint8_t>(xs(rng));
  return c;
}

TEST(PackedGemm, AmxInt8SumsAreTheVectorKernels) {
  if (!packed::runs(packed::Isa::Amx))
    GTEST_SKIP() << "needs AMX tiles (AMX-TILE, AMX-INT8, AMX-BF16) and the "
                    "operating system's leave to use them";
  std::mt19937 rng(19);
  // (One or two rows run vpdpbusd under Isa::Amx too: int8Tiles() in
  // PackedGemm.cpp.)
  for (Shape s : {Shape{512, 512}, Shape{2048, 512}, Shape{512, 2048},
                  Shape{1000, 256}, Shape{48, 77}, Shape{33, 100}})
    for (int64_t m : {1, 3, 5, 16, 17, 23, 32, 48, 64, 100, 256}) {
      auto [pw, x] = randomInt8Case(s, m, rng);
      std::vector<int32_t> vnni(m * s.n, -1), avx2(m * s.n, -2),
          tiles(m * s.n, -3);
      packed::int8Products(x.data(), m, pw, avx2.data(), packed::Isa::Avx2);
      packed::int8Products(x.data(), m, pw, vnni.data(), packed::Isa::Avx512);
      packed::int8Products(x.data(), m, pw, tiles.data(), packed::Isa::Amx);
      ASSERT_EQ(tiles, vnni) << "n " << s.n << " k " << s.k << " m " << m;
      ASSERT_EQ(tiles, avx2) << "n " << s.n << " k " << s.k << " m " << m;
    }
}

/// int8Linear (products and outputs in one pass; on AMX dequantized tile by
/// tile as the sums leave the tiles) gives, on every instruction set here,
/// one or two threads, with and without ReLU, the bits of int8Products()
/// followed by dequantizeRow(), for shapes with k past whole tiles and
/// partial row blocks and panels.
TEST(PackedGemm, Int8LinearIsItsProductsDequantized) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "the packed kernels need AVX2";
  std::mt19937 rng(29);
  // (On AMX, 64 × 2100 runs pairs of row blocks, the others single ones:
  // PackedGemmAmx.cpp.)
  for (Shape s :
       {Shape{512, 512}, Shape{2048, 71}, Shape{48, 77}, Shape{33, 100},
        Shape{100, 33}, Shape{1000, 256}, Shape{64, 2100}})
    for (int64_t m : {1, 3, 5, 16, 17, 33, 64, 100, 130}) {
      auto [pw, x] = randomInt8Case(s, m, rng);
      std::vector<float> rowScales = normal(m, rng), wScale = normal(s.n, rng),
                         bias = normal(s.n, rng);
      for (float &v : rowScales)
        v = std::fabs(v) * 0.01f;
      for (float &v : wScale)
        v = std::fabs(v) * 0.01f;
      std::vector<int32_t> sums(m * s.n);
      packed::int8Products(x.data(), m, pw, sums.data(), packed::Isa::Avx2);
      const int32_t offset = kActivationLevels + 1;
      for (bool relu : {false, true}) {
        std::vector<float> want(m * s.n);
        for (int64_t r = 0; r < m; ++r)
          dequantizeRowAvx2(sums.data() + r * s.n, pw.rowSums.data(), offset,
                            rowScales[r], wScale.data(), bias.data(),
                            want.data() + r * s.n, s.n, relu);
        for (packed::Isa isa : isasHere())
          for (int threads : {1, 2}) {
            std::vector<float> got(m * s.n, -7.0f);
            packed::int8Linear(x.data(), m, pw,
                               {rowScales.data(), wScale.data(), bias.data(),
                                offset, relu, got.data(), s.n},
                               isa, threads);
            ASSERT_EQ(std::memcmp(got.data(), want.data(),
                                  want.size() * sizeof(float)),
                      0)
                << "isa " << static_cast<int>(isa) << " threads " << threads
                << " n " << s.n << " k " << s.k << " m " << m
                << (relu ? " relu" : "");
          }
      }
    }
}

/// AMX's bfloat16 tiles add each tile's 32 products of k their own way
/// (PackedGemmAmx.cpp), so their outputs are not vdpbf16ps's bit for bit;
/// each is within float32 accumulation's error bound of the exact sum (of
/// the rounded operands: γ(k + 1) · (|b| + Σ|x·w|)), subnormal operands
/// count as zeros, and an output is the same bits wherever its row sits in
/// the call (alone, among others, after others), however the columns are
/// split (threads, blocks), so a sentence's translation does not depend on
/// its batch.
TEST(PackedGemm, AmxBFloat16IsBoundedAndIndependentOfItsPlace) {
  if (!packed::runs(packed::Isa::Amx))
    GTEST_SKIP() << "needs AMX tiles (AMX-TILE, AMX-INT8, AMX-BF16) and the "
                    "operating system's leave to use them";
  std::mt19937 rng(23);
  // (96 × 1100 runs pairs of row blocks on the tiles, the others single
  // ones: PackedGemmAmx.cpp.)
  for (Shape s :
       {Shape{512, 512}, Shape{100, 33}, Shape{48, 77}, Shape{130, 70},
        Shape{16, 1}, Shape{1000, 256}, Shape{96, 1100}})
    for (int64_t m : {1, 3, 16, 17, 33, 64, 100})
      for (int32_t act : {0, 1}) {
        std::vector<float> x = normal(m * s.k, rng), w = normal(s.n * s.k, rng),
                           b = normal(s.n, rng);
        for (size_t i = 0; i < x.size(); ++i)
          if (i % 29 == 5)
            x[i] = 1e-39f; // subnormal: read as zero
        std::vector<uint16_t> bits(w.size());
        for (size_t i = 0; i < w.size(); ++i)
          bits[i] = i % 37 == 3 ? uint16_t(0x0042) // subnormal weight
                                : tfmc::floatToBFloat16(w[i]);
        packed::PackedWeight pw = packed::packBFloat16(bits.data(), s.n, s.k);
        std::vector<float> y(m * s.n, NAN), xr(x.size());
        roundToBFloat16Operands(x.data(), x.size(), xr.data());
        packed::linear(x.data(), m, pw, b.data(), y.data(), act,
                       packed::Isa::Amx);
        const double gamma = (s.k + 2) * std::ldexp(1.0, -24) /
                             (1 - (s.k + 2) * std::ldexp(1.0, -24));
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < s.n; ++c) {
            double exact = b[c], magnitude = std::fabs(b[c]);
            for (int64_t i = 0; i < s.k; ++i) {
              double p =
                  double(xr[r * s.k + i]) *
                  tfmc::bfloat16ToFloat(bfloat16Operand(bits[c * s.k + i]));
              exact += p;
              magnitude += std::fabs(p);
            }
            if (act == 1)
              exact = std::max(exact, 0.0);
            ASSERT_LE(std::fabs(y[r * s.n + c] - exact), gamma * magnitude)
                << "n " << s.n << " k " << s.k << " m " << m << " at " << r
                << "," << c << ": " << y[r * s.n + c] << " against " << exact;
          }
        // Each row alone; the rows after three others; two threads;
        // blocks of three panels.
        for (int64_t r = 0; r < m; ++r) {
          std::vector<float> alone(s.n);
          packed::linear(x.data() + r * s.k, 1, pw, b.data(), alone.data(), act,
                         packed::Isa::Amx);
          ASSERT_EQ(0, std::memcmp(alone.data(), y.data() + r * s.n,
                                   s.n * sizeof(float)))
              << "n " << s.n << " k " << s.k << " m " << m << " row " << r;
        }
        std::vector<float> shifted = normal(3 * s.k, rng);
        shifted.insert(shifted.end(), x.begin(), x.end());
        std::vector<float> after((m + 3) * s.n), split(m * s.n, NAN);
        packed::linear(shifted.data(), m + 3, pw, b.data(), after.data(), act,
                       packed::Isa::Amx);
        ASSERT_EQ(0, std::memcmp(after.data() + 3 * s.n, y.data(),
                                 y.size() * sizeof(float)))
            << "n " << s.n << " k " << s.k << " m " << m << " after 3 rows";
        packed::linear(x.data(), m, pw, b.data(), split.data(), act,
                       packed::Isa::Amx, /*threads=*/2);
        ASSERT_EQ(0,
                  std::memcmp(split.data(), y.data(), y.size() * sizeof(float)))
            << "n " << s.n << " k " << s.k << " m " << m << " two threads";
        int64_t panels = packed::panelCount(s.n);
        for (int64_t p = 0; p < panels; p += 3) {
          int64_t end = std::min(panels, p + 3), ld = 3 * packed::kPanel;
          std::vector<float> block(m * ld, NAN);
          packed::linearColumns(x.data(), m, pw, b.data(), block.data(), ld, p,
                                end, act, packed::Isa::Amx);
          for (int64_t r = 0; r < m; ++r)
            for (int64_t c = p * packed::kPanel;
                 c < std::min(s.n, end * packed::kPanel); ++c)
              ASSERT_EQ(0, std::memcmp(&block[r * ld + c - p * packed::kPanel],
                                       &y[r * s.n + c], sizeof(float)))
                  << "n " << s.n << " m " << m << " block " << p << " c " << c;
        }
      }
}

/// A bfloat16 layer's every output is exactly the bias, then per pair of k
/// an FMA of the odd k and one of the even k, on the input rounded to
/// bfloat16 operands and the weights with their subnormals as zeros
/// (BFloat16Operands.h), on every instruction set here: vdpbf16ps with
/// avx512_bf16, the AVX2 kernel's widened pairs otherwise. Odd k (a
/// padded last pair), inputs with runs of zeros (the steps a tile skips),
/// subnormal inputs and weights, values halfway between two bfloat16s, and
/// for odd row counts the floating-point mode of a -ffast-math program.
TEST(PackedGemm, BFloat16SumsArePairsOfFmasOnRoundedInputs) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(13);
  for (packed::Isa isa : isasHere())
    for (Shape s : {Shape{100, 33}, Shape{37, 19}, Shape{512, 512},
                    Shape{48, 77}, Shape{16, 1}})
      for (int64_t m : {1, 3, 6, 8, 13, 16, 23})
        for (int32_t act : {0, 1}) {
          std::vector<float> x = normal(m * s.k, rng),
                             w = normal(s.n * s.k, rng), b = normal(s.n, rng);
          for (size_t i = 0; i < x.size(); ++i) {
            if (i % 3 != 0 || (i / s.k) % 2 == 0)
              x[i] = i % 7 < 4 ? 0.0f : x[i]; // zeros, most of them paired
            if (i % 29 == 5)
              x[i] = 1e-39f; // subnormal: read as zero
            if (i % 31 == 7) {
              uint32_t tie = 0x3f808000u; // halfway: rounds to even
              std::memcpy(&x[i], &tie, sizeof(float));
            }
          }
          std::vector<uint16_t> bits(w.size());
          for (size_t i = 0; i < w.size(); ++i)
            bits[i] = i % 37 == 3 ? uint16_t(0x0042) // subnormal weight
                                  : tfmc::floatToBFloat16(w[i]);
          packed::PackedWeight pw = packed::packBFloat16(bits.data(), s.n, s.k);
          std::vector<float> y(m * s.n), xr(x.size());
          roundToBFloat16Operands(x.data(), x.size(), xr.data());
          // Odd and even shapes alike in a -ffast-math program's mode
          // (subnormals flushed and read as zero: MXCSR FTZ and DAZ),
          // where a pair with a zero odd value reads as a subnormal float.
          const unsigned saved = _mm_getcsr();
          if (m % 2)
            _mm_setcsr(saved | 0x8040u);
          // AMX's tiles add their own way (the test above).
          packed::Isa vectors =
              isa == packed::Isa::Amx ? packed::Isa::Avx512 : isa;
          packed::linear(x.data(), m, pw, b.data(), y.data(), act, vectors);
          _mm_setcsr(saved);
          for (int64_t r = 0; r < m; ++r)
            for (int64_t c = 0; c < s.n; ++c) {
              float acc = b[c];
              for (int64_t i = 0; i < s.k; i += 2)
                for (int64_t j = std::min(i + 1, s.k - 1); j >= i; --j)
                  acc = std::fma(
                      xr[r * s.k + j],
                      tfmc::bfloat16ToFloat(bfloat16Operand(bits[c * s.k + j])),
                      acc);
              if (act == 1)
                acc = acc > 0 ? acc : 0.0f;
              float got = y[r * s.n + c];
              ASSERT_EQ(0, std::memcmp(&got, &acc, sizeof(float)))
                  << "isa " << int(isa) << " n " << s.n << " k " << s.k << " m "
                  << m << " act " << act << " at " << r << "," << c << ": "
                  << got << " against " << acc;
            }
        }
}

/// Float32 weights that are all halves exactly (a float16 model widened at
/// load) are packed as halves, and give the float32 panels' results bit for
/// bit; one value that is not a half keeps the whole weight float32.
TEST(PackedGemm, ExactHalvesGiveTheFloat32Results) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(11);
  for (Shape s : {Shape{512, 512}, Shape{37, 19}, Shape{100, 33}})
    for (int64_t m : {1, 5, 8, 16, 23, 64}) {
      std::vector<float> x = normal(m * s.k, rng), w = normal(s.n * s.k, rng),
                         b = normal(s.n, rng);
      for (float &v : w)
        v = tfmc::halfToFloat(tfmc::floatToHalf(v));
      w[0] = -0.0f;                    // a half too
      w[1] = 6.0e-8f;                  // rounds to the smallest subnormal half
      w[1] = tfmc::halfToFloat(tfmc::floatToHalf(w[1]));
      packed::PackedWeight halves = packed::pack(w.data(), s.n, s.k);
      packed::PackedWeight floats =
          packed::pack(w.data(), s.n, s.k, /*exactAsHalves=*/false);
      ASSERT_EQ(halves.format(), packed::PanelFormat::F16);
      ASSERT_TRUE(halves.exactHalves);
      ASSERT_EQ(floats.format(), packed::PanelFormat::F32);
      for (packed::Isa isa : isasHere())
        for (int32_t act : {0, 1}) {
          std::vector<float> y(m * s.n), want(m * s.n);
          packed::linear(x.data(), m, halves, b.data(), y.data(), act, isa);
          packed::linear(x.data(), m, floats, b.data(), want.data(), act, isa);
          EXPECT_EQ(0,
                    std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
              << "isa " << int(isa) << " n " << s.n << " k " << s.k << " m "
              << m << " act " << act;
        }
      // The last value (past the 8-wide checks when n * k is not a multiple
      // of 8) or one in the middle is not a half: float32 panels.
      for (size_t at : {w.size() - 1, w.size() / 2}) {
        std::vector<float> notHalves = w;
        notHalves[at] = std::nextafter(notHalves[at], 10.0f);
        EXPECT_EQ(packed::pack(notHalves.data(), s.n, s.k).format(),
                  packed::PanelFormat::F32)
            << at;
      }
      // Values at the edges of the half range, in the vector part and in
      // the scalar tail (n * k = 703 and 3300 are not multiples of 8).
      struct Edge {
        float value;
        bool half;
      };
      const Edge edges[] = {{65504.0f, true},
                            {65520.0f, false}, // between the two largest halves
                            {65536.0f, false}, // past the largest half
                            {std::ldexp(1.0f, -24), true},
                            {std::ldexp(3.0f, -25), false},
                            {std::ldexp(3.0f, -24), true}, // subnormal
                            {std::ldexp(1.0f, -14), true},
                            {std::ldexp(1.0f + 0x1p-10f, -14), true},
                            {std::ldexp(1.0f + 0x1p-11f, -14), false},
                            {std::ldexp(1.0f, -25), false},
                            {-2.5f, true},
                            {std::numeric_limits<float>::infinity(), false},
                            {std::nanf(""), false}};
      for (const Edge &e : edges)
        for (size_t at : {size_t(2), w.size() - 1}) {
          std::vector<float> v = w;
          v[at] = e.value;
          packed::PackedWeight pw = packed::pack(v.data(), s.n, s.k);
          EXPECT_EQ(pw.format(), e.half ? packed::PanelFormat::F16
                                        : packed::PanelFormat::F32)
              << e.value << " at " << at;
          if (!e.half)
            continue;
          // The half stored is that value's: one row through the kernel.
          std::vector<float> unit(s.k, 0.0f), zeros(s.n, 0.0f), y(s.n);
          unit[at % s.k] = 1.0f;
          packed::linear(unit.data(), 1, pw, zeros.data(), y.data(), 0);
          EXPECT_EQ(y[at / s.k], e.value) << e.value << " at " << at;
        }
    }
}

/// Inputs as a ReLU leaves them: skipping the k steps where a whole row
/// tile is zero gives the results of running every step, bit for bit, on
/// each instruction set, alone and with the columns split between threads
/// (each share reads the plan its caller made).
TEST(PackedGemm, SkippingZeroStepsChangesNoResult) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (packed::Isa isa : isasHere())
    for (Shape s :
         {Shape{37, 19}, Shape{100, 64}, Shape{256, 1024}, Shape{48, 77}})
      for (int64_t m : {1, 2, 5, 6, 13, 32})
        for (float zeros : {0.5f, 0.9f, 0.99f, 1.0f}) {
          std::vector<float> x = normal(m * s.k, rng),
                             w = normal(s.n * s.k, rng), b = normal(s.n, rng);
          for (float &v : x)
            if (uniform(rng) < zeros)
              v = 0.0f;
          // A row tile of zeros only, when there are two tiles.
          if (m >= 12)
            std::fill(x.begin() + 6 * s.k, x.begin() + 12 * s.k, 0.0f);
          std::vector<uint16_t> halves(w.size());
          for (size_t i = 0; i < w.size(); ++i)
            halves[i] = tfmc::floatToHalf(w[i]);
          for (bool half : {false, true})
            for (int threads : {1, 2}) {
              packed::PackedWeight pw =
                  half ? packed::packHalves(halves.data(), s.n, s.k)
                       : packed::pack(w.data(), s.n, s.k);
              // Every step, one thread: what each split must reproduce.
              std::vector<float> all(m * s.n, NAN), skipped(m * s.n, NAN);
              packed::linear(x.data(), m, pw, b.data(), all.data(), 0, isa, 1,
                             /*skipZeros*/ false);
              packed::linear(x.data(), m, pw, b.data(), skipped.data(), 0, isa,
                             threads, /*skipZeros*/ true);
              ASSERT_EQ(0, std::memcmp(all.data(), skipped.data(),
                                       all.size() * sizeof(float)))
                  << "isa " << int(isa) << " n " << s.n << " k " << s.k << " m "
                  << m << " zeros " << zeros << " half " << half << " threads "
                  << threads;
            }
        }
}

/// Columns split between threads (whole pairs of panels each) give the
/// single thread's results bit for bit, activation included, on every
/// instruction set; panels fewer than threads leave some threads idle.
TEST(PackedGemm, ThreadsSplittingColumnsGiveTheSameResults) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(9);
  for (packed::Isa isa : isasHere())
    for (Shape s : {Shape{16, 8}, Shape{37, 19}, Shape{100, 33},
                    Shape{1000, 64}, Shape{48, 77}})
      for (int64_t m : {1, 3, 7, 16})
        for (int threads : {2, 3, 5}) {
          std::vector<float> x = normal(m * s.k, rng),
                             w = normal(s.n * s.k, rng), b = normal(s.n, rng);
          std::vector<uint16_t> halves(w.size());
          for (size_t i = 0; i < w.size(); ++i)
            halves[i] = tfmc::floatToHalf(w[i]);
          for (bool half : {false, true}) {
            packed::PackedWeight pw =
                half ? packed::packHalves(halves.data(), s.n, s.k)
                     : packed::pack(w.data(), s.n, s.k);
            std::vector<float> one(m * s.n, NAN), split(m * s.n, NAN);
            packed::linear(x.data(), m, pw, b.data(), one.data(),
                           /*relu*/ 1, isa, 1);
            packed::linear(x.data(), m, pw, b.data(), split.data(),
                           /*relu*/ 1, isa, threads);
            ASSERT_EQ(0, std::memcmp(one.data(), split.data(),
                                     one.size() * sizeof(float)))
                << "isa " << int(isa) << " n " << s.n << " k " << s.k << " m "
                << m << " threads " << threads << " half " << half;
          }
          std::vector<int8_t> wq(s.n * s.k);
          for (size_t i = 0; i < wq.size(); ++i)
            wq[i] = static_cast<int8_t>(int(i * 37 % 255) - 127);
          packed::PackedWeight pq = packed::packInt8(wq.data(), s.n, s.k);
          std::vector<uint8_t> xq(m * pq.kPadded);
          for (size_t i = 0; i < xq.size(); ++i)
            xq[i] = static_cast<uint8_t>(i * 13 % 128);
          std::vector<int32_t> one(m * s.n, -1), split(m * s.n, -2);
          packed::int8Products(xq.data(), m, pq, one.data(), isa, 1);
          packed::int8Products(xq.data(), m, pq, split.data(), isa, threads);
          ASSERT_EQ(one, split) << "isa " << int(isa) << " n " << s.n << " m "
                                << m << " threads " << threads;
        }
}

/// Inside another (active) OpenMP parallel region GNU OpenMP gives nested
/// teams of one thread: the split must still compute every column.
TEST(PackedGemm, SplitInsideAParallelRegionComputesEveryColumn) {
  if (!packed::availableOnThisCpu())
    GTEST_SKIP() << "needs AVX2 and FMA";
  std::mt19937 rng(13);
  const int64_t n = 200, k = 48, m = 3;
  struct Case {
    std::vector<float> x, w, b, one, nested[2];
    packed::PackedWeight pw;
  } c;
  c.x = normal(m * k, rng);
  c.w = normal(n * k, rng);
  c.b = normal(n, rng);
  c.pw = packed::pack(c.w.data(), n, k);
  c.one.assign(m * n, NAN);
  for (auto &out : c.nested)
    out.assign(m * n, NAN);
  packed::linear(c.x.data(), m, c.pw, c.b.data(), c.one.data(), 0,
                 packed::preferredIsa(), 1);
  GOMP_parallel(
      [](void *data) {
        Case &c = *static_cast<Case *>(data);
        int t = omp_get_thread_num();
        if (t < 2)
          packed::linear(c.x.data(), m, c.pw, c.b.data(), c.nested[t].data(), 0,
                         packed::preferredIsa(), 2);
      },
      &c, 2, 0);
  for (const auto &out : c.nested)
    EXPECT_EQ(
        0, std::memcmp(c.one.data(), out.data(), c.one.size() * sizeof(float)));
}

} // namespace

TEST(PackedGemm, LayersInTurnKeepTheirResults) {
  // Layers run A, B, A, B... (each layer's last panels prefetch the next
  // one's first), then A is gone and C runs after B: every result is that
  // of the weight run alone, and nothing reads a weight that is gone.
  std::mt19937 rng(7);
  const int64_t m = 5;
  const Shape shapes[] = {{100, 33}, {64, 24}, {37, 19}};
  for (packed::Isa isa : isasHere()) {
    std::vector<std::vector<float>> ws, xs, want;
    std::vector<float> b(100, 0.25f);
    for (Shape s : shapes) {
      ws.push_back(normal(s.n * s.k, rng));
      xs.push_back(normal(m * s.k, rng));
      packed::PackedWeight alone =
          packed::pack(ws.back().data(), s.n, s.k, false);
      want.emplace_back(m * s.n);
      packed::linear(xs.back().data(), m, alone, b.data(), want.back().data(),
                     0, isa);
    }
    auto run = [&](const packed::PackedWeight &w, int i) {
      std::vector<float> y(m * shapes[i].n);
      packed::linear(xs[i].data(), m, w, b.data(), y.data(), 0, isa);
      EXPECT_EQ(std::memcmp(y.data(), want[i].data(), y.size() * sizeof(float)),
                0)
          << "weight " << i;
    };
    auto bw = std::make_unique<packed::PackedWeight>(
        packed::pack(ws[1].data(), shapes[1].n, shapes[1].k, false));
    {
      packed::PackedWeight a =
          packed::pack(ws[0].data(), shapes[0].n, shapes[0].k, false);
      for (int round = 0; round < 3; ++round) {
        run(a, 0);
        run(*bw, 1);
      }
    }
    packed::PackedWeight c =
        packed::pack(ws[2].data(), shapes[2].n, shapes[2].k, false);
    for (int round = 0; round < 2; ++round) {
      run(*bw, 1);
      run(c, 2);
    }
  }
}
