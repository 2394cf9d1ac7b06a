//===- PeerConnection.cpp - end a client's connection from a handler ------===//
#include "runtime/server/PeerConnection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace tfmc::server {
namespace {

/// The address and port of `a` as text and number; false for other
/// families.
bool describe(const sockaddr_storage &a, std::string &address, int &port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto &in = reinterpret_cast<const sockaddr_in &>(a);
    if (!inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text)))
      return false;
    port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto &in = reinterpret_cast<const sockaddr_in6 &>(a);
    if (!inet_ntop(AF_INET6, &in.sin6_addr, text, sizeof(text)))
      return false;
    port = ntohs(in.sin6_port);
  } else {
    return false;
  }
  address = text;
  return true;
}

} // namespace

bool endConnection(const std::string &address, int port, int localPort) {
  DIR *fds = opendir("/proc/self/fd");
  if (!fds)
    return false;
  bool found = false;
  while (dirent *entry = readdir(fds)) {
    char *end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(fds))
      continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    sockaddr_storage peer{}, self{};
    socklen_t peerLength = sizeof(peer), selfLength = sizeof(self);
    std::string peerAddress, selfAddress;
    int peerPort = 0, selfPort = 0;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&peer),
                    &peerLength) != 0 ||
        getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&self),
                    &selfLength) != 0 ||
        !describe(peer, peerAddress, peerPort) ||
        !describe(self, selfAddress, selfPort))
      continue;
    if (peerPort == port && selfPort == localPort && peerAddress == address) {
      found = shutdown(static_cast<int>(fd), SHUT_RDWR) == 0;
      break;
    }
  }
  closedir(fds);
  return found;
}

} // namespace tfmc::server
