//===- SafeTensorsTest.cpp - safetensors reading and validation -----------===//

#include "TestFiles.h"

#include "frontends/model/SafeTensors.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

class SafeTensorsTest : public ::testing::Test {
protected:
  /// Writes `bytes` as w.safetensors and returns the open error message.
  std::string openError(StringRef bytes) {
    std::string path = dir.write("w.safetensors", bytes);
    Expected<std::unique_ptr<SafeTensorsFile>> file =
        SafeTensorsFile::open(path);
    if (file)
      return "";
    return toString(file.takeError());
  }
  /// `openError` with the "<path>: " prefix removed (checked).
  std::string openErrorBody(StringRef bytes) {
    std::string msg = openError(bytes);
    std::string prefix = dir.file("w.safetensors") + ": ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
    return msg.size() >= prefix.size() ? msg.substr(prefix.size()) : msg;
  }
  std::unique_ptr<SafeTensorsFile> openOk(StringRef bytes) {
    std::string path = dir.write("w.safetensors", bytes);
    Expected<std::unique_ptr<SafeTensorsFile>> file =
        SafeTensorsFile::open(path);
    EXPECT_TRUE(bool(file)) << toString(file.takeError());
    return file ? std::move(*file) : nullptr;
  }
  static std::string oneTensorHeader(StringRef entry) {
    return (Twine("{\"x\":") + entry + "}").str();
  }

  TempDir dir;
};

TEST_F(SafeTensorsTest, F32IsZeroCopyWhenAligned) {
  // Header padded so the data section starts at a multiple of 4.
  std::vector<RawTensor> tensors = {
      {"a", "F32", {2, 3}, f32Bytes({1, 2, 3, 4, 5, -6.5f})},
      {"b", "F32", {2}, f32Bytes({0.25f, 1e30f})}};
  std::string bytes = safeTensorsBytes(tensors);
  size_t headerLen = bytes.size() - 8 - 32;
  bytes = safeTensorsBytes(tensors, (4 - headerLen % 4) % 4);
  ASSERT_EQ((bytes.size() - 32) % 4, 0u);
  std::unique_ptr<SafeTensorsFile> file = openOk(bytes);
  ASSERT_TRUE(file);
  ASSERT_EQ(file->tensors().size(), 2u);
  const TensorView *a = file->find("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->dtype, "F32");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->numElements(), 6);
  EXPECT_EQ(a->data[0], 1.0f);
  EXPECT_EQ(a->data[5], -6.5f);
  const TensorView *b = file->find("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->data[1], 1e30f);
  // Zero copy: the bytes in front of the first tensor are the file's header.
  size_t dataStart = bytes.size() - 32;
  const char *base = reinterpret_cast<const char *>(a->data) - dataStart;
  EXPECT_EQ(std::memcmp(base, bytes.data(), dataStart), 0);
  EXPECT_EQ(reinterpret_cast<const char *>(b->data),
            reinterpret_cast<const char *>(a->data) + 24);
}

TEST_F(SafeTensorsTest, F32UnalignedIsCopied) {
  std::vector<RawTensor> tensors = {
      {"a", "F32", {3}, f32Bytes({1.5f, -2.0f, 3.25f})}};
  std::string bytes = safeTensorsBytes(tensors);
  size_t headerLen = bytes.size() - 8 - 12;
  // Pad so that the data section starts at 1 modulo 4.
  bytes = safeTensorsBytes(tensors, (5 - headerLen % 4) % 4);
  ASSERT_EQ((bytes.size() - 12) % 4, 1u);
  ASSERT_NE((bytes.size() - 12) % 4, 0u);
  std::unique_ptr<SafeTensorsFile> file = openOk(bytes);
  ASSERT_TRUE(file);
  const TensorView *a = file->find("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % alignof(float), 0u);
  EXPECT_EQ(a->data[0], 1.5f);
  EXPECT_EQ(a->data[1], -2.0f);
  EXPECT_EQ(a->data[2], 3.25f);
}

TEST_F(SafeTensorsTest, F16Conversion) {
  std::vector<uint16_t> halves = {
      0x3C00, // 1
      0xC000, // -2
      0x3800, // 0.5
      0x7BFF, // 65504, largest finite
      0x0001, // 2^-24, smallest subnormal
      0x03FF, // 1023 * 2^-24, largest subnormal
      0x0400, // 2^-14, smallest normal
      0x7C00, // +inf
      0xFC00, // -inf
      0x7E00, // nan
      0x8000, // -0
      0x3555, // 0.333251953125
  };
  std::unique_ptr<SafeTensorsFile> file =
      openOk(safeTensorsBytes({{"h", "F16", {12}, u16Bytes(halves)}}));
  ASSERT_TRUE(file);
  const TensorView *h = file->find("h");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->dtype, "F16");
  const float *v = h->data;
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 65504.0f);
  EXPECT_EQ(v[4], std::ldexp(1.0f, -24));
  EXPECT_EQ(v[5], std::ldexp(1023.0f, -24));
  EXPECT_EQ(v[6], std::ldexp(1.0f, -14));
  EXPECT_EQ(v[7], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[8], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[9]));
  EXPECT_EQ(v[10], 0.0f);
  EXPECT_TRUE(std::signbit(v[10]));
  EXPECT_EQ(v[11], 0.333251953125f);
}

TEST_F(SafeTensorsTest, BF16Conversion) {
  std::vector<uint16_t> values = {0x3F80, 0xC000, 0x4049, 0x7F80,
                                  0xFF80, 0x0001, 0x7FC0, 0x8000};
  std::unique_ptr<SafeTensorsFile> file =
      openOk(safeTensorsBytes({{"b", "BF16", {2, 4}, u16Bytes(values)}}));
  ASSERT_TRUE(file);
  const TensorView *b = file->find("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->dtype, "BF16");
  const float *v = b->data;
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 3.140625f);
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[4], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[5], std::ldexp(1.0f, -133)); // float subnormal
  EXPECT_TRUE(std::isnan(v[6]));
  EXPECT_TRUE(std::signbit(v[7]));
}

TEST_F(SafeTensorsTest, ReleasingFloatCopies) {
  std::unique_ptr<SafeTensorsFile> file = openOk(safeTensorsBytes(
      {{"mapped", "F32", {2}, f32Bytes({1, 2})},
       {"half", "F16", {3}, u16Bytes({0x3C00, 0x3C00, 0x3C00})}}));
  ASSERT_TRUE(file);
  // Read in place from the file: nothing to free, the view stays.
  EXPECT_EQ(file->releaseFloatCopy("mapped"), 0);
  EXPECT_EQ(file->find("mapped")->data[1], 2.0f);
  // A converted tensor's copy goes; its name and shape stay.
  EXPECT_EQ(file->releaseFloatCopy("half"), 3 * int64_t(sizeof(float)));
  const TensorView *h = file->find("half");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->data, nullptr);
  EXPECT_EQ(h->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(file->releaseFloatCopy("half"), 0);
  EXPECT_EQ(file->releaseFloatCopy("absent"), 0);
}

std::string i8Bytes(const std::vector<int8_t> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size());
}

/// Resident kilobytes of the mapping that holds `address` (/proc/self/smaps),
/// -1 when none does.
int64_t residentKbOfMapping(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = at >= begin && at < end;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %lld kB", &kb) == 1)
      return kb;
  }
  return -1;
}

TEST_F(SafeTensorsTest, ConvertedTensorsLeaveTheMappingAndTheRestStays) {
  // 48 KB of float16 between tensors read in place (F32, I8 and its
  // scales): after open the float16 pages are no longer resident, and every
  // tensor still reads its values.
  std::vector<float> before(1000), after(1000);
  std::vector<uint16_t> halves(24 * 1024);
  std::vector<int8_t> quantized(2 * 1000);
  for (size_t i = 0; i < before.size(); ++i) {
    before[i] = float(i);
    after[i] = -float(i);
  }
  for (size_t i = 0; i < halves.size(); ++i)
    halves[i] = i % 2 ? 0x3C00 : 0xC000; // 1, -2
  for (size_t i = 0; i < quantized.size(); ++i)
    quantized[i] = static_cast<int8_t>(int(i % 255) - 127);
  std::unique_ptr<SafeTensorsFile> file =
      openOk(safeTensorsBytes({{"before", "F32", {1000}, f32Bytes(before)},
                               {"half", "F16", {24, 1024}, u16Bytes(halves)},
                               {"q", "I8", {2, 1000}, i8Bytes(quantized)},
                               {"q_scale", "F32", {2}, f32Bytes({0.5f, 2.0f})},
                               {"after", "F32", {1000}, f32Bytes(after)}}));
  ASSERT_TRUE(file);
  const float *mapped = file->find("before")->data;
  // I8 values are always read in place.
  int64_t resident = residentKbOfMapping(file->find("q")->int8);
  ASSERT_GT(resident, 0) << "the file is not a mapping of its own";
  // 4 KB header and F32, 4 KB I8, 4 KB F32 and the pages shared by
  // neighbours; the float16 span alone is 48 KB.
  EXPECT_LT(resident, 40) << "float16 pages still resident";
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(mapped[i], float(i));
    ASSERT_EQ(file->find("after")->data[i], -float(i));
  }
  const TensorView *h = file->find("half");
  for (size_t i = 0; i < halves.size(); ++i)
    ASSERT_EQ(h->data[i], i % 2 ? 1.0f : -2.0f) << i;
  const TensorView *q = file->find("q");
  for (size_t i = 0; i < quantized.size(); ++i) {
    ASSERT_EQ(q->int8[i], quantized[i]) << i;
    ASSERT_EQ(q->data[i], (i < 1000 ? 0.5f : 2.0f) * float(quantized[i]));
  }
}

TEST_F(SafeTensorsTest, TensorsInOffsetOrderAndFind) {
  std::vector<RawTensor> tensors = {{"z", "F32", {1}, f32Bytes({1})},
                                    {"a", "F16", {2}, u16Bytes({0, 0})},
                                    {"m", "F32", {}, f32Bytes({7})},
                                    {"empty", "F32", {0, 3}, ""}};
  json::Object metadata{{"format", "pt"}};
  std::unique_ptr<SafeTensorsFile> file =
      openOk(safeTensorsBytes(tensors, 0, &metadata));
  ASSERT_TRUE(file);
  ASSERT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->tensors()[0].name, "z");
  EXPECT_EQ(file->tensors()[1].name, "a");
  EXPECT_EQ(file->tensors()[2].name, "m");
  EXPECT_EQ(file->tensors()[3].name, "empty");
  EXPECT_EQ(file->find("m")->numElements(), 1);
  EXPECT_EQ(file->find("m")->data[0], 7.0f);
  EXPECT_EQ(file->find("empty")->numElements(), 0);
  EXPECT_EQ(file->find("nope"), nullptr);
  EXPECT_EQ(file->path(), dir.file("w.safetensors"));
}

TEST_F(SafeTensorsTest, MissingFile) {
  std::string path = dir.file("absent.safetensors");
  Expected<std::unique_ptr<SafeTensorsFile>> file = SafeTensorsFile::open(path);
  ASSERT_FALSE(bool(file));
  EXPECT_EQ(toString(file.takeError()),
            path + ": cannot open file: No such file or directory");
}

TEST_F(SafeTensorsTest, FileTooShort) {
  EXPECT_EQ(openErrorBody("abc"),
            "file is too short for a safetensors header (3 bytes)");
}

TEST_F(SafeTensorsTest, HeaderLengthBeyondFile) {
  std::string bytes = safeTensorsRaw("{}", "");
  bytes[0] = 100;
  EXPECT_EQ(openErrorBody(bytes),
            "header length 100 exceeds the file size (10 bytes)");
  bytes = safeTensorsRaw("{}", "");
  std::memset(&bytes[0], 0xff, 8);
  EXPECT_EQ(openErrorBody(bytes),
            "header length 18446744073709551615 exceeds the file size (10 "
            "bytes)");
}

TEST_F(SafeTensorsTest, InvalidHeader) {
  std::string msg = openErrorBody(safeTensorsRaw("{\"x\": [", ""));
  EXPECT_EQ(msg.rfind("invalid JSON header: [1:", 0), 0u) << msg;
  EXPECT_EQ(openErrorBody(safeTensorsRaw("[]", "")),
            "header is not a JSON object, got []");
  EXPECT_EQ(openErrorBody(safeTensorsRaw("{\"x\": 3}", "")),
            "tensor 'x': expected an object, got 3");
  EXPECT_EQ(openErrorBody(safeTensorsRaw("{\"__metadata__\": {\"a\": 1}}", "")),
            "'__metadata__' must map strings to strings, got {\"a\":1}");
}

TEST_F(SafeTensorsTest, DuplicateTensorName) {
  std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                       "\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                       "\"data_offsets\":[4,8]}}";
  EXPECT_EQ(openErrorBody(safeTensorsRaw(header, std::string(8, '\0'))),
            "duplicate key 'a' in the header");
}

TEST_F(SafeTensorsTest, EntryFields) {
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":[1],"
                                "\"data_offsets\":[0,4],\"extra\":1}"),
                f32Bytes({1}))),
            "tensor 'x': unknown field 'extra'");
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"shape\":[1],\"data_offsets\":[0,4]}"),
                f32Bytes({1}))),
            "tensor 'x': missing field 'dtype'");
}

TEST_F(SafeTensorsTest, UnsupportedDtype) {
  EXPECT_EQ(openErrorBody(
                safeTensorsBytes({{"x", "I64", {1}, std::string(8, '\0')}})),
            "tensor 'x': unsupported dtype 'I64' (expected F32, F16, BF16 or I8)");
  EXPECT_EQ(
      openErrorBody(safeTensorsRaw(oneTensorHeader("{\"dtype\":4,\"shape\":[1],"
                                                   "\"data_offsets\":[0,4]}"),
                                   f32Bytes({1}))),
      "tensor 'x': dtype must be a string, got 4");
}

TEST_F(SafeTensorsTest, BadShape) {
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":[2,-1],"
                                "\"data_offsets\":[0,4]}"),
                f32Bytes({1}))),
            "tensor 'x': shape must be a list of non-negative integers, got "
            "[2,-1]");
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":\"1\","
                                "\"data_offsets\":[0,4]}"),
                f32Bytes({1}))),
            "tensor 'x': shape must be a list of non-negative integers, got "
            "\"1\"");
}

TEST_F(SafeTensorsTest, BadDataOffsets) {
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":[1],"
                                "\"data_offsets\":[0]}"),
                f32Bytes({1}))),
            "tensor 'x': data_offsets must be [begin, end] with 0 <= begin "
            "<= end, got [0]");
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":[1],"
                                "\"data_offsets\":[4,0]}"),
                f32Bytes({1}))),
            "tensor 'x': data_offsets must be [begin, end] with 0 <= begin "
            "<= end, got [4,0]");
}

TEST_F(SafeTensorsTest, OffsetsOutsideDataSection) {
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F32\",\"shape\":[100],"
                                "\"data_offsets\":[0,400]}"),
                std::string(384, '\0'))),
            "tensor 'x': data_offsets [0, 400] outside the data section (384 "
            "bytes)");
}

TEST_F(SafeTensorsTest, SpanDoesNotMatchShape) {
  EXPECT_EQ(openErrorBody(safeTensorsRaw(
                oneTensorHeader("{\"dtype\":\"F16\",\"shape\":[2,3],"
                                "\"data_offsets\":[0,16]}"),
                std::string(16, '\0'))),
            "tensor 'x': shape [2, 3] with dtype F16 needs 12 bytes, but "
            "data_offsets [0, 16] span 16");
}

TEST_F(SafeTensorsTest, OverlappingTensors) {
  std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                       "\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
                       "\"data_offsets\":[4,12]}}";
  EXPECT_EQ(openErrorBody(safeTensorsRaw(header, std::string(12, '\0'))),
            "tensors 'a' and 'b' overlap: data_offsets [0, 8] and [4, 12]");
  // Contained in an earlier, longer span (not the immediately preceding one).
  header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],"
           "\"data_offsets\":[0,16]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
           "\"data_offsets\":[4,8]},"
           "\"c\":{\"dtype\":\"F32\",\"shape\":[1],"
           "\"data_offsets\":[8,12]}}";
  EXPECT_EQ(openErrorBody(safeTensorsRaw(header, std::string(16, '\0'))),
            "tensors 'a' and 'b' overlap: data_offsets [0, 16] and [4, 8]");
}

} // namespace

namespace {

TEST_F(SafeTensorsTest, PreQuantizedI8WithScales) {
  std::unique_ptr<SafeTensorsFile> file = openOk(safeTensorsBytes(
      {{"w", "I8", {2, 3}, i8Bytes({127, -127, 0, 1, 2, -3})},
       {"w_scale", "F32", {2}, f32Bytes({0.5f, 0.25f})}}));
  ASSERT_TRUE(file);
  const TensorView *w = file->find("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->dtype, "I8");
  ASSERT_TRUE(w->int8 && w->int8Scales && w->data);
  EXPECT_EQ(w->int8[1], -127);
  EXPECT_EQ(w->int8Scales[1], 0.25f);
  // float32 view: scale[row] * value.
  std::vector<float> want = {63.5f, -63.5f, 0.0f, 0.25f, 0.5f, -0.75f};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(w->data[i], want[i]) << i;
}

TEST_F(SafeTensorsTest, I8NeedsItsScales) {
  EXPECT_EQ(openErrorBody(safeTensorsBytes(
                {{"w", "I8", {2, 2}, i8Bytes({1, 2, 3, 4})}})),
            "tensor 'w' is I8 but there is no 'w_scale' (float32, one scale "
            "per row)");
  EXPECT_EQ(
      openErrorBody(safeTensorsBytes(
          {{"w", "I8", {2, 2}, i8Bytes({1, 2, 3, 4})},
           {"w_scale", "F32", {3}, f32Bytes({1, 1, 1})}})),
      "tensor 'w_scale': expected F32 of shape [2] (one scale per row of 'w'), "
      "got F32 of shape [3]");
  EXPECT_EQ(openErrorBody(safeTensorsBytes(
                {{"w", "I8", {4}, i8Bytes({1, 2, 3, 4})}})),
            "tensor 'w': an I8 tensor must be a matrix (quantized per row), "
            "got shape [4]");
  EXPECT_EQ(openErrorBody(safeTensorsBytes(
                {{"w", "I8", {1, 2}, i8Bytes({1, 2})},
                 {"w_scale", "F32", {1}, f32Bytes({-1.0f})}})),
            "tensor 'w_scale': element 0 is -1.00; scales must be finite and "
            "not negative");
}

} // namespace
