//===- FileSupport.cpp - what the model readers share ---------------------===//
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <sys/stat.h>

#include <cerrno>
#include <system_error>

using namespace llvm;

namespace {

tfmc::frontend::FileIdentity identityOf(const struct stat &st) {
  tfmc::frontend::FileIdentity id;
  id.device = uint64_t(st.st_dev);
  id.inode = uint64_t(st.st_ino);
  id.size = uint64_t(st.st_size);
  id.modifiedNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.changedNs = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return id;
}

} // namespace

std::optional<tfmc::frontend::FileIdentity>
tfmc::frontend::FileIdentity::of(StringRef path) {
  struct stat st;
  if (::stat(path.str().c_str(), &st) != 0)
    return std::nullopt;
  return identityOf(st);
}

uint64_t tfmc::frontend::FileIdentity::hash() const {
  return xxh3_64bits(
      formatv("{0} {1} {2} {3} {4}", device, inode, size, modifiedNs, changedNs)
          .str());
}

Expected<std::unique_ptr<MemoryBuffer>>
tfmc::frontend::openFile(StringRef path, FileIdentity *identity) {
  // Only regular files: a directory, /dev/zero or a FIFO would fail
  // obscurely, read forever or exhaust memory.
  if (path.empty())
    return createStringError(inconvertibleErrorCode(),
                             "cannot open file: the path is empty");
  auto fail = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             path + ": cannot open file: " + why);
  };
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(path, status))
    return fail(ec.message());
  if (status.type() != sys::fs::file_type::regular_file)
    return fail("not a regular file");
  Expected<sys::fs::file_t> fd = sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail(toString(fd.takeError()));
  // What was opened, not what the path names a moment later (a rename).
  struct stat st;
  if (::fstat(*fd, &st) != 0) {
    std::error_code ec(errno, std::generic_category());
    sys::fs::closeFile(*fd);
    return fail(ec.message());
  }
  if (!S_ISREG(st.st_mode)) {
    sys::fs::closeFile(*fd);
    return fail("not a regular file");
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getOpenFile(
      *fd, path, uint64_t(st.st_size), /*RequiresNullTerminator=*/false,
      /*IsVolatile=*/false);
  sys::fs::closeFile(*fd);
  if (!buffer)
    return fail(buffer.getError().message());
  if (identity)
    *identity = identityOf(st);
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

std::error_code tfmc::frontend::takeWriteError(raw_fd_ostream &os) {
  std::error_code ec = os.error();
  os.clear_error();
  return ec;
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
