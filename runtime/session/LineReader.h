//===- LineReader.h - lines from a descriptor, no waiting -------*- C++ -*-===//
//
// Reads '\n'-terminated lines from a file descriptor through its own buffer
// and can tell "no complete line is available right now" apart from the end
// of input: a translator reading a pipe or a terminal translates what it has
// instead of waiting for a full batch. A line holds at most
// kMaxLineBytes bytes: the rest of a longer one is read and dropped (the
// line is cut at a UTF-8 character boundary and marked truncated), so a
// hostile input without newlines never holds more than that in memory.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_LINEREADER_H
#define RUNTIME_SESSION_LINEREADER_H

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace tfmc::runtime {

class LineReader {
public:
  static constexpr size_t kMaxLineBytes = 256 * 1024;

  /// Reads `fd` (not owned).
  explicit LineReader(int fd, size_t maxLineBytes = kMaxLineBytes);

  enum class Status { Line, WouldBlock, End };
  /// The next line (without its '\n'; a final line without one counts).
  /// With `wait` false, returns WouldBlock instead of blocking when no
  /// complete line is buffered and the descriptor has nothing to read now.
  llvm::Expected<Status> next(std::string &line, bool wait);
  /// Whether the last line next() returned was longer than the limit (and
  /// so holds only its first bytes).
  bool truncated() const { return lastTruncated; }
  size_t maxLineBytes() const { return limit; }

  /// Lines in the file when `fd` is a regular file (counted from its
  /// current offset without moving it), else nullopt.
  std::optional<int64_t> regularFileLines() const;

private:
  /// Moves one complete line from the buffer to `line`, if there is one.
  bool takeLine(std::string &line);
  /// Cuts `line` to the limit (at a character boundary); whether it did.
  bool cut(std::string &line) const;
  int fd;
  size_t limit;
  std::string buffer;
  size_t start = 0;
  bool eof = false;
  /// Dropping the rest of an over-long line, whose first bytes are `held`.
  bool skipping = false;
  std::string held;
  bool lastTruncated = false;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_LINEREADER_H
