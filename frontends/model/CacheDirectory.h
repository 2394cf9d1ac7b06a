//===- CacheDirectory.h - what a cache directory may hold -------*- C++ -*-===//
//
// tfmc's cache directory holds two kinds of entries: compiled models
// (`<sha256>.tfmo`, compiler/JIT/CompileCache.h) and float32 copies of
// float16/bfloat16 weights (`<hash>-<hash>.tfmw`, WeightCache.h). Both are
// written to a temporary file and renamed into place, both mark an entry
// used on a hit (its modification time), and after every store the
// directory is kept under one size: the least recently used entries of
// either kind go first. Never the one just stored, nor any used in the last
// ten minutes: the storing process's other entry (a model's weight copies
// are stored at load, its compiled entry a moment later: with a limit
// below the two, each store would remove the other) and entries other
// processes are about to map; so the directory may exceed the limit for a
// while. Temporary files that a writer killed before its rename left more
// than an hour ago go too. (It lives with the weight cache, the first
// user of the directory in a run; compiler/JIT's CompileCache uses it too.)
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_CACHEDIRECTORY_H
#define FRONTENDS_MODEL_CACHEDIRECTORY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

namespace tfmc::frontend {

/// Entries used this recently are never removed to make room.
inline constexpr int kCacheGraceMinutes = 10;
/// The default limit: compiled entries are ~0.5-5 MB, a model's float32
/// weight copies up to several hundred.
inline constexpr uint64_t kDefaultCacheMegabytes = 2048;

/// The limit `text` (a $TFMC_CACHE_LIMIT_MB value) asks for, in bytes:
/// megabytes, 0 for no limit (UINT64_MAX); nullopt when it is not a whole
/// number of megabytes that fits.
std::optional<uint64_t> parseCacheLimit(llvm::StringRef text);

/// What the entries of the cache directory may take together:
/// $TFMC_CACHE_LIMIT_MB megabytes, else kDefaultCacheMegabytes. A value
/// parseCacheLimit() refuses is a warning on `warnings` (the first time in
/// a process) and the default.
uint64_t cacheLimitBytes(llvm::raw_ostream &warnings);

/// Marks the entry at `path` used now; it is then removed after the others.
/// (A read-only directory keeps its times.)
void markCacheEntryUsed(llvm::StringRef path);

/// After a store of `keep`: removes temporary files left over an hour ago,
/// then the least recently used entries other than `keep` and those used
/// in the last kCacheGraceMinutes, until those left take at most
/// `limitBytes` (or only those remain).
void pruneCacheDirectory(llvm::StringRef directory, llvm::StringRef keep,
                         uint64_t limitBytes);

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_CACHEDIRECTORY_H
