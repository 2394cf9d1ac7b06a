//===- StopSignals.h - SIGINT/SIGTERM that stop a server -------*- C++ -*-===//
//
// A server stops on SIGINT or SIGTERM, but httplib's stop() must not be
// called from a signal handler, and blocking the signals for a sigwait()
// thread does not work once other threads run with them unblocked (the
// kernels' OpenMP threads and step teams, started by the warm-up when the
// model loads): the kernel would deliver the signal to one of those, with
// its default action. So the handlers write a byte to a pipe, whichever
// thread they run on, and a thread of the server's waits for it.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SERVER_STOPSIGNALS_H
#define RUNTIME_SERVER_STOPSIGNALS_H

#include <csignal>

namespace tfmc::server {

/// The SIGINT and SIGTERM handlers while one lives (one at a time), and the
/// pipe they wake wait() through; the previous handlers come back after.
class StopSignals {
public:
  StopSignals() = default;
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;
  ~StopSignals();

  /// False when the pipe or the handlers cannot be set up.
  bool install();
  /// Blocks until a signal (true) or wake() (false).
  bool wait();
  void wake();

private:
  int fds[2] = {-1, -1};
  bool installed = false;
  struct sigaction previous[2] = {};
};

} // namespace tfmc::server

#endif // RUNTIME_SERVER_STOPSIGNALS_H
