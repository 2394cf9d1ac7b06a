//===- CompileCache.cpp - content-addressed compiled objects --------------===//
//
// Entry layout (all numbers decimal, lines end in '\n'):
//   tfmc-compiled-object 1
//   key <sha256 of the key text>
//   metadata <bytes>
//   object <bytes>
//   checksum <sha256 of metadata bytes followed by object bytes>
//   <empty line>
//   <metadata bytes><object bytes>
//
//===----------------------------------------------------------------------===//
#include "compiler/JIT/CompileCache.h"

#include "frontends/model/CacheDirectory.h"
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"

using namespace mlir::tfm;

static constexpr llvm::StringLiteral kMagic = "tfmc-compiled-object 1";

std::string mlir::tfm::defaultCacheDirectory() {
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("TFMC_CACHE_DIR");
      dir && !dir->empty())
    return *dir;
  llvm::SmallString<256> path;
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty()) {
    path = *xdg;
  } else if (std::optional<std::string> home =
                 llvm::sys::Process::GetEnv("HOME");
             home && !home->empty()) {
    path = *home;
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "tfmc");
  return std::string(path);
}

uint64_t CompileCache::defaultLimitBytes() {
  return tfmc::frontend::cacheLimitBytes(llvm::errs());
}

std::string CompileCache::digest(llvm::StringRef text) {
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

std::string CompileCache::entryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, digest(key) + ".tfmo");
  return std::string(path);
}

void CompileCache::warn(const llvm::Twine &message) {
  warnings << "warning: compile cache: " << message << "\n";
}

/// Splits "NAME VALUE" off the front of `rest` (one line).
static bool takeField(llvm::StringRef &rest, llvm::StringRef name,
                      llvm::StringRef &value) {
  auto [line, tail] = rest.split('\n');
  if (line.size() == rest.size() || !line.consume_front(name) ||
      !line.consume_front(" "))
    return false;
  value = line;
  rest = tail;
  return true;
}

std::optional<CompileCache::Entry> CompileCache::lookup(llvm::StringRef key) {
  if (directory.empty())
    return std::nullopt;
  std::string path = entryPath(key);
  // A FIFO would block the read and a device (a link to /dev/zero) never
  // end it: only a regular file can be an entry.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) && llvm::sys::fs::exists(status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    warn(path + ": not a regular file; recompiling");
    return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    // Absent (or a directory that cannot exist): a plain miss; store()
    // reports a directory it cannot use.
    if (buffer.getError() != std::errc::no_such_file_or_directory &&
        buffer.getError() != std::errc::not_a_directory)
      warn(path + ": cannot read: " + buffer.getError().message() +
           "; recompiling");
    return std::nullopt;
  }
  llvm::StringRef rest = (*buffer)->getBuffer();
  auto bad = [&](const llvm::Twine &why) -> std::optional<Entry> {
    warn(path + ": " + why + "; recompiling");
    return std::nullopt;
  };
  auto [magic, afterMagic] = rest.split('\n');
  if (magic != kMagic)
    return bad("not a tfmc cache entry");
  rest = afterMagic;
  llvm::StringRef keyHash, metaSize, objectSize, checksum;
  if (!takeField(rest, "key", keyHash) ||
      !takeField(rest, "metadata", metaSize) ||
      !takeField(rest, "object", objectSize) ||
      !takeField(rest, "checksum", checksum) || !rest.consume_front("\n"))
    return bad("malformed header");
  if (keyHash != digest(key))
    return bad("entry belongs to another key");
  uint64_t metaBytes = 0, objectBytes = 0;
  if (metaSize.getAsInteger(10, metaBytes) ||
      objectSize.getAsInteger(10, objectBytes))
    return bad("malformed header");
  if (rest.size() != metaBytes + objectBytes || metaBytes > rest.size())
    return bad("truncated (" + llvm::Twine(rest.size()) + " bytes of " +
               llvm::Twine(metaBytes + objectBytes) + ")");
  if (digest(rest) != checksum)
    return bad("checksum mismatch");
  // Used now: the last entries a prune removes.
  tfmc::frontend::markCacheEntryUsed(path);
  return Entry{rest.take_front(metaBytes).str(),
               rest.drop_front(metaBytes).str()};
}

bool CompileCache::store(llvm::StringRef key, llvm::StringRef metadata,
                         llvm::StringRef object) {
  if (directory.empty())
    return false;
  if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    warn("cannot create " + directory + ": " + ec.message() +
         "; continuing without caching");
    return false;
  }
  std::string payload = metadata.str() + object.str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kMagic << "\n"
     << "key " << digest(key) << "\n"
     << "metadata " << metadata.size() << "\n"
     << "object " << object.size() << "\n"
     << "checksum " << digest(payload) << "\n\n"
     << payload;
  os.flush();

  std::string path = entryPath(key);
  // A unique temporary name in the same directory, then an atomic rename:
  // readers see the old entry or the whole new one, and two writers of the
  // same key both succeed (the contents are identical).
  llvm::SmallString<256> temp;
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp)) {
    warn("cannot write to " + directory + ": " + ec.message() +
         "; continuing without caching");
    return false;
  }
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << text;
    out.close();
    if (std::error_code ec = tfmc::frontend::takeWriteError(out)) {
      llvm::sys::fs::remove(temp);
      warn("cannot write " + std::string(temp) + ": " + ec.message() +
           "; continuing without caching");
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    warn("cannot rename into " + path + ": " + ec.message() +
         "; continuing without caching");
    return false;
  }
  tfmc::frontend::pruneCacheDirectory(directory, path, limitBytes);
  return true;
}
