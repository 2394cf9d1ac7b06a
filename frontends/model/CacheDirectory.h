//===- CacheDirectory.h - what a cache directory may hold -------*- C++ -*-===//
//
// tfmc's cache directory holds two kinds of entries: compiled models
// (`<sha256>.tfmo`, compiler/JIT/CompileCache.h) and float32 copies of
// float16/bfloat16 weights (`<hash>-<hash>.tfmw`, WeightCache.h). Both are
// written to a temporary file and renamed into place, both mark an entry
// used on a hit (its modification time), and after every store the
// directory is kept under one size: the least recently used entries of
// either kind go first, never the one just stored, and temporary files
// that a writer killed before its rename left more than an hour ago go too.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_CACHEDIRECTORY_H
#define FRONTENDS_MODEL_CACHEDIRECTORY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace tfmc::frontend {

/// What the entries of the cache directory may take together:
/// $TFMC_CACHE_LIMIT_MB megabytes (0: no limit, UINT64_MAX), else 512 MB.
/// A value that is not a whole number of megabytes is one warning on
/// `warnings` (once per process) and the default.
uint64_t cacheLimitBytes(llvm::raw_ostream &warnings);

/// Marks the entry at `path` used now; it is then removed after the others.
/// (A read-only directory keeps its times.)
void markCacheEntryUsed(llvm::StringRef path);

/// After a store of `keep`: removes temporary files left over an hour ago,
/// then the least recently used entries other than `keep` until those left
/// take at most `limitBytes`.
void pruneCacheDirectory(llvm::StringRef directory, llvm::StringRef keep,
                         uint64_t limitBytes);

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_CACHEDIRECTORY_H
