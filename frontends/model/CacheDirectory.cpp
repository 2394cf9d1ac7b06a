//===- CacheDirectory.cpp - what a cache directory may hold ---------------===//
#include "frontends/model/CacheDirectory.h"

#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;

namespace tfmc::frontend {

namespace {

/// An entry of either kind, or a writer's temporary file: the compile
/// cache's `<entry>.tfmo.tmp-XXXXXXXX`, or llvm::writeToOutput's
/// `<entry>.tfmw.temp-stream-XXXXXX` for weight copies.
bool isEntry(StringRef name) {
  return name.ends_with(".tfmo") || name.ends_with(".tfmw");
}
bool isTemporary(StringRef name) {
  return name.contains(".tfmo.tmp-") || name.contains(".tfmw.temp-stream-");
}

} // namespace

std::optional<uint64_t> parseCacheLimit(StringRef text) {
  uint64_t megabytes = 0;
  if (text.trim().getAsInteger(10, megabytes) || megabytes > (UINT64_MAX >> 20))
    return std::nullopt;
  return megabytes == 0 ? UINT64_MAX : megabytes << 20;
}

uint64_t cacheLimitBytes(raw_ostream &warnings) {
  std::optional<std::string> text = sys::Process::GetEnv("TFMC_CACHE_LIMIT_MB");
  if (!text)
    return kDefaultCacheMegabytes << 20;
  if (std::optional<uint64_t> limit = parseCacheLimit(*text))
    return *limit;
  // Read by each cache of a run: one warning is enough.
  static std::once_flag warned;
  std::call_once(warned, [&] {
    warnings << "warning: TFMC_CACHE_LIMIT_MB='" << *text
             << "' is not a whole number of megabytes (0: no limit); using "
             << kDefaultCacheMegabytes << "\n";
  });
  return kDefaultCacheMegabytes << 20;
}

void markCacheEntryUsed(StringRef path) {
  ::utimensat(AT_FDCWD, path.str().c_str(), nullptr, 0);
}

void pruneCacheDirectory(StringRef directory, StringRef keep,
                         uint64_t limitBytes) {
  struct Found {
    std::string path;
    uint64_t bytes;
    sys::TimePoint<> used;
  };
  std::vector<Found> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (sys::fs::directory_iterator it(directory, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = sys::path::filename(it->path());
    bool entry = isEntry(name);
    if (!entry && !isTemporary(name))
      continue;
    sys::fs::file_status status;
    if (sys::fs::status(it->path(), status) ||
        status.type() != sys::fs::file_type::regular_file)
      continue;
    if (!entry) {
      // A writer killed between writing and renaming.
      if (now - status.getLastModificationTime() > std::chrono::hours(1))
        sys::fs::remove(it->path());
      continue;
    }
    total += status.getSize();
    bool recent = now - status.getLastModificationTime() <
                  std::chrono::minutes(kCacheGraceMinutes);
    if (it->path() != keep && !recent)
      entries.push_back(
          {it->path(), status.getSize(), status.getLastModificationTime()});
  }
  if (total <= limitBytes)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const Found &a, const Found &b) { return a.used < b.used; });
  for (const Found &f : entries) {
    if (total <= limitBytes)
      break;
    if (!sys::fs::remove(f.path))
      total -= f.bytes;
  }
}

} // namespace tfmc::frontend
