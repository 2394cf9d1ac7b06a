//===- LineReader.h - lines from a descriptor, no waiting -------*- C++ -*-===//
//
// Reads '\n'-terminated lines from a file descriptor through its own buffer
// and can tell "no complete line is available right now" apart from the end
// of input: a translator reading a pipe or a terminal translates what it has
// instead of waiting for a full batch.
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
  /// Reads `fd` (not owned).
  explicit LineReader(int fd);

  enum class Status { Line, WouldBlock, End };
  /// The next line (without its '\n'; a final line without one counts).
  /// With `wait` false, returns WouldBlock instead of blocking when no
  /// complete line is buffered and the descriptor has nothing to read now.
  llvm::Expected<Status> next(std::string &line, bool wait);

  /// Lines in the file when `fd` is a regular file (counted from its
  /// current offset without moving it), else nullopt.
  std::optional<int64_t> regularFileLines() const;

private:
  /// Moves one complete line from the buffer to `line`, if there is one.
  bool takeLine(std::string &line);
  int fd;
  std::string buffer;
  size_t start = 0;
  bool eof = false;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_LINEREADER_H
