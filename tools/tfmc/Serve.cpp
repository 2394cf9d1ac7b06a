//===- Serve.cpp - tfmc serve: translation over HTTP/JSON -----------------===//
//
// tfmc serve MODEL.json [--host 127.0.0.1] [--port 8080] [--max-batch N]
//                       [--max-queue N] [--batch-window-ms MS] ...
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/IntegerOption.h"

#include "runtime/api/TranslatorImpl.h"
#include "runtime/server/TranslationServer.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

/// --http-threads at most (each a thread's stack, mostly waiting).
constexpr int kMaxHttpThreads = 1024;

class ServeCommand : public Command {
public:
  explicit ServeCommand(cl::OptionCategory &cat)
      : sub("serve", "Serve translations over HTTP/JSON (POST /v1/translate, "
                     "GET /health)"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        host("host", cl::desc("Address to listen on (default loopback)"),
             cl::init("127.0.0.1"), cl::sub(sub), cl::cat(cat)),
        port("port", cl::desc("TCP port (0: any free port)"), cl::init(8080),
             cl::sub(sub), cl::cat(cat)),
        maxBatch("max-batch", cl::desc("Sentences translated together"),
                 cl::init(32), cl::sub(sub), cl::cat(cat)),
        maxQueue("max-queue",
                 cl::desc("Sentences waiting at most; more is answered 503"),
                 cl::init(256), cl::sub(sub), cl::cat(cat)),
        batchWindow("batch-window-ms",
                    cl::desc("How long a batch waits for more requests"),
                    cl::init(5), cl::sub(sub), cl::cat(cat)),
        maxRequest("max-request-bytes",
                   cl::desc("Largest request body; larger is answered 413"),
                   cl::init(1 << 20), cl::sub(sub), cl::cat(cat)),
        maxSentences(
            "max-sentences",
            cl::desc("Sentences per request at most (413 beyond; a text "
                     "split into sentences counts each)"),
            cl::init(256), cl::sub(sub), cl::cat(cat)),
        httpThreads("http-threads",
                    cl::desc("Connections served at once (each open "
                             "connection holds one while it sends or idles)"),
                    cl::init(64), cl::sub(sub), cl::cat(cat)),
        threads("threads",
                cl::desc("Threads for compiled code (default: this "
                         "machine's cores; a server's batches use them all)"),
                cl::init(coresHere()), cl::sub(sub), cl::cat(cat)),
        cacheOnly("cache-only",
                  cl::desc("Compile the model into the compiled-model cache "
                           "(what serve loads) and exit, without serving"),
                  cl::sub(sub), cl::cat(cat)),
        kernels(sub, cat), computeType(sub, cat), kvType(sub, cat),
        cache(sub, cat) {}

  cl::SubCommand &subcommand() override { return sub; }

  /// The cores this process may run on (its affinity mask: a container's
  /// share, not the host's count), at least 1 and at most kMaxThreads.
  static int coresHere() {
    unsigned n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      n = static_cast<unsigned>(CPU_COUNT(&set));
    if (n == 0)
      n = std::thread::hardware_concurrency();
    return static_cast<int>(std::clamp<unsigned>(n, 1, kMaxThreads));
  }

  int run() override {
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    if (auto type = computeType.type(); !type)
      return fail(type.takeError());
    if (auto kv = kvType.type(); !kv)
      return fail(kv.takeError());
    if (port < 0 || port > 65535)
      return fail("--port must be 0 to 65535");
    if (maxBatch < 1 || maxQueue < 1 || batchWindow < 0 || maxRequest < 1 ||
        maxSentences < 1 || threads < 1)
      return fail("--max-batch, --max-queue, --max-request-bytes, "
                  "--max-sentences and --threads must be positive; "
                  "--batch-window-ms not negative");
    if (batchWindow > server::kMaxBatchWindowMs)
      return fail("--batch-window-ms must be between 0 and " +
                  std::to_string(server::kMaxBatchWindowMs));
    if (httpThreads < 1 || httpThreads > kMaxHttpThreads)
      return fail("--http-threads must be between 1 and " +
                  std::to_string(kMaxHttpThreads));
    if (threads > kMaxThreads)
      return fail("--threads must be between 1 and " +
                  std::to_string(kMaxThreads));
    if (cacheOnly)
      return fillCache(*library);
    tfmc::LoadOptions load;
    load.kernels = *library ? "library" : "loops";
    load.threads = threads;
    load.computeType = computeType.name();
    load.quantizeOutputProjection = computeType.outputProjection();
    load.kvType = kvType.name();
    load.cacheDir = cache.directory();
    load.useCache = !load.cacheDir.empty();
    load.requireDecoder = true;
    load.requireTextTokenizers = true;
    // Requests are batched up to --max-batch sentences: warm up at that.
    load.warmUpRows =
        std::min<int64_t>(maxBatch, runtime::Session::kMaxWarmUpRows);
    auto translator = api::loadTranslator(model, load, nullptr);
    if (!translator)
      return fail(translator.takeError());
    server::ServerOptions options;
    options.host = host;
    options.port = port;
    options.maxBatch = maxBatch;
    options.maxQueue = maxQueue;
    options.batchWindowMs = batchWindow;
    options.maxRequestBytes = static_cast<size_t>(maxRequest);
    options.maxSentencesPerRequest = maxSentences;
    options.httpThreads = httpThreads;
    std::string error;
    int status = server::serve(
        **translator, options,
        [&](const std::string &h, int p) {
          llvm::errs() << "tfmc: serving " << model << " on http://" << h << ":"
                       << p << " (" << (*translator)->configuration() << ", "
                       << threads << " thread" << (threads == 1 ? "" : "s")
                       << ")\n";
        },
        error);
    if (status != 0)
      return fail(error);
    return 0;
  }

private:
  /// --cache-only: what serve compiles at start, into the cache, by this
  /// executable (tfmc-serve keys its own entries; `tfmc compile
  /// --cache-only` fills tfmc's).
  int fillCache(bool library) {
    std::string dir = cache.directory();
    auto loaded = frontend::loadModel(model, dir);
    if (!loaded)
      return fail(loaded.takeError());
    // What serve refuses at start is refused here too.
    if (loaded->desc.arch.encoderOnly())
      return fail(frontend::needsDecoderMessage(model, "translation"));
    runtime::SessionOptions options;
    options.useLibraryKernels = library;
    if (!computeType.apply(options) || !kvType.apply(options))
      return 1;
    return fillCompileCache(std::move(*loaded), std::move(options), dir);
  }

  cl::SubCommand sub;
  cl::opt<std::string> model, host;
  IntegerOption<int> port, maxBatch, maxQueue, batchWindow, maxRequest,
      maxSentences, httpThreads, threads;
  cl::opt<bool> cacheOnly;
  KernelsOption kernels;
  ComputeTypeOptions computeType;
  KeyValueTypeOption kvType;
  CacheOptions cache;
};

} // namespace

std::unique_ptr<Command> createServeCommand(cl::OptionCategory &cat) {
  return std::make_unique<ServeCommand>(cat);
}

} // namespace tfmc::driver
