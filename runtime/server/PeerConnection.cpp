//===- PeerConnection.cpp - end a client's connection from a handler ------===//
#include "runtime/server/PeerConnection.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace tfmc::server {
namespace {

/// `address` as httplib writes an end of a connection (getnameinfo with
/// numeric host and service; an IPv6 link-local address keeps its scope).
bool describe(const sockaddr_storage &address, socklen_t length,
              Endpoint &out) {
  char host[NI_MAXHOST] = {}, service[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, host,
                  sizeof(host), service, sizeof(service),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  out.address = host;
  out.port = std::atoi(service);
  return true;
}

bool same(const Endpoint &a, const Endpoint &b) {
  return a.port == b.port && a.address == b.address;
}

} // namespace

bool endConnection(const Endpoint &remote, const Endpoint &local) {
  DIR *fds = opendir("/proc/self/fd");
  if (!fds)
    return false;
  bool found = false;
  while (dirent *entry = readdir(fds)) {
    char *end = nullptr;
    long number = std::strtol(entry->d_name, &end, 10);
    int fd = static_cast<int>(number);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(fds))
      continue;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    sockaddr_storage peer{}, self{};
    socklen_t peerLength = sizeof(peer), selfLength = sizeof(self);
    Endpoint peerEnd, selfEnd;
    // The listening socket has no peer: getpeername fails on it.
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peerLength) !=
            0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&self), &selfLength) !=
            0 ||
        !describe(peer, peerLength, peerEnd) ||
        !describe(self, selfLength, selfEnd))
      continue;
    if (same(peerEnd, remote) && same(selfEnd, local)) {
      found = shutdown(fd, SHUT_RDWR) == 0;
      break;
    }
  }
  closedir(fds);
  return found;
}

} // namespace tfmc::server
