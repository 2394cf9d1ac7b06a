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
// failure. The directory is kept under a size: a hit marks its entry used
// (its modification time), and a store removes the least recently used
// entries beyond the limit, weight copies (WeightCache.h) included
// (frontends/model/CacheDirectory.h: a rebuilt tfmc, another option or
// compute type each add entries that nothing reads again).
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_JIT_COMPILECACHE_H
#define COMPILER_JIT_COMPILECACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
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

  /// What the directory's entries may take together (cacheLimitBytes() in
  /// frontends/model/CacheDirectory.h: $TFMC_CACHE_LIMIT_MB, else 2 GB; the
  /// bundled model's compiled entry is ~0.5 MB, its weight copies 34 MB); a
  /// malformed value is a warning on stderr.
  static uint64_t defaultLimitBytes();

  /// A cache in `directory` (created on first store). Warnings go to
  /// `warnings` as "warning: compile cache: ..." lines. `limitBytes`:
  /// what its entries may take together after a store.
  CompileCache(std::string directory, llvm::raw_ostream &warnings,
               uint64_t limitBytes = defaultLimitBytes())
      : directory(std::move(directory)), warnings(warnings),
        limitBytes(limitBytes) {}

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
  uint64_t limitBytes;
};

} // namespace mlir::tfm

#endif // COMPILER_JIT_COMPILECACHE_H
