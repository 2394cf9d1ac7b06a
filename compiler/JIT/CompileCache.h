//===- CompileCache.h - content-addressed compiled objects ------*- C++ -*-===//
//
// A directory of compiled model objects, one file per key:
//   <dir>/<sha256 of the key text>.tfmo
// The key text names everything that affects the code (the caller builds
// it). A file holds a small header, opaque metadata (the caller's) and the
// object bytes, with a SHA-256 checksum over both. Entries are written to a
// unique temporary file and renamed into place, so readers never see a
// partial entry and concurrent writers of one key both succeed. A corrupt,
// truncated or foreign entry is reported as a warning and treated as a
// miss; a directory that cannot be created or written is a warning, never a
// failure.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_JIT_COMPILECACHE_H
#define COMPILER_JIT_COMPILECACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::tfm {

/// The cache directory when none is given: $TFMC_CACHE_DIR, else
/// $XDG_CACHE_HOME/tfmc, else $HOME/.cache/tfmc; "" when none is set.
std::string defaultCacheDirectory();

class CompileCache {
public:
  struct Entry {
    std::string metadata;
    std::string object;
  };

  /// A cache in `directory` (created on first store). Warnings go to
  /// `warnings` as "warning: compile cache: ..." lines.
  CompileCache(std::string directory, llvm::raw_ostream &warnings)
      : directory(std::move(directory)), warnings(warnings) {}

  const std::string &path() const { return directory; }
  /// The file an entry for `key` lives in.
  std::string entryPath(llvm::StringRef key) const;

  /// The entry for `key`, or nullopt on a miss (absent, or unusable: then a
  /// warning says why).
  std::optional<Entry> lookup(llvm::StringRef key);
  /// Writes the entry for `key` atomically; returns false (after a
  /// warning) when it could not.
  bool store(llvm::StringRef key, llvm::StringRef metadata,
             llvm::StringRef object);

  /// The hex SHA-256 of `text`.
  static std::string digest(llvm::StringRef text);

private:
  void warn(const llvm::Twine &message);
  std::string directory;
  llvm::raw_ostream &warnings;
};

} // namespace mlir::tfm

#endif // COMPILER_JIT_COMPILECACHE_H
