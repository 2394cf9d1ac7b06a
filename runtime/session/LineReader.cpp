//===- LineReader.cpp - lines from a file descriptor, without waiting -----===//
#include "runtime/session/LineReader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfmc::runtime;

LineReader::LineReader(int fd, size_t maxLineBytes)
    : fd(fd), limit(std::max<size_t>(maxLineBytes, 4)) {}

bool LineReader::cut(std::string &line) const {
  if (line.size() <= limit)
    return false;
  // Back off continuation bytes (10xxxxxx) so that no character is split.
  size_t end = limit;
  for (int i = 0; i < 3 && end > 0 &&
                  (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80;
       ++i)
    --end;
  line.resize(end);
  return true;
}

bool LineReader::takeLine(std::string &line) {
  size_t end = buffer.find('\n', start);
  if (end == std::string::npos)
    return false;
  if (skipping) {
    // The end of an over-long line: what it held is the line.
    line = std::move(held);
    held.clear();
    skipping = false;
    lastTruncated = true;
  } else {
    line.assign(buffer, start, end - start);
    lastTruncated = cut(line);
  }
  start = end + 1;
  // Drop consumed text now and then, not on every line.
  if (start > (1u << 16) && start * 2 > buffer.size()) {
    buffer.erase(0, start);
    start = 0;
  }
  return true;
}

llvm::Expected<LineReader::Status> LineReader::next(std::string &line,
                                                    bool wait) {
  for (;;) {
    if (takeLine(line))
      return Status::Line;
    // No newline in the buffer: a line growing beyond the limit keeps its
    // first bytes and the rest is dropped as it arrives.
    if (!skipping && buffer.size() - start > limit) {
      held.assign(buffer, start, std::string::npos);
      cut(held);
      skipping = true;
    }
    if (skipping) {
      buffer.clear();
      start = 0;
    }
    if (eof) {
      if (skipping) {
        line = std::move(held);
        held.clear();
        skipping = false;
        lastTruncated = true;
        return Status::Line;
      }
      if (start == buffer.size())
        return Status::End;
      line.assign(buffer, start, std::string::npos);
      lastTruncated = cut(line);
      start = buffer.size();
      return Status::Line;
    }
    if (!wait) {
      pollfd p{fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 0);
      if (ready == 0)
        return Status::WouldBlock;
      if (ready < 0 && errno != EINTR)
        return llvm::createStringError(
            std::error_code(errno, std::generic_category()),
            "cannot poll the input: %s", std::strerror(errno));
    }
    char chunk[1 << 16];
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return llvm::createStringError(
          std::error_code(errno, std::generic_category()),
          "cannot read the input: %s", std::strerror(errno));
    }
    if (n == 0)
      eof = true;
    else
      buffer.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<int64_t> LineReader::regularFileLines() const {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return std::nullopt;
  off_t offset = ::lseek(fd, 0, SEEK_CUR);
  if (offset < 0)
    return std::nullopt;
  int64_t lines = 0;
  char chunk[1 << 16];
  bool partial = false;
  for (off_t at = offset;;) {
    ssize_t n = ::pread(fd, chunk, sizeof(chunk), at);
    if (n <= 0)
      break;
    lines += std::count(chunk, chunk + n, '\n');
    partial = chunk[n - 1] != '\n';
    at += n;
  }
  return lines + (partial ? 1 : 0);
}
