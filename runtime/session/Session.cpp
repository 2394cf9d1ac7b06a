//===- Session.cpp - a loaded, compiled model ready to run ----------------===//
#include "runtime/session/Session.h"

#include "runtime/decoding/GreedySearch.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/session/BatchDecoder.h"
#include "runtime/session/Buffer.h"
#include "runtime/session/CallFrame.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

using namespace tfmc;
using namespace tfmc::runtime;

static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One call frame per compiled function, with weights and the positional
/// table bound once.
struct Session::Frames {
  std::unique_ptr<CallFrame> encode, decodeStep, forward, encodeStates;
  /// The batch decoders' buffers, reused from batch to batch.
  DecoderArena arena;
  explicit Frames(const CompiledModel &m) {
    if (const CompiledFunction *f = m.function("encode_states"))
      encodeStates = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("encode"))
      encode = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("decode_step"))
      decodeStep = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("forward"))
      forward = std::make_unique<CallFrame>(*f);
  }
};

/// Binds the weights (as the store holds them) and the positional table.
static void bindConstants(CallFrame &frame, const WeightStore &weights,
                          const frontend::Architecture &arch,
                          const std::vector<float> &positionalTable) {
  for (size_t i = 0; i < frame.function().args.size(); ++i) {
    const ArgSpec &arg = frame.function().args[i];
    if (arg.kind == ArgSpec::Kind::Weight ||
        arg.kind == ArgSpec::Kind::WeightScale)
      frame.bind(static_cast<int>(i), weights.data(arg), arg.shape);
    else if (arg.name == "positional_table")
      frame.bind(static_cast<int>(i), positionalTable.data(),
                 {arch.maxLen, arch.dModel});
  }
}

/// pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(...), in double.
static std::vector<float> sinusoidalTable(int64_t maxLen, int64_t d) {
  std::vector<float> table(maxLen * d);
  for (int64_t p = 0; p < maxLen; ++p) {
    for (int64_t i = 0; i < d; i += 2) {
      double angle = double(p) / std::pow(10000.0, double(i) / double(d));
      table[p * d + i] = static_cast<float>(std::sin(angle));
      if (i + 1 < d)
        table[p * d + i + 1] = static_cast<float>(std::cos(angle));
    }
  }
  return table;
}

llvm::Expected<std::unique_ptr<Session>>
Session::open(llvm::StringRef modelPath, const SessionOptions &options) {
  auto model = frontend::loadModel(modelPath);
  if (!model)
    return model.takeError();
  return open(std::move(*model), options);
}

llvm::Expected<std::unique_ptr<Session>>
Session::open(frontend::Model model, const SessionOptions &options) {
  std::unique_ptr<Session> session(new Session(std::move(model)));
  const frontend::Model &m = session->loaded;
  CompileOptions compileOptions;
  compileOptions.dumpDir = options.dumpDir;
  compileOptions.useLibraryKernels = options.useLibraryKernels;
  compileOptions.translation = options.translation;
  compileOptions.teacherForcing = options.teacherForcing;
  compileOptions.encoderStates =
      options.encoderStates || m.desc.arch.encoderOnly();
  session->computeType = options.computeType.value_or(
      m.desc.computeType.value_or(frontend::ComputeType::Float32));
  compileOptions.computeType = session->computeType;
  compileOptions.quantizeOutputProjection = options.quantizeOutputProjection;
  compileOptions.cacheDir = options.cacheDir;
  compileOptions.refreshCache = options.refreshCache;
  compileOptions.profile = options.profile;
  compileOptions.timing = options.timing;
  setKernelThreads(std::max(options.threads, 1));
  auto compiled = CompiledModel::compile(m.desc.arch, m.sourceVocab.size(),
                                         m.targetVocab.size(), compileOptions);
  if (!compiled)
    return compiled.takeError();
  session->compiledModel = std::move(*compiled);
  // Stored position tables are weights; only the sinusoid is computed.
  if (!m.desc.arch.positionTables())
    session->positionalTable =
        sinusoidalTable(m.desc.arch.maxLen, m.desc.arch.dModel);
  std::optional<mlir::TimingScope> bindTiming;
  if (options.timing)
    bindTiming.emplace(options.timing->nest("bind weights"));
  session->weightStore = std::make_unique<WeightStore>(m);
  for (const char *name :
       {"encode", "decode_step", "forward", "encode_states"})
    if (const CompiledFunction *f = session->compiledModel->function(name))
      if (llvm::Error e = session->weightStore->prepare(*f))
        return std::move(e);
  // Float32 copies made at load (of float16, bfloat16 or int8 tensors)
  // that no argument binds were only needed to prepare the store: the
  // parts of merged projections, and every weight under float16 or int8
  // compute. (The bundled model: 34 MB of copies, 6.7 MB freed in float32,
  // nearly all in float16.)
  session->weightStore->seal();
  for (const frontend::TensorView &t : session->loaded.weights->tensors())
    if (t.data && !session->weightStore->binds(t.data))
      session->loaded.weights->releaseFloatCopy(t.name);
  // One set of call frames per worker thread (row-parallel decoding) to
  // begin with; concurrent callers get more on demand.
  session->threads = std::max(options.threads, 1);
  session->initialCachePositions =
      std::max<int64_t>(options.initialCachePositions, 1);
  {
    std::vector<Frames *> initial;
    for (int w = 0; w < session->threads; ++w)
      initial.push_back(&session->acquireFrames());
    for (Frames *f : initial)
      session->releaseFrames(*f);
  }
  return std::move(session);
}

Session::Frames &Session::acquireFrames() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!idleFrames.empty()) {
    Frames *f = idleFrames.back();
    idleFrames.pop_back();
    return *f;
  }
  frames.push_back(std::make_unique<Frames>(*compiledModel));
  Frames &fr = *frames.back();
  for (CallFrame *f : {fr.encode.get(), fr.decodeStep.get(), fr.forward.get(),
                       fr.encodeStates.get()})
    if (f)
      bindConstants(*f, *weightStore, loaded.desc.arch, positionalTable);
  return fr;
}

void Session::releaseFrames(Frames &f) {
  std::lock_guard<std::mutex> lock(mutex);
  idleFrames.push_back(&f);
}

void Session::addTimes(double encode, double decode, double steps,
                       int64_t rows) {
  std::lock_guard<std::mutex> lock(mutex);
  encodeTime += encode;
  decodeTime += decode;
  stepTime += steps;
  rowSteps += rows;
}

/// Call frames held for the duration of one call.
class Session::FramesLease {
public:
  explicit FramesLease(Session &s) : session(s), f(&s.acquireFrames()) {}
  FramesLease(const FramesLease &) = delete;
  FramesLease(FramesLease &&other) noexcept
      : session(other.session), f(other.f) {
    other.f = nullptr;
  }
  ~FramesLease() {
    if (f)
      session.releaseFrames(*f);
  }
  Frames &operator*() { return *f; }
  Frames *operator->() { return f; }

private:
  Session &session;
  Frames *f;
};

Session::Session(frontend::Model model) : loaded(std::move(model)) {}
Session::~Session() = default;

SpecialIds Session::specialIds() const {
  const frontend::SpecialTokens &s = loaded.desc.special;
  SpecialIds ids;
  ids.pad = static_cast<int32_t>(s.pad);
  ids.bos = static_cast<int32_t>(s.bos);
  ids.eos = static_cast<int32_t>(s.eos);
  ids.unk = static_cast<int32_t>(s.unk);
  ids.start = static_cast<int32_t>(s.decoderStart);
  ids.never.assign(s.neverGenerate.begin(), s.neverGenerate.end());
  std::sort(ids.never.begin(), ids.never.end());
  return ids;
}

int64_t Session::maxSourceTokens() const { return loaded.desc.arch.maxLen - 1; }

llvm::Error Session::checkIds(const TokenRows &rows, int64_t vocab,
                              llvm::StringRef what) const {
  for (size_t r = 0; r < rows.size(); ++r)
    for (int32_t id : rows[r])
      if (id < 0 || id >= vocab)
        return error(llvm::formatv(
            "{0} row {1}: token id {2} is outside the vocabulary (size {3})",
            what, r, id, vocab));
  return llvm::Error::success();
}

/// In place over each [vocab] row: log_softmax or softmax.
static void normalizeRows(std::vector<float> &values, int64_t vocab,
                          LogitsOutput output) {
  if (output == LogitsOutput::Logits)
    return;
  for (size_t start = 0; start < values.size(); start += vocab) {
    float *row = values.data() + start;
    float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(double(row[v]) - top);
    double logSum = std::log(sum) + top;
    for (int64_t v = 0; v < vocab; ++v) {
      double logp = double(row[v]) - logSum;
      row[v] = static_cast<float>(
          output == LogitsOutput::LogProbs ? logp : std::exp(logp));
    }
  }
}

/// The error for decoder work asked of an encoder-only model.
static llvm::Error noDecoder(const frontend::Model &model,
                             llvm::StringRef what) {
  return error(model.desc.jsonPath + ": " + what +
               " needs a decoder, but this is an encoder-only model "
               "(num_decoder_layers is 0); use 'tfmc encode'");
}

llvm::Expected<EncoderStates> Session::encode(const TokenRows &sources) {
  setKernelThreads(threads);
  FramesLease frames(*this);
  if (!frames->encodeStates)
    return error("this session was opened without encoder states");
  if (sources.empty())
    return error("no rows to run");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  SourceBatch src = padSources(sources, maxSourceTokens(), specialIds());
  EncoderStates states;
  states.batch = src.rows;
  states.length = src.length;
  states.dModel = loaded.desc.arch.dModel;
  states.values.assign(src.rows * src.length * states.dModel, 0.0f);
  CallFrame &f = *frames->encodeStates;
  f.bind("src_ids", src.ids.data(), {src.rows, src.length});
  f.bind("src_lengths", src.lengths.data(), {src.rows});
  f.bind("states", states.values.data(), {src.rows, src.length, states.dModel});
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error e = f.call())
    return std::move(e);
  addTimes(secondsSince(start), 0, 0);
  // Padding positions hold whatever the layers made of pad tokens: zero
  // them so that the output depends on nothing but the row.
  for (int64_t r = 0; r < src.rows; ++r) {
    int32_t n = src.lengths[r];
    states.lengths.push_back(n);
    std::fill(states.values.begin() + (r * src.length + n) * states.dModel,
              states.values.begin() + (r + 1) * src.length * states.dModel,
              0.0f);
  }
  return states;
}

llvm::Expected<Logits> Session::forward(const TokenRows &sources,
                                        const TokenRows &targets,
                                        LogitsOutput output) {
  if (loaded.desc.arch.encoderOnly())
    return noDecoder(loaded, "forward");
  setKernelThreads(threads);
  FramesLease frames(*this);
  if (!frames->forward)
    return error("this session was opened without teacher forcing");
  if (sources.size() != targets.size())
    return error(llvm::formatv("{0} source rows but {1} target rows",
                               sources.size(), targets.size()));
  if (sources.empty())
    return error("no rows to run");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  if (llvm::Error e = checkIds(targets, loaded.targetVocab.size(), "target"))
    return std::move(e);
  const frontend::Architecture &arch = loaded.desc.arch;
  SpecialIds special = specialIds();
  SourceBatch src = padSources(sources, maxSourceTokens(), special);
  int64_t rows = src.rows, steps = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r].empty())
      return error(llvm::formatv("target row {0} is empty (it must start "
                                 "with the decoder start token {1})",
                                 r, special.start));
    if (targets[r].front() != special.start)
      return error(llvm::formatv("target row {0} does not start with the "
                                 "decoder start token ({1})",
                                 r, special.start));
    if (static_cast<int64_t>(targets[r].size()) > arch.maxLen)
      return error(llvm::formatv(
          "target row {0} has {1} tokens, more than max_len ({2})", r,
          targets[r].size(), arch.maxLen));
    steps = std::max<int64_t>(steps, targets[r].size());
  }
  Buffer<int32_t> tgtIds(rows * steps), tgtLengths(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(tgtIds.data() + r * steps, tgtIds.data() + (r + 1) * steps,
              special.pad);
    std::copy(targets[r].begin(), targets[r].end(), tgtIds.data() + r * steps);
    tgtLengths[r] = static_cast<int32_t>(targets[r].size());
  }
  Logits logits;
  logits.batch = rows;
  logits.steps = steps;
  logits.vocab = loaded.targetVocab.size();
  logits.values.assign(rows * steps * logits.vocab, 0.0f);
  CallFrame &f = *frames->forward;
  f.bind("src_ids", src.ids.data(), {rows, src.length});
  f.bind("src_lengths", src.lengths.data(), {rows});
  f.bind("tgt_ids", tgtIds.data(), {rows, steps});
  f.bind("tgt_lengths", tgtLengths.data(), {rows});
  f.bind("logits", logits.values.data(), {rows, steps, logits.vocab});
  if (llvm::Error e = f.call())
    return std::move(e);
  normalizeRows(logits.values, logits.vocab, output);
  return logits;
}

llvm::Expected<std::unique_ptr<IncrementalDecoder>>
Session::startDecoding(const TokenRows &sources, int64_t maxSteps,
                       int64_t slotsPerRow) {
  auto start = std::chrono::steady_clock::now();
  // The decoder keeps its frames until it is destroyed.
  Frames &f = acquireFrames();
  auto decoder = startDecoding(f, sources, maxSteps, slotsPerRow);
  if (!decoder) {
    releaseFrames(f);
    return decoder.takeError();
  }
  static_cast<BatchDecoder &>(**decoder).onRelease([this, &f] {
    releaseFrames(f);
  });
  addTimes(secondsSince(start), 0, 0);
  return decoder;
}

llvm::Expected<std::unique_ptr<IncrementalDecoder>>
Session::startDecoding(Frames &workerFrames, const TokenRows &sources,
                       int64_t maxSteps, int64_t slotsPerRow) {
  if (loaded.desc.arch.encoderOnly())
    return noDecoder(loaded, "translation");
  if (!workerFrames.encode || !workerFrames.decodeStep)
    return error("this session was opened without translation");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  const frontend::Architecture &arch = loaded.desc.arch;
  BatchShape shape;
  shape.layers = arch.numDecoderLayers;
  shape.dModel = arch.dModel;
  shape.vocab = loaded.targetVocab.size();
  shape.maxSteps = maxSteps;
  shape.initialPositions = initialCachePositions;
  shape.slotsPerRow = slotsPerRow;
  auto decoder = std::make_unique<BatchDecoder>(
      *workerFrames.encode, *workerFrames.decodeStep,
      padSources(sources, maxSourceTokens(), specialIds()), shape,
      workerFrames.arena);
  if (llvm::Error e = decoder->encode())
    return std::move(e);
  return std::move(decoder);
}

template <typename Result, typename Search>
llvm::Expected<Result> Session::decode(const TokenRows &sources,
                                       const SearchOptions &options,
                                       int64_t slotsPerRow, Search search) {
  if (loaded.desc.arch.encoderOnly())
    return noDecoder(loaded, "translation");
  if (sources.empty())
    return Result();
  SearchOptions effective = options;
  // Decoder positions 0 .. maxLength-1 must have positional encodings.
  effective.maxLength =
      std::min<int64_t>(options.maxLength, loaded.desc.arch.maxLen);
  // KV caches are sized by the longest any row of this batch may run.
  int64_t batchSteps = 1;
  for (const auto &s : sources)
    batchSteps = std::max(
        batchSteps,
        rowLengthLimit(effective,
                       std::min<int64_t>(s.size(), maxSourceTokens()) + 1));
  auto rows = static_cast<int64_t>(sources.size());
  // With several threads and enough rows, contiguous slices of the batch
  // are encoded and decoded at once on their own threads, each with its own
  // call frames and one library-kernel thread (rows are independent, so the
  // result is the same as one batch). Otherwise the library kernels get all
  // the threads.
  int64_t workers = std::min<int64_t>(threads, rows / kMinRowsPerWorker);
  if (workers <= 1) {
    // The library kernels' thread count is per calling thread: every
    // caller uses the session's, so results do not depend on the caller.
    setKernelThreads(threads);
    auto decoder = startDecoding(sources, batchSteps, slotsPerRow);
    if (!decoder)
      return decoder.takeError();
    auto start = std::chrono::steady_clock::now();
    Result result = search(**decoder, effective, specialIds());
    auto &batch = static_cast<BatchDecoder &>(**decoder);
    addTimes(0, secondsSince(start), batch.stepSeconds(), batch.rowSteps());
    if (llvm::Error e = (*decoder)->takeError())
      return std::move(e);
    return result;
  }

  struct Slice {
    TokenRows sources;
    Result result;
    std::string error; // the slice's first failure
    double encodeSeconds = 0, stepSeconds = 0;
    int64_t rowSteps = 0;
  };
  std::vector<Slice> slices(workers);
  std::vector<FramesLease> leases;
  for (int64_t w = 0; w < workers; ++w)
    leases.emplace_back(*this);
  for (int64_t r = 0; r < rows; ++r)
    slices[r * workers / rows].sources.push_back(sources[r]);
  auto work = [&](int64_t w) {
    Slice &slice = slices[w];
    setKernelThreads(1);
    auto start = std::chrono::steady_clock::now();
    auto decoder =
        startDecoding(*leases[w], slice.sources, batchSteps, slotsPerRow);
    slice.encodeSeconds = secondsSince(start);
    if (!decoder) {
      slice.error = llvm::toString(decoder.takeError());
      return;
    }
    slice.result = search(**decoder, effective, specialIds());
    slice.stepSeconds = static_cast<BatchDecoder &>(**decoder).stepSeconds();
    slice.rowSteps = static_cast<BatchDecoder &>(**decoder).rowSteps();
    if (llvm::Error e = (*decoder)->takeError())
      slice.error = llvm::toString(std::move(e));
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < workers; ++w)
    pool.emplace_back(work, w);
  work(0);
  for (std::thread &t : pool)
    t.join();
  setKernelThreads(threads);
  double wall = secondsSince(start), encode = 0;
  Result result;
  double steps = 0;
  int64_t rowSteps = 0;
  for (Slice &slice : slices) {
    encode = std::max(encode, slice.encodeSeconds);
    steps += slice.stepSeconds;
    rowSteps += slice.rowSteps;
    if (!slice.error.empty())
      return error(slice.error);
    for (auto &row : slice.result)
      result.push_back(std::move(row));
  }
  addTimes(encode, wall - encode, steps, rowSteps);
  return result;
}

llvm::Expected<std::vector<std::vector<Hypothesis>>>
Session::translateBeam(const TokenRows &sources, const SearchOptions &options) {
  return decode<std::vector<std::vector<Hypothesis>>>(
      sources, options, std::max<int64_t>(options.beamSize, 1), beamSearch);
}

llvm::Expected<TokenRows> Session::translate(const TokenRows &sources,
                                             const SearchOptions &options) {
  return decode<TokenRows>(sources, options, 1, greedySearch);
}
