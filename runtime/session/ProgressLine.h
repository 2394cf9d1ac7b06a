//===- ProgressLine.h - the updating progress line --------------*- C++ -*-===//
#ifndef RUNTIME_SESSION_PROGRESSLINE_H
#define RUNTIME_SESSION_PROGRESSLINE_H

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdint>
#include <optional>

namespace tfmc::runtime {

/// The single updating progress line on stderr: lines done (of the total
/// when known), sentences/s, target tokens/s and the time left.
class ProgressLine {
public:
  ProgressLine(llvm::raw_ostream &os, bool enabled,
               std::optional<int64_t> total)
      : os(os), enabled(enabled), total(total),
        start(std::chrono::steady_clock::now()) {}

  void update(int64_t lines, int64_t tokens, bool force = false) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - lastDraw < std::chrono::milliseconds(200))
      return;
    lastDraw = now;
    double seconds = std::chrono::duration<double>(now - start).count();
    double rate = seconds > 0 ? lines / seconds : 0;
    std::string text = total
                           ? llvm::formatv("{0}/{1} lines", lines, *total).str()
                           : llvm::formatv("{0} lines", lines).str();
    text += llvm::formatv(", {0:f1} sentences/s, {1:f0} tokens/s", rate,
                          seconds > 0 ? tokens / seconds : 0.0)
                .str();
    if (total && rate > 0 && lines < *total)
      text += llvm::formatv(", ETA {0:f0} s", (*total - lines) / rate).str();
    os << "\r" << text << "\x1b[K";
    os.flush();
    drawn = true;
  }
  /// Clears the line (before a warning, or at the end).
  void clear() {
    if (enabled && drawn) {
      os << "\r\x1b[K";
      os.flush();
      drawn = false;
    }
  }

private:
  llvm::raw_ostream &os;
  bool enabled;
  std::optional<int64_t> total;
  std::chrono::steady_clock::time_point start, lastDraw;
  bool drawn = false;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_PROGRESSLINE_H
