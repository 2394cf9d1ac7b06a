//===- SafeTensors.cpp - safetensors reader (mmap, zero-copy) -------------===//
//
// Layout: u64 little-endian header length N, N bytes of JSON header, then the
// data section. Tensor offsets in the header are relative to the data section.
//
//===----------------------------------------------------------------------===//

#include "frontends/model/SafeTensors.h"

#include "frontends/model/FileSupport.h"
#include "frontends/model/Float16.h"

#include "frontends/model/CacheDirectory.h"
#include "frontends/model/ModelDescription.h"
#include "frontends/model/PageMemory.h"
#include "frontends/model/WeightCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sys/mman.h>

using namespace llvm;

namespace tfmc::frontend {

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

struct SafeTensorsFile::Impl {
  std::unique_ptr<MemoryBuffer> buffer;
  /// The weight cache's entry the float32 copies are read from (mapped),
  /// or null: then `owned` holds them.
  std::unique_ptr<sys::fs::mapped_file_region> cacheEntry;
  std::vector<pages::Array<float>> owned;
  StringMap<size_t> byName;
};

SafeTensorsFile::~SafeTensorsFile() = default;

const TensorView *SafeTensorsFile::find(StringRef name) const {
  auto it = impl->byName.find(name);
  return it == impl->byName.end() ? nullptr : &views[it->second];
}

int64_t SafeTensorsFile::releaseFloatCopy(StringRef name) {
  auto it = impl->byName.find(name);
  if (it == impl->byName.end())
    return 0;
  TensorView &view = views[it->second];
  for (pages::Array<float> &copy : impl->owned) {
    if (!copy || copy.get() != view.data)
      continue;
    copy.reset();
    view.data = nullptr;
    return view.numElements() * int64_t(sizeof(float));
  }
  // A copy mapped from the weight cache: its whole pages leave the process
  // (the page cache keeps them).
  if (const sys::fs::mapped_file_region *entry = impl->cacheEntry.get()) {
    auto begin = reinterpret_cast<uintptr_t>(view.data);
    auto end = begin + view.numElements() * sizeof(float);
    auto start = reinterpret_cast<uintptr_t>(entry->const_data());
    if (view.data && begin >= start && end <= start + entry->size()) {
      auto page = static_cast<uintptr_t>(sys::Process::getPageSizeEstimate());
      uintptr_t first = (begin + page - 1) / page * page;
      uintptr_t last = end / page * page;
      if (last > first)
        ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
      view.data = nullptr;
      return view.numElements() * int64_t(sizeof(float));
    }
  }
  return 0;
}

namespace {

/// halfToFloat of every binary16 value, built once (256 KB): widening a
/// tensor is then one load per element.
const float *halfTable() {
  static const std::unique_ptr<float[]> table = [] {
    auto t = std::make_unique<float[]>(1 << 16);
    for (uint32_t h = 0; h < (1u << 16); ++h)
      t[h] = halfToFloat(static_cast<uint16_t>(h));
    return t;
  }();
  return table.get();
}

/// bfloat16 is the upper half of a binary32.
float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

int64_t dtypeSize(StringRef dtype) {
  if (dtype == "F32")
    return 4;
  if (dtype == "F16" || dtype == "BF16")
    return 2;
  if (dtype == "I8")
    return 1;
  return 0;
}

std::string describe(const json::Value &v) {
  std::string text = formatv("{0}", v).str();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

/// A list of non-negative integers, or nullopt.
std::optional<std::vector<int64_t>> readIndices(const json::Value &v) {
  const json::Array *array = v.getAsArray();
  if (!array)
    return std::nullopt;
  std::vector<int64_t> out;
  for (const json::Value &e : *array) {
    std::optional<int64_t> i =
        e.kind() == json::Value::Number ? e.getAsInteger() : std::nullopt;
    if (!i || *i < 0)
      return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

class HeaderReader {
public:
  HeaderReader(StringRef path, int64_t dataSize)
      : path(path), dataSize(dataSize) {}

  Error fail(const Twine &message) const {
    return createStringError(inconvertibleErrorCode(), path + ": " + message);
  }
  Error failTensor(StringRef name, const Twine &message) const {
    return fail("tensor '" + name + "': " + message);
  }

  Error readMetadata(const json::Value &v) const {
    const json::Object *obj = v.getAsObject();
    bool ok = obj && llvm::all_of(*obj, [](const auto &kv) {
                return kv.second.kind() == json::Value::String;
              });
    if (!ok)
      return fail("'__metadata__' must map strings to strings, got " +
                  describe(v));
    return Error::success();
  }

  Expected<Entry> readEntry(StringRef name, const json::Value &v) const {
    const json::Object *obj = v.getAsObject();
    if (!obj)
      return failTensor(name, "expected an object, got " + describe(v));
    for (const auto &kv : *obj)
      if (kv.first != "dtype" && kv.first != "shape" &&
          kv.first != "data_offsets")
        return failTensor(name, "unknown field '" + kv.first + "'");
    for (StringRef key : {"dtype", "shape", "data_offsets"})
      if (!obj->get(key))
        return failTensor(name, "missing field '" + key + "'");

    Entry e;
    e.name = name.str();
    const json::Value &dtype = *obj->get("dtype");
    std::optional<StringRef> dtypeName = dtype.getAsString();
    if (!dtypeName)
      return failTensor(name, "dtype must be a string, got " + describe(dtype));
    if (dtypeSize(*dtypeName) == 0)
      return failTensor(name, "unsupported dtype '" + *dtypeName +
                                  "' (expected F32, F16, BF16 or I8)");
    e.dtype = dtypeName->str();

    const json::Value &shape = *obj->get("shape");
    std::optional<std::vector<int64_t>> dims = readIndices(shape);
    if (!dims)
      return failTensor(name,
                        "shape must be a list of non-negative integers, got " +
                            describe(shape));
    e.shape = std::move(*dims);

    const json::Value &offsets = *obj->get("data_offsets");
    std::optional<std::vector<int64_t>> span = readIndices(offsets);
    if (!span || span->size() != 2 || (*span)[0] > (*span)[1])
      return failTensor(name, "data_offsets must be [begin, end] with "
                              "0 <= begin <= end, got " +
                                  describe(offsets));
    e.begin = (*span)[0];
    e.end = (*span)[1];
    if (e.end > dataSize)
      return failTensor(name, formatv("data_offsets {0} outside the data "
                                      "section ({1} bytes)",
                                      formatShape(*span), dataSize)
                                  .str());

    int64_t bytes = dtypeSize(e.dtype);
    for (int64_t d : e.shape)
      if (__builtin_mul_overflow(bytes, d, &bytes))
        return failTensor(name,
                          "shape " + formatShape(e.shape) + " is too large");
    if (bytes != e.end - e.begin)
      return failTensor(name,
                        formatv("shape {0} with dtype {1} needs {2} bytes, "
                                "but data_offsets {3} span {4}",
                                formatShape(e.shape), e.dtype, bytes,
                                formatShape(*span), e.end - e.begin)
                            .str());
    return e;
  }

private:
  StringRef path;
  int64_t dataSize;
};

/// Maps every page of a mapped file in one call where the kernel can
/// (MADV_POPULATE_READ, Linux 5.14): loading reads all of it (checks,
/// conversions, packing), and page by page that is one fault per 16 pages
/// of the page cache, ~10 us each on a virtual machine (3,200 faults for
/// a 210 MB file). Older kernels refuse the advice; the faults stay.
void prefaultMapping(const MemoryBuffer &buffer) {
#ifdef MADV_POPULATE_READ
  if (buffer.getBufferKind() != MemoryBuffer::MemoryBuffer_MMap)
    return;
  auto page = static_cast<uintptr_t>(sys::Process::getPageSizeEstimate());
  auto start = reinterpret_cast<uintptr_t>(buffer.getBufferStart());
  auto end = reinterpret_cast<uintptr_t>(buffer.getBufferEnd());
  uintptr_t first = start / page * page;
  if (end > first)
    (void)::madvise(reinterpret_cast<void *>(first), end - first,
                    MADV_POPULATE_READ);
#else
  (void)buffer;
#endif
}

} // namespace

Expected<std::unique_ptr<SafeTensorsFile>>
SafeTensorsFile::open(StringRef path, StringRef cacheDir,
                      raw_ostream *warnings) {
  FileIdentity identity;
  auto buffer = openFile(path, &identity);
  if (!buffer)
    return buffer.takeError();
  StringRef bytes = (*buffer)->getBuffer();
  prefaultMapping(**buffer);
  auto fail = [&](const Twine &message) -> Error {
    return createStringError(inconvertibleErrorCode(), path + ": " + message);
  };
  if (bytes.size() < 8)
    return fail(formatv("file is too short for a safetensors header "
                        "({0} bytes)",
                        bytes.size())
                    .str());
  uint64_t headerSize = support::endian::read64le(bytes.data());
  if (headerSize > bytes.size() - 8)
    return fail(formatv("header length {0} exceeds the file size "
                        "({1} bytes)",
                        headerSize, bytes.size())
                    .str());
  if (std::optional<size_t> at =
          nestingBeyond(bytes.substr(8, headerSize), kMaxJsonNesting))
    return fail(formatv("invalid JSON header: nested deeper than {0} levels "
                        "at byte {1}",
                        kMaxJsonNesting, 8 + *at)
                    .str());
  Expected<json::Value> header = json::parse(bytes.substr(8, headerSize));
  if (!header)
    return fail("invalid JSON header: " + toString(header.takeError()));
  if (std::optional<std::string> key =
          findDuplicateJsonKey(bytes.substr(8, headerSize)))
    return fail("duplicate key '" + *key + "' in the header");
  const json::Object *entries = header->getAsObject();
  if (!entries)
    return fail("header is not a JSON object, got " + describe(*header));

  size_t dataStart = 8 + headerSize;
  HeaderReader reader(path, static_cast<int64_t>(bytes.size() - dataStart));
  // Names sorted so that the first error reported does not depend on hashing.
  std::vector<StringRef> names;
  for (const auto &kv : *entries)
    names.push_back(kv.first);
  llvm::sort(names);
  std::vector<Entry> tensors;
  for (StringRef name : names) {
    const json::Value &value = *entries->get(name);
    if (name == "__metadata__") {
      if (Error err = reader.readMetadata(value))
        return std::move(err);
      continue;
    }
    Expected<Entry> e = reader.readEntry(name, value);
    if (!e)
      return e.takeError();
    tensors.push_back(std::move(*e));
  }
  llvm::sort(tensors, [](const Entry &a, const Entry &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });

  // Sorted by begin: a span overlaps an earlier one iff it starts before the
  // furthest end seen so far. Empty spans hold no bytes and never overlap.
  const Entry *furthest = nullptr;
  for (const Entry &e : tensors) {
    if (e.begin == e.end)
      continue;
    if (furthest && e.begin < furthest->end)
      return fail(formatv("tensors '{0}' and '{1}' overlap: "
                          "data_offsets {2} and {3}",
                          furthest->name, e.name,
                          formatShape({furthest->begin, furthest->end}),
                          formatShape({e.begin, e.end}))
                      .str());
    if (!furthest || e.end > furthest->end)
      furthest = &e;
  }

  std::unique_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  file->filePath = path.str();
  file->impl = std::make_unique<Impl>();
  Impl &impl = *file->impl;
  // Tensors read into float32 copies: F16, BF16, and F32 that is not
  // 4-byte aligned in the mapping (or on a big-endian host).
  struct Copy {
    size_t view;
    const char *begin, *end;
  };
  std::vector<Copy> copies;
  for (const Entry &e : tensors) {
    TensorView view;
    view.name = e.name;
    view.dtype = e.dtype;
    view.shape = e.shape;
    const char *src = bytes.data() + dataStart + e.begin;
    bool aligned = reinterpret_cast<uintptr_t>(src) % alignof(float) == 0;
    if (e.dtype == "I8") {
      // Dequantized below, once every scale tensor has its view.
      view.int8 = reinterpret_cast<const int8_t *>(src);
    } else if (e.dtype == "F32" && aligned && !sys::IsBigEndianHost) {
      view.data = reinterpret_cast<const float *>(src);
    } else {
      copies.push_back({file->views.size(), src, src + (e.end - e.begin)});
    }
    impl.byName[view.name] = file->views.size();
    file->views.push_back(std::move(view));
  }
  std::vector<WeightCache::Slot> slots(copies.size());
  for (size_t i = 0; i < copies.size(); ++i)
    slots[i].count = file->views[copies[i].view].numElements();
  uint64_t payloadBytes = WeightCache::layout(slots);
  std::optional<WeightCache> cache;
  if (!cacheDir.empty() && !copies.empty()) {
    raw_ostream &out = warnings ? *warnings : errs();
    cache.emplace(cacheDir.str(), path, identity, out, cacheLimitBytes(out));
    if (cache->usable())
      impl.cacheEntry = cache->lookup(slots, payloadBytes);
    else
      cache.reset();
  }
  if (impl.cacheEntry) {
    const char *payload =
        impl.cacheEntry->const_data() + WeightCache::kHeaderBytes;
    for (size_t i = 0; i < copies.size(); ++i)
      file->views[copies[i].view].data =
          reinterpret_cast<const float *>(payload + slots[i].offset);
  } else {
    std::vector<const float *> data;
    for (const Copy &c : copies) {
      TensorView &view = file->views[c.view];
      int64_t n = view.numElements();
      pages::Array<float> storage(n);
      float *out = storage.get();
      if (view.dtype == "F32") {
        for (int64_t i = 0; i < n; ++i) {
          uint32_t bits = support::endian::read32le(c.begin + 4 * i);
          std::memcpy(&out[i], &bits, sizeof(float));
        }
      } else if (view.dtype == "F16") {
        const float *table = halfTable();
        for (int64_t i = 0; i < n; ++i)
          out[i] = table[support::endian::read16le(c.begin + 2 * i)];
      } else {
        for (int64_t i = 0; i < n; ++i)
          out[i] = bfloat16ToFloat(support::endian::read16le(c.begin + 2 * i));
      }
      view.data = storage.get();
      data.push_back(storage.get());
      impl.owned.push_back(std::move(storage));
    }
    if (cache)
      cache->store(slots, data, payloadBytes);
  }
  // Pre-quantized weights: an I8 matrix W needs "W_scale", float32 with one
  // scale per row; the float32 view holds scale[r] * W[r, c].
  for (TensorView &view : file->views) {
    if (view.dtype != "I8")
      continue;
    if (view.shape.size() != 2)
      return fail(formatv("tensor '{0}': an I8 tensor must be a matrix "
                          "(quantized per row), got shape {1}",
                          view.name, formatShape(view.shape))
                      .str());
    std::string scaleName = view.name + "_scale";
    auto it = impl.byName.find(scaleName);
    if (it == impl.byName.end())
      return fail(formatv("tensor '{0}' is I8 but there is no '{1}' (float32, "
                          "one scale per row)",
                          view.name, scaleName)
                      .str());
    const TensorView &scale = file->views[it->second];
    if (scale.dtype != "F32" || scale.shape.size() != 1 ||
        scale.shape[0] != view.shape[0])
      return fail(formatv("tensor '{0}': expected F32 of shape [{1}] (one "
                          "scale per row of '{2}'), got {3} of shape {4}",
                          scaleName, view.shape[0], view.name, scale.dtype,
                          formatShape(scale.shape))
                      .str());
    for (int64_t r = 0; r < view.shape[0]; ++r)
      if (!std::isfinite(scale.data[r]) || scale.data[r] < 0)
        return fail(formatv("tensor '{0}': element {1} is {2}; scales must "
                            "be finite and not negative",
                            scaleName, r, scale.data[r])
                        .str());
    int64_t n = view.numElements(), cols = view.shape[1];
    pages::Array<float> storage(n);
    for (int64_t i = 0; i < n; ++i)
      storage.get()[i] = scale.data[i / cols] * float(view.int8[i]);
    view.data = storage.get();
    view.int8Scales = scale.data;
    impl.owned.push_back(std::move(storage));
  }
  // The mapped pages of converted tensors are not read again: give them
  // back (a float16 model's file would otherwise stay resident beside its
  // float32 copies). Only whole pages inside one span go, so the pages of
  // tensors used in place (F32, I8) stay; a page read again later would
  // come back from the file, so this is only about residency.
  if ((*buffer)->getBufferKind() == MemoryBuffer::MemoryBuffer_MMap) {
    auto page = static_cast<uintptr_t>(sys::Process::getPageSizeEstimate());
    for (const auto &[view, begin, end] : copies) {
      uintptr_t first =
          (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
      uintptr_t last = reinterpret_cast<uintptr_t>(end) / page * page;
      if (last > first)
        ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
    }
  }
  impl.buffer = std::move(*buffer);
  return file;
}

} // namespace tfmc::frontend
