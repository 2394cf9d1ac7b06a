//===- StopSignals.cpp - SIGINT/SIGTERM that stop a server ----------------===//
#include "runtime/server/StopSignals.h"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

using namespace tfmc::server;

namespace {

/// The write end of the live StopSignals' pipe (-1: none).
std::atomic<int> stopPipeWriter{-1};

extern "C" void onStopSignal(int) {
  int fd = stopPipeWriter.load();
  if (fd >= 0) {
    char byte = 's';
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
}

} // namespace

bool StopSignals::install() {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return false;
  stopPipeWriter.store(fds[1]);
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  installed = ::sigaction(SIGINT, &action, &previous[0]) == 0 &&
              ::sigaction(SIGTERM, &action, &previous[1]) == 0;
  return installed;
}

bool StopSignals::wait() {
  char byte = 0;
  ssize_t n;
  do
    n = ::read(fds[0], &byte, 1);
  while (n < 0 && errno == EINTR);
  return n == 1 && byte == 's';
}

void StopSignals::wake() {
  char byte = 'w';
  [[maybe_unused]] ssize_t n = ::write(fds[1], &byte, 1);
}

StopSignals::~StopSignals() {
  if (installed) {
    ::sigaction(SIGINT, &previous[0], nullptr);
    ::sigaction(SIGTERM, &previous[1], nullptr);
  }
  stopPipeWriter.store(-1);
  for (int fd : fds)
    if (fd >= 0)
      ::close(fd);
}
