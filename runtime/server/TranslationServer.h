//===- TranslationServer.h - HTTP/JSON translation service ------*- C++ -*-===//
//
// `tfmc serve`: POST /v1/translate {"text": [...], "beam_size": 4, ...}
// -> {"translations": [...]}, GET /health. Requests from many clients are
// merged into batches (dynamic batching within a short window), a bounded
// queue answers 503 when full, malformed requests get 400 and oversized
// ones 413, each with a message. See docs/serve.md.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SERVER_TRANSLATIONSERVER_H
#define RUNTIME_SERVER_TRANSLATIONSERVER_H

#include "tfmc/Translator.h"

#include <cstddef>
#include <functional>
#include <string>

namespace tfmc::server {

/// The longest batch window: a request waits at most this long for others.
inline constexpr int kMaxBatchWindowMs = 10000;

struct ServerOptions {
  std::string host = "127.0.0.1";
  /// 0: any free port (printed when listening).
  int port = 8080;
  /// Sentences translated together at most.
  int maxBatch = 32;
  /// Sentences waiting to be translated at most; beyond, 503.
  int maxQueue = 256;
  /// How long the batcher waits for more requests to join a batch (0 to
  /// kMaxBatchWindowMs; a stop ends the wait at once).
  int batchWindowMs = 5;
  /// Largest request body (bytes) and sentences per request; beyond, 413.
  size_t maxRequestBytes = 1 << 20;
  int maxSentencesPerRequest = 256;
  /// Connections served at once (cpp-httplib's thread pool; a connection
  /// holds a thread while it sends its request or idles between
  /// keep-alive requests). More wait until one is free.
  int httpThreads = 64;
};

/// Serves `translator` until SIGINT or SIGTERM. `listening(host, port)` is
/// called once the socket is bound. Returns a process exit status; on
/// failure `error` says why.
int serve(Translator &translator, const ServerOptions &options,
          const std::function<void(const std::string &, int)> &listening,
          std::string &error);

} // namespace tfmc::server

#endif // RUNTIME_SERVER_TRANSLATIONSERVER_H
