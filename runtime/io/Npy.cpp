//===- Npy.cpp - NumPy .npy (version 1.0) float32 arrays ------------------===//
//
// Format: "\x93NUMPY", version 1.0, a little-endian u16 header length, then
// a Python dict literal padded with spaces and '\n' so that the data starts
// at a multiple of 64 bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/io/Npy.h"
#include "frontends/model/FileSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>

using namespace tfmc::runtime;

static llvm::Error error(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

llvm::Error tfmc::runtime::writeNpy(llvm::StringRef path,
                                    llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<float> values) {
  // A Python tuple: "()", "(5,)" or "(2, 3)".
  std::string tuple;
  for (size_t i = 0; i < shape.size(); ++i)
    tuple += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    tuple += ",";
  std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + tuple + "), }";
  size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return error(path, "cannot write file: " + ec.message());
  os << "\x93NUMPY";
  os << static_cast<char>(1) << static_cast<char>(0);
  auto length = static_cast<uint16_t>(dict.size());
  os << static_cast<char>(length & 0xff) << static_cast<char>(length >> 8);
  os << dict;
  os.write(reinterpret_cast<const char *>(values.data()),
           values.size() * sizeof(float));
  os.close();
  if (std::error_code ec = frontend::takeWriteError(os))
    return error(path, "cannot write: " + ec.message());
  return llvm::Error::success();
}

llvm::Expected<NpyArray> tfmc::runtime::readNpy(llvm::StringRef path) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return error(path, "cannot open file: " + file.getError().message());
  llvm::StringRef data = (*file)->getBuffer();
  if (data.size() < 10 || !data.starts_with("\x93NUMPY"))
    return error(path, "not a .npy file");
  size_t headerLength =
      static_cast<uint8_t>(data[8]) | (static_cast<uint8_t>(data[9]) << 8);
  if (data[6] != 1 || 10 + headerLength > data.size())
    return error(path, "unsupported .npy version or truncated header");
  llvm::StringRef header = data.substr(10, headerLength);
  if (!header.contains("'descr': '<f4'") ||
      !header.contains("'fortran_order': False"))
    return error(path, "only little-endian float32 C-order arrays are read");
  size_t open = header.find("'shape': (");
  size_t close = header.find(')', open);
  if (open == llvm::StringRef::npos || close == llvm::StringRef::npos)
    return error(path, "no shape in the header");
  NpyArray array;
  llvm::StringRef dims = header.slice(open + 10, close);
  int64_t count = 1;
  while (!dims.trim().empty()) {
    auto [item, rest] = dims.split(',');
    int64_t d;
    if (item.trim().getAsInteger(10, d) || d < 0)
      return error(path, "bad shape in the header");
    array.shape.push_back(d);
    count *= d;
    dims = rest;
  }
  llvm::StringRef body = data.substr(10 + headerLength);
  if (body.size() != static_cast<size_t>(count) * sizeof(float))
    return error(path, "data size does not match the shape");
  array.values.resize(count);
  std::memcpy(array.values.data(), body.data(), body.size());
  return array;
}
