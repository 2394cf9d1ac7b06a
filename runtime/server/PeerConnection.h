//===- PeerConnection.h - end a client's connection from a handler -*- C++
//-*-===//
//
// cpp-httplib (0.11, Debian 12) keeps a connection alive unless the
// request itself said "Connection: close", and a handler cannot reach the
// connection's socket: a request that must end its connection (its body
// length is ambiguous, so the bytes after its headers cannot be told from
// a next request) would otherwise be followed by whatever the client sent
// next. A handler knows both ends of its connection (httplib's
// remote_addr/remote_port and local_addr/local_port, numeric host text
// from getnameinfo): the socket is found among the process's descriptors
// by both ends, formatted the same way, and shut down, so that httplib
// reads nothing more from it. Called once the response is written
// (httplib's logger): before, httplib finds the socket closed and writes
// no response at all.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SERVER_PEERCONNECTION_H
#define RUNTIME_SERVER_PEERCONNECTION_H

#include <string>

namespace tfmc::server {

/// One end of a TCP connection as httplib names it.
struct Endpoint {
  std::string address;
  int port = -1;
};

/// Shuts down the process's TCP socket whose peer is `remote` and whose own
/// end is `local` (shutdown(SHUT_RDWR); what it has sent is still
/// delivered). False when no such socket is open.
bool endConnection(const Endpoint &remote, const Endpoint &local);

} // namespace tfmc::server

#endif // RUNTIME_SERVER_PEERCONNECTION_H
