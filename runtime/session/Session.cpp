//===- Session.cpp - a loaded, compiled model ready to run ----------------===//
//
// Opening a session (compile, weights, positional table) and the pool of
// call frames; encode/forward are in SessionForward.cpp, translation in
// SessionDecode.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/Session.h"
#include "runtime/session/SessionFrames.h"

#include "runtime/session/Buffer.h"
#include "runtime/session/CallFrame.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace tfmc;
using namespace tfmc::runtime;

/// Binds the weights (as the store holds them) and the positional table.
static void bindConstants(CallFrame &frame, const WeightStore &weights,
                          const frontend::Architecture &arch,
                          const PositionTable *positionalTable) {
  for (size_t i = 0; i < frame.function().args.size(); ++i) {
    const ArgSpec &arg = frame.function().args[i];
    if (arg.kind == ArgSpec::Kind::Weight ||
        arg.kind == ArgSpec::Kind::WeightScale)
      frame.bind(static_cast<int>(i), weights.data(arg), arg.shape);
    else if (arg.name == "positional_table" && positionalTable)
      frame.bind(static_cast<int>(i), positionalTable->data(),
                 {arch.maxLen, arch.dModel});
  }
}

/// Bytes of the weight arguments of `fn` (0 without it): what one call
/// reads of weights.
static int64_t weightBytes(const CompiledFunction *fn) {
  if (!fn)
    return 0;
  int64_t total = 0;
  for (const ArgSpec &a : fn->args) {
    if (a.kind != ArgSpec::Kind::Weight && a.kind != ArgSpec::Kind::WeightScale)
      continue;
    int64_t n = a.element == ArgSpec::Element::F16 ||
                        a.element == ArgSpec::Element::BF16
                    ? 2
                : a.element == ArgSpec::Element::I8 ? 1
                                                    : 4;
    for (int64_t d : a.shape)
      n *= std::max<int64_t>(d, 1);
    total += n;
  }
  return total;
}

llvm::Expected<std::unique_ptr<Session>>
Session::open(llvm::StringRef modelPath, const SessionOptions &options) {
  auto model = frontend::loadModel(modelPath, options.cacheDir);
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
  compileOptions.keyValueType = options.keyValueType;
  session->quantizedOutputProjection = options.quantizeOutputProjection;
  session->halfKeysAndValues =
      halfKeysValues(options.keyValueType, session->computeType);
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
  // (Their rows are computed as calls need them: PositionTable.h.)
  if (!m.desc.arch.positionTables())
    session->positionalTable =
        std::make_unique<PositionTable>(m.desc.arch.maxLen, m.desc.arch.dModel);
  std::optional<mlir::TimingScope> bindTiming;
  if (options.timing)
    bindTiming.emplace(options.timing->nest("bind weights"));
  session->weightStore = std::make_unique<WeightStore>(m);
  for (const char *name :
       {"encode", "decode_step", "decode_greedy", "decode_beam", "forward",
        "encode_states"})
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
  const CompiledFunction *step =
      session->compiledModel->function("decode_greedy");
  session->stepWeightBytes = weightBytes(
      step ? step : session->compiledModel->function("decode_step"));
  session->stepTeams = options.stepTeams;
  session->libraryKernels = options.useLibraryKernels;
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
  if (options.prepareKernels && options.useLibraryKernels &&
      options.translation && !options.profile && !m.desc.arch.encoderOnly())
    session->prepareKernels(
        std::clamp<int64_t>(options.warmUpRows, 1, kMaxWarmUpRows));
  return std::move(session);
}

std::string Session::configuration() const {
  std::string out = frontend::stringifyComputeType(computeType).str();
  out += " weights";
  if (computeType != frontend::ComputeType::Float32 &&
      !quantizedOutputProjection)
    out += " (output projection float32)";
  if (!loaded.desc.arch.encoderOnly())
    out +=
        halfKeysAndValues ? ", float16 keys/values" : ", float32 keys/values";
  out += libraryKernels ? ", library kernels" : ", compiled loops";
  return out;
}

void Session::prepareKernels(int64_t rows) {
  SearchOptions options;
  options.maxLength = 1;
  // Best effort: where a step fails here, the first batch packs instead and
  // reports the failure itself. Greedy only: its step packs every layer beam
  // search shares, and a beam warm-up would also pack the float panels of a
  // projection that greedy reads through its int8 shortlist (133 MB for
  // 65,001 x 512; all but bfloat16 on AMX tiles), which a greedy-only
  // process then never needs. One row, and the caller's batch: some weights
  // are packed by the rows of a step (a float32 weight of exact halves runs
  // on half panels below 32 rows and on a float32 copy from 32:
  // PackedGemm.h), and packing those here keeps it out of the first
  // batch's decoding (docs/cli.md, --stats).
  std::vector<int64_t> batches = {1};
  if (rows > 1)
    batches.push_back(rows);
  for (int64_t n : batches) {
    TokenRows batch(n, std::vector<int32_t>{specialIds().unk});
    if (auto out = translate(batch, options); !out)
      llvm::consumeError(out.takeError());
  }
  encodeTime = decodeTime = stepTime = 0;
  rowSteps = 0;
  // The warm-up's steps are no evidence of how the cores are shared.
  stepWidth = StepWidth();
  narrowStepCount = widthStepCount = 0;
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
  for (CallFrame *f : {fr.encode.get(), fr.decodeStep.get(),
                       fr.decodeGreedy.get(), fr.decodeBeam.get(),
                       fr.forward.get(),
                       fr.encodeStates.get()})
    if (f)
      bindConstants(*f, *weightStore, loaded.desc.arch, positionalTable.get());
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

void Session::ensurePositions(int64_t positions) {
  if (positionalTable)
    positionalTable->ensure(positions);
}

llvm::Error Session::checkIds(const TokenRows &rows, int64_t vocab,
                              llvm::StringRef what) const {
  for (size_t r = 0; r < rows.size(); ++r)
    for (int32_t id : rows[r])
      if (id < 0 || id >= vocab)
        return sessionError(llvm::formatv(
            "{0} row {1}: token id {2} is outside the vocabulary (size {3})",
            what, r, id, vocab));
  return llvm::Error::success();
}
