//===- TranslationServer.cpp - HTTP/JSON translation service --------------===//
//
// HTTP threads (cpp-httplib's pool) parse and validate requests and queue
// them as jobs; one batcher thread takes the oldest job, waits up to the
// batch window for more jobs with the same decoding options, translates
// them as one batch and hands each job its slice of the results. This file
// is built with C++ exceptions (cpp-httplib, nlohmann-json); none escape.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/TranslationServer.h"
#include "runtime/api/TranslatorImpl.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/server/PeerConnection.h"
#include "runtime/server/StopSignals.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

using json = nlohmann::json;

namespace tfmc::server {
namespace {

struct Job {
  std::vector<std::string> texts;
  /// The sources the texts make: one each, or their sentences where the
  /// options split them (what --max-sentences and --max-queue count).
  size_t sentences = 0;
  TranslateOptions options;
  std::promise<Result<std::vector<Translation>>> done;
};

bool sameDecoding(const TranslateOptions &a, const TranslateOptions &b) {
  return a.beamSize == b.beamSize && a.lengthPenalty == b.lengthPenalty &&
         a.nBest == b.nBest && a.maxLength == b.maxLength &&
         a.minLength == b.minLength && a.maxLengthFactor == b.maxLengthFactor &&
         a.maxLengthOffset == b.maxLengthOffset &&
         a.noRepeatNgramSize == b.noRepeatNgramSize &&
         a.repetitionPenalty == b.repetitionPenalty &&
         a.splitSentences == b.splitSentences;
}

class Batcher {
public:
  Batcher(Translator &translator, const ServerOptions &options)
      : translator(translator), options(options),
        worker([this] { loop(); }) {}
  ~Batcher() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    worker.join();
  }

  /// Ends the batch windows from now on: what is queued is translated at
  /// once (the server is stopping and answers what it has).
  void drain() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      draining = true;
    }
    wake.notify_all();
  }

  /// Queues a job; false when the queue is full.
  bool submit(std::shared_ptr<Job> job) {
    std::lock_guard<std::mutex> lock(mutex);
    if (queuedSentences + job->sentences > size_t(options.maxQueue))
      return false;
    queuedSentences += job->sentences;
    jobs.push_back(std::move(job));
    wake.notify_all();
    return true;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        return;
      // Give other clients a moment to join this batch.
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(options.batchWindowMs);
      wake.wait_until(lock, deadline, [&] {
        return stopping || draining ||
               queuedSentences >= size_t(options.maxBatch);
      });
      std::vector<std::shared_ptr<Job>> batch;
      std::vector<std::string> texts;
      size_t sentences = 0;
      TranslateOptions decoding = jobs.front()->options;
      for (auto it = jobs.begin(); it != jobs.end();) {
        bool fits = texts.empty() ||
                    sentences + (*it)->sentences <= size_t(options.maxBatch);
        if (fits && sameDecoding((*it)->options, decoding)) {
          texts.insert(texts.end(), (*it)->texts.begin(), (*it)->texts.end());
          sentences += (*it)->sentences;
          queuedSentences -= (*it)->sentences;
          batch.push_back(std::move(*it));
          it = jobs.erase(it);
        } else {
          ++it;
        }
      }
      lock.unlock();
      decoding.batchSize = std::max<int64_t>(int64_t(sentences), 1);
      Result<std::vector<Translation>> out =
          translator.translate(texts, decoding);
      size_t next = 0;
      for (std::shared_ptr<Job> &job : batch) {
        if (!out) {
          job->done.set_value(
              Result<std::vector<Translation>>::failure(out.error()));
          continue;
        }
        std::vector<Translation> part(
            std::make_move_iterator(out->begin() + next),
            std::make_move_iterator(out->begin() + next + job->texts.size()));
        next += job->texts.size();
        job->done.set_value(
            Result<std::vector<Translation>>(std::move(part)));
      }
      lock.lock();
    }
  }

  Translator &translator;
  const ServerOptions &options;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::shared_ptr<Job>> jobs;
  size_t queuedSentences = 0;
  bool stopping = false, draining = false;
  std::thread worker;
};

void reply(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void replyError(httplib::Response &res, int status, const std::string &what) {
  reply(res, status, json{{"error", what}});
}

/// Registers a 405 (with `Allow: allowed`) for every method but `allowed`
/// on `path`.
void refuseOtherMethods(httplib::Server &http, const std::string &path,
                        const std::string &allowed) {
  httplib::Server::Handler refuse = [path, allowed](const httplib::Request &,
                                                    httplib::Response &res) {
    res.set_header("Allow", allowed);
    replyError(res, 405, path + " takes " + allowed);
  };
  using Register = httplib::Server &(
      httplib::Server::*)(const std::string &, httplib::Server::Handler);
  struct Method {
    const char *name;
    Register add;
  };
  const Method methods[] = {{"GET", &httplib::Server::Get},
                            {"POST", &httplib::Server::Post},
                            {"PUT", &httplib::Server::Put},
                            {"DELETE", &httplib::Server::Delete},
                            {"PATCH", &httplib::Server::Patch},
                            {"OPTIONS", &httplib::Server::Options}};
  for (const Method &m : methods)
    if (allowed != m.name)
      (http.*m.add)(path, refuse);
}

/// Why the length of a request's body is not plain, or "": a
/// Content-Length or Transfer-Encoding header whose name has blanks around
/// it (httplib keeps such a header apart and ignores it), a Content-Length
/// given twice or that is not only digits (httplib reads "0, 52" as 0), a
/// Transfer-Encoding other than one "chunked", or both headers. A proxy in
/// front may read any of these otherwise than httplib does.
std::string framingProblem(const httplib::Request &req) {
  int lengths = 0, encodings = 0;
  for (const auto &[name, value] : req.headers) {
    llvm::StringRef trimmed = llvm::StringRef(name).trim(" \t");
    std::string lower = trimmed.lower();
    bool length = lower == "content-length",
         encoding = lower == "transfer-encoding";
    if (!length && !encoding)
      continue;
    if (trimmed.size() != name.size())
      return "a " + trimmed.str() + " header with blanks in its name";
    llvm::StringRef v = llvm::StringRef(value).trim(" \t");
    if (length) {
      ++lengths;
      if (v.empty() ||
          v.find_first_not_of("0123456789") != llvm::StringRef::npos)
        return "Content-Length '" + value + "' is not a number";
    } else {
      ++encodings;
      if (!v.equals_insensitive("chunked"))
        return "Transfer-Encoding '" + value + "' (only 'chunked' is read)";
    }
  }
  if (lengths > 1)
    return "Content-Length given " + std::to_string(lengths) + " times";
  if (encodings > 1)
    return "Transfer-Encoding given " + std::to_string(encodings) + " times";
  if (lengths && encodings)
    return "Content-Length given with Transfer-Encoding";
  return "";
}

/// Reads the decoding options of a request; "" or the error.
std::string readOptions(const json &body, TranslateOptions &o) {
  static const char *known[] = {
      "text",       "beam_size",         "length_penalty",
      "max_length", "min_length",        "max_length_factor",
      "max_length_offset", "no_repeat_ngram_size", "repetition_penalty",
      "n_best", "split_sentences"};
  for (auto it = body.begin(); it != body.end(); ++it)
    if (std::find(std::begin(known), std::end(known), it.key()) ==
        std::end(known))
      return "unknown field '" + it.key() + "'";
  auto integer = [&](const char *key, int64_t &out) -> std::string {
    if (!body.contains(key))
      return "";
    if (!body[key].is_number_integer())
      return std::string("field '") + key + "': expected an integer";
    out = body[key].get<int64_t>();
    return "";
  };
  auto number = [&](const char *key, double &out) -> std::string {
    if (!body.contains(key))
      return "";
    if (!body[key].is_number())
      return std::string("field '") + key + "': expected a number";
    out = body[key].get<double>();
    return "";
  };
  for (std::string e :
       {integer("beam_size", o.beamSize), integer("max_length", o.maxLength),
        integer("min_length", o.minLength), integer("n_best", o.nBest),
        integer("max_length_offset", o.maxLengthOffset),
        integer("no_repeat_ngram_size", o.noRepeatNgramSize),
        number("length_penalty", o.lengthPenalty),
        number("max_length_factor", o.maxLengthFactor),
        number("repetition_penalty", o.repetitionPenalty)})
    if (!e.empty())
      return e;
  if (body.contains("split_sentences")) {
    const json &v = body["split_sentences"];
    if (!v.is_string() || (v != "on" && v != "off" && v != "auto"))
      return "field 'split_sentences': expected \"on\", \"off\" or "
             "\"auto\"";
    o.splitSentences = v.get<std::string>();
  }
  if (o.beamSize < 1 || o.beamSize > 64)
    return "field 'beam_size': expected 1 to 64";
  if (o.nBest < 1 || o.nBest > o.beamSize)
    return "field 'n_best': expected 1 to beam_size";
  if (o.splitSentences == "on" && o.nBest > 1)
    return "field 'split_sentences': \"on\" gives one translation a line, "
           "not n_best lists";
  if (o.maxLength < 1 || o.maxLength > 1024)
    return "field 'max_length': expected 1 to 1024";
  if (o.minLength < 0)
    return "field 'min_length': expected 0 or more";
  if (o.minLength > o.maxLength)
    return "field 'min_length': expected at most max_length (" +
           std::to_string(o.maxLength) + ")";
  if (!(o.lengthPenalty >= 0) || !std::isfinite(o.lengthPenalty))
    return "field 'length_penalty': expected a finite number, 0 or more";
  if (!(o.maxLengthFactor >= 0) || !std::isfinite(o.maxLengthFactor))
    return "field 'max_length_factor': expected a finite number, 0 or more";
  if (o.maxLengthOffset < 0)
    return "field 'max_length_offset': expected 0 or more";
  if (o.noRepeatNgramSize < 0)
    return "field 'no_repeat_ngram_size': expected 0 or more";
  if (!runtime::isUsablePenalty(o.repetitionPenalty))
    return "field 'repetition_penalty': expected a positive number that "
           "float32 holds (normal, finite)";
  return "";
}

} // namespace

int serve(Translator &translator, const ServerOptions &options,
          const std::function<void(const std::string &, int)> &listening,
          std::string &error) {
  if (options.batchWindowMs < 0 || options.batchWindowMs > kMaxBatchWindowMs) {
    error = "the batch window must be 0 to " +
            std::to_string(kMaxBatchWindowMs) + " ms";
    return 1;
  }
  // SIGINT/SIGTERM stop the server (StopSignals.h).
  StopSignals stopSignals;
  if (!stopSignals.install()) {
    error = "cannot install the SIGINT/SIGTERM handlers";
    return 1;
  }

  Batcher batcher(translator, options);
  httplib::Server http;
  http.set_payload_max_length(options.maxRequestBytes);
  // Every open connection holds one of these threads while it sends its
  // request and while it idles between keep-alive requests (up to 5 s):
  // httplib's default of 8 let eight idle or slow clients stall every
  // other request, /health included. Translating happens on the batcher's
  // thread; these mostly wait.
  int httpThreads = options.httpThreads;
  http.new_task_queue = [httpThreads] {
    return new httplib::ThreadPool(static_cast<size_t>(httpThreads));
  };
  // A request whose body's length is not plain (framingProblem) is
  // refused before its body is read, and its connection ended once the
  // answer is written: httplib would take one reading of the length, and
  // what a proxy in front took for the body by another would be read here
  // as a request of its own (request smuggling). httplib keeps the
  // connection open whatever the response says, so the logger (called
  // after the response is written) ends it (PeerConnection.h).
  http.set_logger([](const httplib::Request &req, const httplib::Response &) {
    if (!framingProblem(req).empty() &&
        !endConnection({req.remote_addr, req.remote_port},
                       {req.local_addr, req.local_port}))
      llvm::errs() << "warning: serve: could not close the connection from "
                   << req.remote_addr << ":" << req.remote_port
                   << " after a request with an ambiguous body length\n";
  });
  http.set_pre_routing_handler(
      [](const httplib::Request &req, httplib::Response &res) {
        std::string problem = framingProblem(req);
        if (problem.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        res.set_header("Connection", "close");
        replyError(res, 400, "the body's length is ambiguous: " + problem);
        return httplib::Server::HandlerResponse::Handled;
      });
  // A refused request's Connection: close beside httplib's Keep-Alive (and
  // twice where the request asked for it) says two things: one is kept.
  http.set_post_routing_handler(
      [](const httplib::Request &, httplib::Response &res) {
        if (res.get_header_value("Connection") != "close")
          return;
        res.headers.erase("Keep-Alive");
        res.headers.erase("Connection");
        res.set_header("Connection", "close");
      });
  http.Get("/health", [&](const httplib::Request &, httplib::Response &res) {
    reply(res, 200, json{{"status", "ok"}});
  });
  // Each endpoint exists for one method: the others are told so (405),
  // not that the path is unknown (404).
  refuseOtherMethods(http, "/health", "GET");
  refuseOtherMethods(http, "/v1/translate", "POST");
  // The body is read through a content reader: httplib's own reading
  // would cap a body sent as application/x-www-form-urlencoded (what
  // `curl -d` and urllib send by default) at 8 KiB instead of
  // --max-request-bytes. The reader keeps the payload limit.
  http.Post("/v1/translate", [&](const httplib::Request &req,
                                 httplib::Response &res,
                                 const httplib::ContentReader &content) {
    // A body is always read to its end, also one that is refused: bytes
    // left unread on a kept-alive connection would be parsed as the next
    // requests (one smuggled behind a refused body got its answer).
    if (req.is_multipart_form_data()) {
      content([](const httplib::MultipartFormData &) { return true; },
              [](const char *, size_t) { return true; });
      return replyError(res, 415,
                        "the body must be a JSON object, not a "
                        "multipart form");
    }
    // httplib checks the limit against a Content-Length only: a chunked
    // body is counted here as it arrives, and past the limit the rest is
    // read and dropped (as httplib skips an oversized Content-Length body).
    std::string raw;
    bool tooLarge = false;
    bool read = content([&](const char *data, size_t length) {
      if (tooLarge || length > options.maxRequestBytes - raw.size()) {
        tooLarge = true;
        std::string().swap(raw);
        return true;
      }
      raw.append(data, length);
      return true;
    });
    if (!read || tooLarge)
      return res.status == 413 || tooLarge
                 ? replyError(res, 413, "the request body is too large")
                 : replyError(res, 400, "the request body could not be read");
    // A field given twice would silently take its last value: refused, as
    // in model.json.
    std::string duplicate;
    std::vector<std::string> keys;
    json::parser_callback_t noDuplicates =
        [&](int depth, json::parse_event_t event, json &parsed) {
          if (depth == 1 && event == json::parse_event_t::key &&
              parsed.is_string()) {
            const std::string &key = parsed.get_ref<const std::string &>();
            if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
              if (duplicate.empty())
                duplicate = key;
            } else {
              keys.push_back(key);
            }
          }
          return true;
        };
    json body = json::parse(raw, noDuplicates, /*allow_exceptions=*/false);
    if (body.is_discarded())
      return replyError(res, 400,
                        "the body is not valid JSON (it must be "
                        "UTF-8 text without lone surrogates)");
    if (!body.is_object())
      return replyError(res, 400, "the body must be a JSON object");
    if (!duplicate.empty())
      return replyError(res, 400, "field '" + duplicate + "' given twice");
    if (!body.contains("text") || !body["text"].is_array())
      return replyError(res, 400, "field 'text': expected a list of strings");
    const json &text = body["text"];
    if (text.size() > size_t(options.maxSentencesPerRequest))
      return replyError(res, 413,
                        "too many sentences (" + std::to_string(text.size()) +
                            ", at most " +
                            std::to_string(options.maxSentencesPerRequest) +
                            ")");
    auto job = std::make_shared<Job>();
    // Fields the request leaves out keep the model file's defaults.
    job->options = translator.defaultOptions();
    for (const json &t : text) {
      if (!t.is_string())
        return replyError(res, 400, "field 'text': expected a list of strings");
      job->texts.push_back(t.get<std::string>());
    }
    if (std::string e = readOptions(body, job->options); !e.empty())
      return replyError(res, 400, e);
    int64_t positions = translator.impl().session->model().desc.arch.maxLen;
    if (job->options.minLength > positions)
      return replyError(res, 400,
                        "field 'min_length': expected at most the model's "
                        "max_len (" +
                            std::to_string(positions) + ")");
    // Split into sentences, a text is as many sources as it has sentences:
    // the bound counts those (one request of 800 KB split into 30,000
    // sentences kept a server busy for 84 s).
    job->sentences = job->texts.size();
    if (api::splitsSentences(job->options,
                             translator.impl().session->model().desc,
                             job->options.scores)) {
      job->sentences = api::splitSentenceCount(job->texts);
      if (job->sentences > size_t(options.maxSentencesPerRequest))
        return replyError(
            res, 413,
            "too many sentences (" + std::to_string(job->sentences) +
                " once the texts are split into sentences, at most " +
                std::to_string(options.maxSentencesPerRequest) + ")");
    }
    // A request the queue can never hold is refused outright (a 503 would
    // ask for a retry that can never succeed).
    if (job->sentences > size_t(options.maxQueue))
      return replyError(
          res, 413,
          "too many sentences (" + std::to_string(job->sentences) +
              ") for the queue, which holds at most " +
              std::to_string(options.maxQueue) + " (--max-queue)");
    std::future<Result<std::vector<Translation>>> done =
        job->done.get_future();
    if (!batcher.submit(job))
      return replyError(res, 503, "the queue is full; retry later");
    Result<std::vector<Translation>> out = done.get();
    if (!out)
      return replyError(res, 500, out.error());
    json translations = json::array(), errors = json::array(),
         warnings = json::array();
    for (size_t i = 0; i < out->size(); ++i) {
      const Translation &t = (*out)[i];
      if (job->options.nBest > 1) {
        json hyps = json::array();
        for (const Hypothesis &h : t.hypotheses)
          hyps.push_back(json{{"text", h.text}, {"score", h.score}});
        translations.push_back(hyps);
      } else {
        translations.push_back(t.best().text);
      }
      if (!t.error.empty())
        errors.push_back(json{{"index", i}, {"error", t.error}});
      if (!t.warning.empty())
        warnings.push_back(json{{"index", i}, {"warning", t.warning}});
    }
    json result{{"translations", translations}};
    if (!errors.empty())
      result["errors"] = errors;
    if (!warnings.empty())
      result["warnings"] = warnings;
    reply(res, 200, result);
  });
  // Errors httplib answers itself (an oversized body, an unknown path) get
  // a JSON message too; the handlers' own answers are left as they are.
  http.set_error_handler([](const httplib::Request &, httplib::Response &res) {
    if (!res.body.empty())
      return;
    if (res.status == 413)
      replyError(res, 413, "the request body is too large");
    else
      replyError(res, res.status, "HTTP status " + std::to_string(res.status));
  });
  http.set_exception_handler([](const httplib::Request &,
                                httplib::Response &res, std::exception_ptr) {
    replyError(res, 500, "internal error");
  });

  // httplib listens with a backlog of 5: a burst of new connections (16
  // clients at once in the load test) overflowed it, and each dropped
  // connection waited the client's 1 s SYN retransmission (p99 ~1 s).
  // Linux takes a second listen() on the bound socket as a new backlog.
  socket_t listener = INVALID_SOCKET;
  http.set_socket_options([&listener](socket_t sock) {
    httplib::default_socket_options(sock);
    listener = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = http.bind_to_any_port(options.host);
    if (port < 0) {
      error = "cannot listen on " + options.host;
      return 1;
    }
  } else if (!http.bind_to_port(options.host, port)) {
    error = "cannot listen on " + options.host + ":" + std::to_string(port);
    return 1;
  }
  if (listener != INVALID_SOCKET)
    ::listen(listener, SOMAXCONN);
  // httplib's stop() does nothing until listen_after_bind() has begun (it
  // marks the server running there): a signal that came right after
  // `listening` was lost, and the server ran on (a fresh machine's load
  // test, SIGTERM sent on the "serving" line, 2026-12-06). So the stopper
  // asks again until the listener has returned.
  std::atomic<bool> ended{false};
  std::thread stopper([&] {
    if (!stopSignals.wait())
      return;
    // Requests waiting in a batch window are answered now, not after it.
    batcher.drain();
    while (!ended.load()) {
      http.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  listening(options.host, port);
  bool ok = http.listen_after_bind();
  ended = true;
  // Wake the stopper if the server ended on its own.
  stopSignals.wake();
  stopper.join();
  if (!ok) {
    error = "the server stopped unexpectedly";
    return 1;
  }
  return 0;
}

} // namespace tfmc::server
