//===- WeightCache.cpp - float32 copies of converted tensors on disk ------===//
//
// Header (64 bytes, little-endian u64 fields after the magic):
//   "tfmcwt1\n" | identity hash | path bytes | payload bytes
//   | payload checksum | zero padding
// then the payload, then the source's real path (for pruning).
// The payload checksum is the xxh3 of the slots' xxh3 values (each over its
// floats' bytes, padding excluded), so a writer hashes the copies where they
// are and a reader checks every byte it will hand out.
//
//===----------------------------------------------------------------------===//

#include "frontends/model/WeightCache.h"

#include "frontends/model/CacheDirectory.h"
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <fstream>
#include <optional>

using namespace llvm;

namespace tfmc::frontend {

namespace {

constexpr char kMagic[8] = {'t', 'f', 'm', 'c', 'w', 't', '1', '\n'};

uint64_t slotsChecksum(ArrayRef<WeightCache::Slot> slots,
                       function_ref<const char *(size_t)> bytesOf) {
  SmallVector<uint8_t> hashes;
  for (size_t i = 0; i < slots.size(); ++i) {
    uint64_t h = xxh3_64bits(ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(bytesOf(i)), slots[i].count * 4));
    uint8_t le[8];
    support::endian::write64le(le, h);
    hashes.append(le, le + 8);
  }
  return xxh3_64bits(ArrayRef<uint8_t>(hashes));
}

} // namespace

uint64_t WeightCache::layout(MutableArrayRef<Slot> slots) {
  uint64_t offset = 0;
  for (Slot &s : slots) {
    s.offset = offset;
    offset = (offset + s.count * 4 + kAlign - 1) / kAlign * kAlign;
  }
  return offset;
}

WeightCache::WeightCache(std::string directory, StringRef source,
                         const FileIdentity &identity, raw_ostream &warnings,
                         uint64_t limitBytes)
    : directory(std::move(directory)), identity(identity),
      limitBytes(limitBytes), warnings(warnings) {
  SmallString<256> real;
  if (sys::fs::real_path(source, real))
    return;
  realPath = std::string(real);
  SmallString<256> p(this->directory);
  sys::path::append(p, formatv("{0:x-16}-{1:x-16}.tfmw", xxh3_64bits(realPath),
                               identity.hash())
                           .str());
  entry = std::string(p);
}

void WeightCache::warn(const Twine &message) {
  warnings << "warning: weight cache: " << message << "\n";
}

std::unique_ptr<sys::fs::mapped_file_region>
WeightCache::lookup(ArrayRef<Slot> slots, uint64_t payloadBytes) {
  // A FIFO would block the read and a device never end it.
  sys::fs::file_status status;
  if (sys::fs::status(entry, status) || !sys::fs::exists(status))
    return nullptr;
  if (status.type() != sys::fs::file_type::regular_file) {
    warn(entry + ": not a regular file; converting the weights");
    return nullptr;
  }
  auto bad = [&](const Twine &why) {
    warn(entry + ": " + why + "; converting the weights again");
    return nullptr;
  };
  uint64_t bytes = kHeaderBytes + payloadBytes + realPath.size();
  if (status.getSize() != bytes)
    return bad(
        formatv("{0} bytes, expected {1}", status.getSize(), bytes).str());
  Expected<sys::fs::file_t> fd = sys::fs::openNativeFileForRead(entry);
  if (!fd) {
    std::error_code ec = errorToErrorCode(fd.takeError());
    // Removed by another process's store since the status above: a miss.
    if (ec != std::errc::no_such_file_or_directory)
      warn(entry + ": cannot read: " + ec.message() +
           "; converting the weights");
    return nullptr;
  }
  std::error_code ec;
  auto region = std::make_unique<sys::fs::mapped_file_region>(
      *fd, sys::fs::mapped_file_region::readonly, size_t(bytes), 0, ec);
  sys::fs::closeFile(*fd);
  if (ec) {
    warn(entry + ": cannot map: " + ec.message() + "; converting the weights");
    return nullptr;
  }
  const char *h = region->const_data();
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0)
    return bad("not a tfmc weight cache entry");
  if (support::endian::read64le(h + 8) != identity.hash() ||
      support::endian::read64le(h + 16) != realPath.size() ||
      support::endian::read64le(h + 24) != payloadBytes ||
      StringRef(h + kHeaderBytes + payloadBytes, realPath.size()) != realPath)
    return bad("entry belongs to another file");
  const char *payload = h + kHeaderBytes;
  uint64_t checksum =
      slotsChecksum(slots, [&](size_t i) { return payload + slots[i].offset; });
  if (checksum != support::endian::read64le(h + 32))
    return bad("checksum mismatch");
  markCacheEntryUsed(entry);
  return region;
}

bool WeightCache::store(ArrayRef<Slot> slots, ArrayRef<const float *> data,
                        uint64_t payloadBytes) {
  // Rewritten (or replaced) while it was read: the copies may mix two
  // versions, and the name would be the old one's. The next run stores.
  if (FileIdentity::of(realPath) != identity)
    return false;
  // An entry that would take most of the directory's room would push out
  // everything else, then be pushed out by the next store.
  if (kHeaderBytes + payloadBytes > limitBytes / 2)
    return false;
  if (std::error_code ec = sys::fs::create_directories(directory)) {
    warn("cannot create " + directory + ": " + ec.message() +
         "; continuing without it");
    return false;
  }
  char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof(kMagic));
  support::endian::write64le(header + 8, identity.hash());
  support::endian::write64le(header + 16, realPath.size());
  support::endian::write64le(header + 24, payloadBytes);
  support::endian::write64le(header + 32, slotsChecksum(slots, [&](size_t i) {
                               return reinterpret_cast<const char *>(data[i]);
                             }));
  // writeToOutput writes a unique temporary file in the same directory and
  // renames it into place: readers see no entry or a whole one, and two
  // writers both succeed.
  Error written = writeToOutput(entry, [&](raw_ostream &out) -> Error {
    out.write(header, kHeaderBytes);
    uint64_t at = 0;
    static const char zeros[kAlign] = {};
    for (size_t i = 0; i < slots.size(); ++i) {
      out.write(zeros, slots[i].offset - at);
      out.write(reinterpret_cast<const char *>(data[i]), slots[i].count * 4);
      at = slots[i].offset + slots[i].count * 4;
    }
    out.write(zeros, payloadBytes - at);
    out << realPath;
    // A write error (a full disk) must discard the file, not be kept.
    out.flush();
    // (For any path but "-" and "/dev/null" the stream is a raw_fd_ostream.)
    auto &file = static_cast<raw_fd_ostream &>(out);
    if (std::error_code ec = takeWriteError(file))
      return errorCodeToError(ec);
    return Error::success();
  });
  if (written) {
    // (writeToOutput's messages name the file already.)
    warn(toString(std::move(written)) + "; continuing without it");
    return false;
  }
  prune();
  pruneCacheDirectory(directory, entry, limitBytes);
  return true;
}

void WeightCache::prune() {
  std::error_code ec;
  for (sys::fs::directory_iterator it(directory, ec), end; it != end && !ec;
       it.increment(ec)) {
    std::string other = it->path();
    if (!StringRef(other).ends_with(".tfmw") || other == entry)
      continue;
    // The source's path and identity when the entry was stored; an entry
    // that cannot be read is left alone (another user's, say).
    std::ifstream in(other, std::ios::binary);
    char header[kHeaderBytes];
    if (!in.read(header, kHeaderBytes) ||
        std::memcmp(header, kMagic, sizeof(kMagic)) != 0)
      continue;
    uint64_t pathBytes = support::endian::read64le(header + 16);
    uint64_t payload = support::endian::read64le(header + 24);
    if (pathBytes == 0 || pathBytes > 4096)
      continue;
    std::string path(pathBytes, '\0');
    if (!in.seekg(std::streamoff(kHeaderBytes + payload)) ||
        !in.read(path.data(), std::streamsize(pathBytes)))
      continue;
    std::optional<FileIdentity> now = FileIdentity::of(path);
    if (!now || now->hash() != support::endian::read64le(header + 8))
      sys::fs::remove(other);
  }
}

} // namespace tfmc::frontend
