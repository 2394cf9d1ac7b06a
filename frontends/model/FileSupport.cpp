//===- FileSupport.cpp - what the model readers share ---------------------===//
#include "frontends/model/FileSupport.h"

#include "llvm/Support/FileSystem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

Expected<std::unique_ptr<MemoryBuffer>>
tfmc::frontend::openFile(StringRef path, bool isText) {
  // Only regular files: a directory, /dev/zero or a FIFO would fail
  // obscurely, read forever or exhaust memory.
  if (path.empty())
    return createStringError(inconvertibleErrorCode(),
                             "cannot open file: the path is empty");
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(path, status))
    return createStringError(inconvertibleErrorCode(),
                             path + ": cannot open file: " + ec.message());
  if (status.type() != sys::fs::file_type::regular_file)
    return createStringError(inconvertibleErrorCode(),
                             path + ": cannot open file: not a regular file");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, isText, /*RequiresNullTerminator=*/false,
                            /*IsVolatile=*/false);
  if (!buffer)
    return createStringError(
        inconvertibleErrorCode(),
        path + ": cannot open file: " + buffer.getError().message());
  return std::move(*buffer);
}

std::string tfmc::frontend::formatShape(ArrayRef<int64_t> values) {
  std::string s;
  raw_string_ostream os(s);
  os << '[';
  interleave(values, os, ", ");
  os << ']';
  return s;
}

std::optional<size_t> tfmc::frontend::nestingBeyond(StringRef json,
                                                    size_t limit) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return std::nullopt;
}
