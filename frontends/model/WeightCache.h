//===- WeightCache.h - float32 copies of converted tensors ------*- C++ -*-===//
//
// A model stored as float16 or bfloat16 is widened to float32 when it is
// opened. Widening is cheap; the fresh memory it fills is not: each 2 MiB
// page is zeroed by the kernel first and, on virtual machines, provided by
// the host (the bundled model: 34 MB of copies, about 50 ms of a 0.19 s
// one-sentence translation on the project's CI hosts). The weight cache
// keeps those copies in a file of the cache directory, so that a later
// process maps them from the page cache, as it maps a float32 file:
//   <dir>/<xxh3 of the file's real path>-<xxh3 of its identity>.tfmw
// The identity is the file's device, inode, size, and modification and
// change times (FileIdentity, taken from the descriptor the weights were
// read through): reading the file to hash its contents would cost what the
// cache saves. An entry is stored only when the file still has that
// identity after the conversion (not rewritten meanwhile). An entry holds a
// 64-byte header (magic, the identity's hash, the path's and the payload's
// sizes, the payload's checksum), the copies in tensor order, each at a 64-byte
// aligned offset, and the file's real path; a reader checks every byte against
// the checksum before handing it out. Storing an entry removes the entries
// whose file no longer exists or has changed since (a model file written again,
// a deleted export), so the cache holds one entry per model file that is still
// there. An entry is written to a unique temporary file and renamed into place;
// a hit marks the entry used, and the directory's entries, compiled models' and
// weight copies together, are kept under one size (CacheDirectory.h). A
// corrupt, truncated or foreign entry is a warning and a miss (and is
// rewritten); a directory that cannot be written is a warning. Never an error:
// the copies are made in memory as without a cache.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_WEIGHTCACHE_H
#define FRONTENDS_MODEL_WEIGHTCACHE_H

#include "frontends/model/FileSupport.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>

namespace tfmc::frontend {

class WeightCache {
public:
  /// One converted tensor of the entry: `count` floats at `offset` bytes
  /// from the start of the payload.
  struct Slot {
    uint64_t offset = 0, count = 0;
  };
  static constexpr uint64_t kHeaderBytes = 64;
  static constexpr uint64_t kAlign = 64;

  /// Lays out `counts` (floats per converted tensor, in order): sets each
  /// slot's offset; returns the payload's size in bytes.
  static uint64_t layout(llvm::MutableArrayRef<Slot> slots);

  /// A cache in `directory` for the safetensors file at `source`, whose
  /// bytes were read from the file of identity `identity`; warnings go to
  /// `warnings` as "warning: weight cache: ..." lines. Without a real path
  /// for the file the cache is off. Storing keeps the directory's entries
  /// within `limitBytes` (CacheDirectory.h).
  WeightCache(std::string directory, llvm::StringRef source,
              const FileIdentity &identity, llvm::raw_ostream &warnings,
              uint64_t limitBytes);
  bool usable() const { return !entry.empty(); }

  /// The entry's file.
  const std::string &path() const { return entry; }

  /// The entry, mapped read-only (so page-aligned), when it exists and
  /// holds a payload of `payloadBytes` for this very file that passes its
  /// checksum (the payload starts kHeaderBytes into it);
  /// null on a miss (with a warning when the entry was unusable).
  std::unique_ptr<llvm::sys::fs::mapped_file_region>
  lookup(llvm::ArrayRef<Slot> slots, uint64_t payloadBytes);
  /// Writes an entry whose slot i holds data[i] (slots[i].count floats);
  /// false (after a warning) when it could not, and false without one when
  /// the file no longer has the identity it was read with or the entry
  /// would be larger than half of `limitBytes`.
  bool store(llvm::ArrayRef<Slot> slots, llvm::ArrayRef<const float *> data,
             uint64_t payloadBytes);

private:
  void warn(const llvm::Twine &message);
  /// Removes the entries whose file is gone or has changed since.
  void prune();
  std::string directory, entry, realPath;
  FileIdentity identity;
  uint64_t limitBytes;
  llvm::raw_ostream &warnings;
};

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_WEIGHTCACHE_H
