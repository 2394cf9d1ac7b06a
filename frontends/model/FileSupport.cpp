//===- FileSupport.cpp - what the model readers share ---------------------===//
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

Expected<std::unique_ptr<MemoryBuffer>>
tfmc::frontend::openFile(StringRef path, bool isText) {
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
