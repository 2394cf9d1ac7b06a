//===- FileSupport.h - what the model readers share -------------*- C++ -*-===//
#ifndef FRONTENDS_MODEL_FILESUPPORT_H
#define FRONTENDS_MODEL_FILESUPPORT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace llvm {
class raw_fd_ostream;
} // namespace llvm

namespace tfmc::frontend {

/// Which file a path named at a moment: device, inode, size, and the
/// modification and change times (ns). A file rewritten in place with its
/// old size and modification time put back (`cp -p`, `rsync -t`, archives
/// with one fixed time) still gets a new change time, which no program
/// can set back (so do a chmod, a new hard link or an xattr: a false
/// "changed", never a false "same").
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t modifiedNs = 0, changedNs = 0;

  /// The identity of the file `path` names now; nullopt when it cannot be
  /// stat'ed.
  static std::optional<FileIdentity> of(llvm::StringRef path);
  /// A 64-bit hash of all five fields.
  uint64_t hash() const;
  bool operator==(const FileIdentity &o) const {
    return device == o.device && inode == o.inode && size == o.size &&
           modifiedNs == o.modifiedNs && changedNs == o.changedNs;
  }
  bool operator!=(const FileIdentity &o) const { return !(*this == o); }
};

/// Opens (memory-maps when large) a whole file, bytes as they are; fails
/// with "PATH: cannot open file: REASON". With `identity`, also the
/// identity of the very file read (taken from the open descriptor: a file
/// renamed over `path` meanwhile does not lend its identity to the other's
/// bytes).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
openFile(llvm::StringRef path, FileIdentity *identity = nullptr);

/// The write error `os` met (a full disk), or none, cleared: a stream
/// destroyed with its error still set ends the process with "LLVM ERROR".
/// Call after flush() or close().
std::error_code takeWriteError(llvm::raw_fd_ostream &os);

/// "[2, 3]": a shape or an offset pair in messages.
std::string formatShape(llvm::ArrayRef<int64_t> values);

/// JSON parsers recurse per nesting level: the byte offset where `json`
/// nests deeper than `limit` arrays/objects, if it does (checked before
/// parsing, so hostile files cannot exhaust the stack).
std::optional<size_t> nestingBeyond(llvm::StringRef json, size_t limit);
inline constexpr size_t kMaxJsonNesting = 256;

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_FILESUPPORT_H
