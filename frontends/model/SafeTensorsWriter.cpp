//===- SafeTensorsWriter.cpp - write a safetensors file -------------------===//
#include "frontends/model/SafeTensorsWriter.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

Error tfmc::frontend::writeSafeTensors(StringRef path,
                                       ArrayRef<TensorBytes> tensors) {
  json::Object header;
  uint64_t offset = 0;
  for (const TensorBytes &t : tensors) {
    // Each tensor starts at a multiple of 8 bytes (so float32 data can be
    // mapped in place by a reader).
    uint64_t begin = (offset + 7) / 8 * 8;
    json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    header[t.name] = json::Object{
        {"dtype", t.dtype},
        {"shape", std::move(shape)},
        {"data_offsets", json::Array{begin, begin + t.bytes.size()}}};
    offset = begin + t.bytes.size();
  }
  std::string text;
  raw_string_ostream os(text);
  os << json::Value(std::move(header));
  os.flush();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  std::string temp = (path + ".tmp").str();
  std::error_code ec;
  {
    raw_fd_ostream out(temp, ec);
    if (ec)
      return createStringError(ec, "%s: cannot write: %s", temp.c_str(),
                               ec.message().c_str());
    char length[8];
    support::endian::write64le(length, text.size());
    out.write(length, 8);
    out << text;
    uint64_t written = 0;
    for (const TensorBytes &t : tensors) {
      uint64_t begin = (written + 7) / 8 * 8;
      out.write_zeros(begin - written);
      out.write(t.bytes.data(), t.bytes.size());
      written = begin + t.bytes.size();
    }
    out.close();
    if (out.has_error())
      return createStringError(out.error(), "%s: cannot write: %s",
                               temp.c_str(), out.error().message().c_str());
  }
  if (std::error_code e = sys::fs::rename(temp, path))
    return createStringError(e, "%s: cannot write: %s", path.str().c_str(),
                             e.message().c_str());
  return Error::success();
}
