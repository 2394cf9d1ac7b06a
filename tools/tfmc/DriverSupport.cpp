//===- DriverSupport.cpp - helpers shared by tfmc's subcommands -----------===//
#include "tools/tfmc/Command.h"

#include "frontends/model/FileSupport.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/session/Translator.h"
#include "tfmc/Translator.h"

#include "compiler/JIT/CompileCache.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace cl = llvm::cl;

namespace tfmc::driver {

int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

int fail(llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  // One line per error, whatever the library produced.
  std::replace(text.begin(), text.end(), '\n', ' ');
  return fail(llvm::StringRef(text).rtrim());
}

KernelsOption::KernelsOption(cl::SubCommand &sub, cl::OptionCategory &cat)
    : value("kernels",
            cl::desc("Linear layers: 'library' (oneDNN calls) or 'loops' "
                     "(compiled loop nests); default library when built with "
                     "oneDNN"),
            cl::init(runtime::haveLibraryKernels() ? "library" : "loops"),
            cl::sub(sub), cl::cat(cat)) {}

llvm::Expected<bool> KernelsOption::useLibrary() const {
  if (value != "library" && value != "loops")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--kernels: expected 'library' or 'loops', got '" + value + "'");
  if (value == "library" && !runtime::haveLibraryKernels())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--kernels=library: this tfmc was built without oneDNN");
  return value == "library";
}

ThreadsOption::ThreadsOption(cl::SubCommand &sub, cl::OptionCategory &cat,
                             llvm::StringRef description)
    : value("threads", cl::desc(description), cl::init(1), cl::sub(sub),
            cl::cat(cat)) {}

llvm::Expected<int> ThreadsOption::count() const {
  if (value < 1 || value > tfmc::kMaxThreads)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--threads must be between 1 and " +
                                       std::to_string(tfmc::kMaxThreads));
  return static_cast<int>(value);
}

ComputeTypeOptions::ComputeTypeOptions(cl::SubCommand &sub,
                                       cl::OptionCategory &cat)
    : value("compute-type",
            cl::desc("How linear-layer weights are stored: 'float32', "
                     "'float16' or 'bfloat16' (16-bit weights, float32 "
                     "arithmetic) or 'int8' "
                     "(per-row int8 weights, dynamically quantized inputs); "
                     "default: the model file's \"compute_type\", else "
                     "float32"),
            cl::value_desc("TYPE"), cl::init(""), cl::sub(sub), cl::cat(cat)),
      quantizeOutputProjection(
          "quantize-output-projection",
          cl::desc("With float16/bfloat16/int8, store the output projection "
                   "that way "
                   "too (default true; =false keeps it float32)"),
          cl::init(true), cl::sub(sub), cl::cat(cat)) {}

llvm::Expected<std::optional<frontend::ComputeType>>
ComputeTypeOptions::type() const {
  if (value.empty() && !value.getNumOccurrences())
    return std::nullopt;
  if (auto t = frontend::parseComputeType(value))
    return t;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--compute-type: expected 'float32', "
                                 "'float16', 'bfloat16' or 'int8', got '" +
                                     value + "'");
}

llvm::Expected<frontend::ComputeType>
ComputeTypeOptions::resolve(const frontend::ModelDescription &model) const {
  auto t = type();
  if (!t)
    return t.takeError();
  return t->value_or(
      model.computeType.value_or(frontend::ComputeType::Float32));
}

bool ComputeTypeOptions::apply(runtime::SessionOptions &options) const {
  auto t = type();
  if (!t) {
    fail(t.takeError());
    return false;
  }
  options.computeType = *t;
  options.quantizeOutputProjection = quantizeOutputProjection;
  return true;
}

KeyValueTypeOption::KeyValueTypeOption(cl::SubCommand &sub,
                                       cl::OptionCategory &cat)
    : value("kv-type",
            cl::desc("How the attention keys and values a decoder step "
                     "reads are stored: 'float32', 'float16' (half the "
                     "bytes), or 'auto' (float16 with the float16, bfloat16 "
                     "and int8 compute types, float32 with float32; the "
                     "default)"),
            cl::value_desc("TYPE"), cl::init(""), cl::sub(sub), cl::cat(cat)) {}

llvm::Expected<runtime::KeyValueType> KeyValueTypeOption::type() const {
  if (value.empty() && !value.getNumOccurrences())
    return runtime::KeyValueType::Auto;
  // An empty value given on the command line is a mistake, as for
  // --compute-type (LoadOptions' "" means auto).
  if (auto t = runtime::parseKeyValueType(value); t && !value.empty())
    return *t;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--kv-type: expected 'auto', 'float32' or "
                                 "'float16', got '" +
                                     value + "'");
}

bool KeyValueTypeOption::apply(runtime::SessionOptions &options) const {
  auto t = type();
  if (!t) {
    fail(t.takeError());
    return false;
  }
  options.keyValueType = *t;
  return true;
}

CacheOptions::CacheOptions(cl::SubCommand &sub, cl::OptionCategory &cat)
    : dir("cache-dir",
          cl::desc("Cache directory for compiled models and float32 weight "
                   "copies (default: $TFMC_CACHE_DIR, $XDG_CACHE_HOME/tfmc "
                   "or ~/.cache/tfmc)"),
          cl::value_desc("DIR"), cl::init(""), cl::sub(sub), cl::cat(cat)),
      disabled("no-cache",
               cl::desc("Neither read nor write the cache (compiled models, "
                        "weight copies)"),
               cl::sub(sub), cl::cat(cat)) {}

std::string CacheOptions::directory() const {
  if (disabled)
    return "";
  if (!dir.empty())
    return dir;
  return mlir::tfm::defaultCacheDirectory();
}

struct TimingOption::State {
  mlir::DefaultTimingManager manager;
  std::optional<mlir::TimingScope> root;
  std::vector<std::pair<std::string, double>> notes;
};

TimingOption::TimingOption(cl::SubCommand &sub, cl::OptionCategory &cat)
    : enabled("timing",
              cl::desc("Print the time of every phase (loading, MLIR passes, "
                       "LLVM code generation, JIT link, first result) to "
                       "stderr"),
              cl::sub(sub), cl::cat(cat)) {}

TimingOption::~TimingOption() {
  if (!state)
    return;
  state->root->stop();
  state->root.reset();
  state->manager.print();
  // print() has reported and cleared the timers; keep the manager from
  // printing an empty report again when it is destroyed.
  state->manager.setEnabled(false);
  for (const auto &[name, seconds] : state->notes)
    llvm::errs() << llvm::formatv("  {0}: {1:f4} s\n", name, seconds);
}

mlir::TimingScope *TimingOption::root() {
  if (!enabled)
    return nullptr;
  if (!state) {
    state = std::make_unique<State>();
    state->manager.setEnabled(true);
    state->manager.setDisplayMode(
        mlir::DefaultTimingManager::DisplayMode::Tree);
    state->root.emplace(state->manager.getRootScope());
  }
  return &*state->root;
}

void TimingOption::note(llvm::StringRef name, double seconds) {
  if (root())
    state->notes.emplace_back(name.str(), seconds);
}

std::optional<mlir::TimingScope> TimingOption::scope(llvm::StringRef name) {
  std::optional<mlir::TimingScope> scope;
  if (mlir::TimingScope *parent = root())
    scope.emplace(parent->nest(name));
  return scope;
}

int fillCompileCache(frontend::Model model, runtime::SessionOptions options,
                     const std::string &dir) {
  if (dir.empty())
    return fail("--cache-only needs a cache: --no-cache was given or no "
                "cache directory is known (set --cache-dir)");
  options.teacherForcing = false;
  // Nothing is translated here: no warm-up.
  options.prepareKernels = false;
  options.cacheDir = dir;
  auto session = runtime::Session::open(std::move(model), options);
  if (!session)
    return fail(session.takeError());
  const runtime::CompiledModel &compiled = (*session)->compiled();
  // Filling the cache is the command's whole job: a cache that could not
  // be written (a warning above says why) fails it.
  const std::string &entry = compiled.cacheEntry();
  if (!llvm::sys::fs::is_regular_file(entry))
    return fail(llvm::sys::fs::exists(entry)
                    ? "the compiled model could not be stored in the cache: " +
                          entry + " is not a regular file"
                    : "the compiled model could not be stored in the cache "
                      "directory " +
                          dir);
  llvm::outs() << (compiled.fromCache() ? "cached (already): " : "cached: ")
               << entry << "\n";
  return 0;
}

llvm::Expected<frontend::Model> loadModelTimed(llvm::StringRef path,
                                               TimingOption &timing,
                                               llvm::StringRef weightCacheDir) {
  std::optional<mlir::TimingScope> scope = timing.scope("load model");
  return frontend::loadModel(path, weightCacheDir);
}

llvm::Expected<std::unique_ptr<runtime::Session>>
openSessionTimed(frontend::Model model, runtime::SessionOptions options,
                 const CacheOptions &cache, TimingOption &timing) {
  std::optional<mlir::TimingScope> scope = timing.scope("compile");
  options.cacheDir = cache.directory();
  options.timing = scope ? &*scope : nullptr;
  return runtime::Session::open(std::move(model), options);
}

double secondsSinceStart() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

llvm::Expected<runtime::TokenRows>
readIdFile(llvm::StringRef path, int64_t vocab, llvm::StringRef side) {
  auto buffer = frontend::openFile(path);
  if (!buffer)
    return buffer.takeError();
  runtime::TokenRows rows;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  if (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    auto ids = runtime::parseIdLine(lines[i].rtrim("\r"), vocab, side);
    if (!ids)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "%s: line %zu: %s",
          path.str().c_str(), i + 1, llvm::toString(ids.takeError()).c_str());
    rows.push_back(std::move(*ids));
  }
  return rows;
}

llvm::Expected<std::unique_ptr<llvm::raw_fd_ostream>>
openOutput(llvm::StringRef path) {
  std::error_code ec;
  auto os =
      std::make_unique<llvm::raw_fd_ostream>(path.empty() ? "-" : path, ec);
  if (ec)
    return llvm::createStringError(ec, "%s: cannot write file: %s",
                                   path.str().c_str(), ec.message().c_str());
  return std::move(os);
}

void warnIfNotNumbers(llvm::ArrayRef<float> values, llvm::StringRef what) {
  size_t bad =
      llvm::count_if(values, [](float v) { return !std::isfinite(v); });
  if (bad == 0)
    return;
  llvm::errs() << llvm::formatv(
      "warning: {0} of {1} values of {2} are not numbers (NaN or infinite: "
      "the model's arithmetic overflowed float32, weights or activations too "
      "large); they are not to be trusted\n",
      bad, values.size(), what);
}

llvm::Error finishOutput(llvm::raw_fd_ostream &os, llvm::StringRef path) {
  os.flush();
  std::error_code ec = frontend::takeWriteError(os);
  if (!ec)
    return llvm::Error::success();
  std::string name =
      path.empty() || path == "-" ? "standard output" : path.str();
  return llvm::createStringError(ec, "%s: cannot write: %s", name.c_str(),
                                 ec.message().c_str());
}

} // namespace tfmc::driver
