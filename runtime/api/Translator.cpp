//===- Translator.cpp - tfmc's C++ API ------------------------------------===//
#include "runtime/api/TranslatorImpl.h"

#include "frontends/model/FileSupport.h"
#include "frontends/model/Model.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/session/LineReader.h"
#include "runtime/tokenizers/SentenceSplitter.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

using namespace tfmc;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// An llvm::Error as one line.
std::string message(llvm::Error e) {
  std::string text = llvm::toString(std::move(e));
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

template <typename T> Result<T> fromExpected(llvm::Expected<T> value) {
  if (!value)
    return Result<T>::failure(message(value.takeError()));
  return Result<T>(std::move(*value));
}

/// Runs `fn` in a timer named `name` under `parent`, if any.
template <typename Fn>
auto timed(mlir::TimingScope *parent, llvm::StringRef name, Fn fn) {
  if (!parent)
    return fn(static_cast<mlir::TimingScope *>(nullptr));
  mlir::TimingScope scope = parent->nest(name);
  return fn(&scope);
}

} // namespace

const Hypothesis &Translation::best() const {
  static const Hypothesis none;
  return hypotheses.empty() ? none : hypotheses.front();
}

runtime::TranslateOptions
api::toRuntimeOptions(const TranslateOptions &options) {
  runtime::TranslateOptions r;
  r.search.beamSize = options.beamSize;
  r.search.lengthPenalty = options.lengthPenalty;
  r.search.nBest = options.nBest;
  r.search.maxLength = options.maxLength;
  r.search.minLength = options.minLength;
  r.search.maxLengthFactor = options.maxLengthFactor;
  r.search.maxLengthOffset = options.maxLengthOffset;
  r.search.noRepeatNgramSize = options.noRepeatNgramSize;
  r.search.repetitionPenalty = options.repetitionPenalty;
  r.batchSize = options.batchSize;
  r.batchTokens = options.batchTokens;
  r.readAhead = options.readAhead;
  r.sortByLength = options.sortByLength;
  r.replaceUnknown = options.replaceUnknown;
  r.nBest = std::max<int64_t>(options.nBest, 1);
  return r;
}

bool api::splitsSentences(const TranslateOptions &options,
                          const frontend::ModelDescription &model,
                          bool scores) {
  if (options.splitSentences == "on")
    return true;
  if (options.splitSentences == "off")
    return false;
  return model.sentenceLevel && options.nBest <= 1 && !scores;
}

/// Adds `text` to a translation's warning (after any earlier one).
static void addWarning(Translation &t, const std::string &text) {
  t.warning += (t.warning.empty() ? "" : "; ") + text;
}

/// The warnings the search leaves a sentence that was decoded: no
/// hypothesis (kNoHypothesis), or NaN scores (kScoreNotANumber).
static void addSearchWarnings(Translation &t,
                              const std::vector<runtime::Hypothesis> &nbest) {
  if (nbest.empty())
    addWarning(t, runtime::kNoHypothesis.str());
  if (runtime::anyScoreNaN(nbest))
    addWarning(t, runtime::kScoreNotANumber.str());
}

size_t api::splitSentenceCount(const std::vector<std::string> &texts) {
  size_t count = 0;
  for (const std::string &t : texts) {
    llvm::StringRef text = llvm::StringRef(t).rtrim("\r\n");
    if (!text.trim().empty())
      count += runtime::splitSentences(text).size();
  }
  return count;
}

/// Checks what the CLI checks, as one message.
static llvm::Error checkOptions(const TranslateOptions &o) {
  if (o.batchSize < 1)
    return error("batch size must be at least 1");
  if (o.maxLength < 1)
    return error("max length must be at least 1");
  if (o.minLength < 0)
    return error("min length must not be negative");
  if (o.minLength > o.maxLength)
    return error("min length must not exceed max length (" +
                 std::to_string(o.maxLength) + ")");
  if (o.beamSize < 1 || o.beamSize > kMaxBeamSize)
    return error("beam size must be between 1 and " +
                 std::to_string(kMaxBeamSize));
  if (o.nBest < 1 || o.nBest > o.beamSize)
    return error("n-best must be between 1 and the beam size");
  if (!(o.lengthPenalty >= 0) || !std::isfinite(o.lengthPenalty))
    return error("length penalty must be a finite number, not negative");
  if (!(o.maxLengthFactor >= 0) || !std::isfinite(o.maxLengthFactor))
    return error("the length factor must be a finite number, not negative");
  if (o.maxLengthOffset < 0)
    return error("the length offset must not be negative");
  if (o.noRepeatNgramSize < 0)
    return error("no-repeat n-gram size must not be negative");
  if (!runtime::isUsablePenalty(o.repetitionPenalty))
    return error("repetition penalty must be a positive number that float32 "
                 "holds (normal, finite)");
  if (o.batchTokens < 0 || o.readAhead < 0)
    return error("batch tokens and read-ahead must not be negative");
  if (o.splitSentences != "on" && o.splitSentences != "off" &&
      o.splitSentences != "auto")
    return error("split sentences: expected \"on\", \"off\" or \"auto\", "
                 "got \"" +
                 o.splitSentences + "\"");
  if (o.splitSentences == "on" && (o.nBest > 1 || o.scores))
    return error("splitting sentences gives one translation a line: n-best "
                 "lists and scores need split sentences \"off\"");
  return llvm::Error::success();
}

/// checkOptions, and that the minimum length fits the model's positions.
static llvm::Error checkOptionsFor(const TranslateOptions &o,
                                   const frontend::ModelDescription &model) {
  if (llvm::Error e = checkOptions(o))
    return e;
  // A row generates at most max_len tokens (decoder positions), whatever
  // the maximum length asks.
  if (o.minLength > model.arch.maxLen)
    return error("min length must not exceed the model's max_len (" +
                 std::to_string(model.arch.maxLen) + ")");
  return llvm::Error::success();
}

/// That the model has a decoder, and checkOptionsFor: what every
/// translating entry point checks first.
static llvm::Error checkTranslation(const TranslateOptions &o,
                                    const frontend::ModelDescription &model) {
  if (model.arch.encoderOnly())
    return error(frontend::needsDecoderMessage(model.jsonPath, "translation"));
  return checkOptionsFor(o, model);
}

/// The session's options for `options`, or why they are not valid (every
/// check that needs no model file).
static llvm::Expected<runtime::SessionOptions>
sessionOptionsFor(const LoadOptions &options) {
  runtime::SessionOptions sessionOptions;
  if (options.kernels == "loops")
    sessionOptions.useLibraryKernels = false;
  else if (options.kernels == "library") {
    if (!runtime::haveLibraryKernels())
      return error("kernels 'library': this tfmc was built without oneDNN");
    sessionOptions.useLibraryKernels = true;
  } else if (!options.kernels.empty())
    return error("kernels: expected 'library' or 'loops', got '" +
                 options.kernels + "'");
  if (options.threads < 1 || options.threads > kMaxThreads)
    return error("threads must be between 1 and " +
                 std::to_string(kMaxThreads));
  sessionOptions.threads = options.threads;
  using StepTeams = runtime::SessionOptions::StepTeams;
  if (options.stepTeams == "always")
    sessionOptions.stepTeams = StepTeams::Always;
  else if (options.stepTeams == "never")
    sessionOptions.stepTeams = StepTeams::Never;
  else if (!options.stepTeams.empty() && options.stepTeams != "auto")
    return error("step teams: expected 'auto', 'always' or 'never', got '" +
                 options.stepTeams + "'");
  if (!options.computeType.empty()) {
    sessionOptions.computeType =
        frontend::parseComputeType(options.computeType);
    if (!sessionOptions.computeType)
      return error("compute type: expected 'float32', 'float16', 'bfloat16' "
                   "or 'int8', got '" +
                   options.computeType + "'");
  }
  sessionOptions.quantizeOutputProjection = options.quantizeOutputProjection;
  auto kv = runtime::parseKeyValueType(options.kvType);
  if (!kv)
    return error("kv type: expected 'auto', 'float32' or 'float16', got '" +
                 options.kvType + "'");
  sessionOptions.keyValueType = *kv;
  sessionOptions.teacherForcing = false;
  sessionOptions.encoderStates = options.encoderStates;
  sessionOptions.dumpDir = options.dumpDir;
  sessionOptions.profile = options.profile;
  if (options.warmUpRows < 1 ||
      options.warmUpRows > runtime::Session::kMaxWarmUpRows)
    return error("warm-up rows must be between 1 and " +
                 std::to_string(runtime::Session::kMaxWarmUpRows));
  sessionOptions.warmUpRows = options.warmUpRows;
  if (options.useCache)
    sessionOptions.cacheDir = options.cacheDir.empty()
                                  ? runtime::defaultCacheDirectory()
                                  : options.cacheDir;
  return sessionOptions;
}

std::string tfmc::loadOptionsError(const LoadOptions &options) {
  auto checked = sessionOptionsFor(options);
  return checked ? std::string() : message(checked.takeError());
}

llvm::Expected<std::unique_ptr<Translator>>
api::loadTranslator(const std::string &modelPath, const LoadOptions &options,
                    mlir::TimingScope *timing) {
  auto impl = std::make_unique<Translator::Impl>();
  auto checked = sessionOptionsFor(options);
  if (!checked)
    return checked.takeError();
  runtime::SessionOptions sessionOptions = std::move(*checked);
  auto loaded = timed(timing, "load model", [&](mlir::TimingScope *) {
    return frontend::loadModel(modelPath, sessionOptions.cacheDir);
  });
  if (!loaded)
    return loaded.takeError();
  if (options.requireDecoder && loaded->desc.arch.encoderOnly())
    return error(frontend::needsDecoderMessage(modelPath, "translation"));
  // The tokenizers (for text use; token ids work without them) load on a
  // thread of their own while the model compiles: from the compiled-model
  // cache, both take ~15 ms of a one-sentence run of the bundled model. A
  // bad SentencePiece model is still the error reported, before anything
  // the compile says; with --dump-ir they load first, so that a run that
  // fails on them writes no IR. The thread works on a copy of the
  // description and vocabularies: the model itself moves into the session.
  std::thread tokenizerThread;
  if (!loaded->desc.arch.encoderOnly()) {
    frontend::Model described;
    described.desc = loaded->desc;
    described.sourceVocab = loaded->sourceVocab;
    described.targetVocab = loaded->targetVocab;
    tokenizerThread = std::thread(
        [&out = *impl, timing](frontend::Model m) {
          timed(timing, "load tokenizers", [&](mlir::TimingScope *) {
            auto tokenizers = runtime::createTextTokenizers(m);
            if (tokenizers)
              out.tokenizers = std::move(*tokenizers);
            else
              out.tokenizerError = message(tokenizers.takeError());
          });
        },
        std::move(described));
    if (!options.dumpDir.empty())
      tokenizerThread.join();
  }
  if (options.requireTextTokenizers && !tokenizerThread.joinable() &&
      !impl->tokenizers && !impl->tokenizerError.empty())
    return error(impl->tokenizerError);
  auto session = timed(timing, "compile", [&](mlir::TimingScope *scope) {
    sessionOptions.timing = scope;
    return runtime::Session::open(std::move(*loaded), sessionOptions);
  });
  if (tokenizerThread.joinable())
    tokenizerThread.join();
  if (options.requireTextTokenizers && !impl->tokenizers) {
    if (!session)
      llvm::consumeError(session.takeError());
    return error(impl->tokenizerError);
  }
  if (!session)
    return session.takeError();
  impl->session = std::move(*session);
  if (options.profile) {
    auto profiler =
        runtime::Profiler::start(impl->session->compiled(), options.threads,
                                 impl->session->configuration());
    if (!profiler)
      return profiler.takeError();
    impl->profiler = std::move(*profiler);
  }
  return std::make_unique<Translator>(std::move(impl));
}

Result<std::unique_ptr<Translator>>
Translator::load(const std::string &modelPath, const LoadOptions &options) {
  return fromExpected(api::loadTranslator(modelPath, options, nullptr));
}

Translator::Translator(std::unique_ptr<Impl> impl) : state(std::move(impl)) {}
Translator::~Translator() = default;

int64_t Translator::sourceVocabularySize() const {
  return state->session->model().sourceVocab.size();
}
int64_t Translator::targetVocabularySize() const {
  return state->session->model().targetVocab.size();
}
bool Translator::encoderOnly() const {
  return state->session->model().desc.arch.encoderOnly();
}
std::string Translator::configuration() const {
  return state->session->configuration();
}
std::string Translator::optionsError(const TranslateOptions &options) const {
  llvm::Error e = checkOptionsFor(options, state->session->model().desc);
  return e ? message(std::move(e)) : std::string();
}

TranslateOptions Translator::defaultOptions() const {
  TranslateOptions o;
  const auto &decoding = state->session->model().desc.decoding;
  if (decoding.beamSize)
    o.beamSize = *decoding.beamSize;
  if (decoding.lengthPenalty)
    o.lengthPenalty = *decoding.lengthPenalty;
  return o;
}

Result<std::vector<Translation>>
Translator::translate(const std::vector<std::string> &sentences) {
  return translate(sentences, defaultOptions());
}

Result<std::vector<Translation>>
Translator::translateIds(const std::vector<std::vector<int32_t>> &sources) {
  return translateIds(sources, defaultOptions());
}

Result<Profile> Translator::profile() const {
  if (!state->profiler)
    return Result<Profile>::failure(
        "this translator was not loaded for profiling (LoadOptions::profile)");
  return state->profiler->snapshot();
}

void Translator::resetProfile() {
  if (state->profiler)
    state->profiler->reset();
}

/// Decodes `sources` (one entry per sentence; nullopt = not translated) in
/// length-sorted batches; returns the n-best lists in input order.
static llvm::Expected<std::vector<std::vector<runtime::Hypothesis>>>
decodeAll(runtime::Session &session,
          const std::vector<std::optional<std::vector<int32_t>>> &sources,
          const TranslateOptions &options) {
  runtime::TranslateOptions r = api::toRuntimeOptions(options);
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i])
      order.push_back(i);
  if (r.sortByLength)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return sources[a]->size() < sources[b]->size();
    });
  std::vector<std::vector<runtime::Hypothesis>> out(sources.size());
  bool beam = options.beamSize > 1 || options.nBest > 1 || options.scores;
  for (size_t first = 0; first < order.size(); first += r.batchSize) {
    size_t end = std::min(order.size(), first + size_t(r.batchSize));
    runtime::TokenRows batch;
    for (size_t k = first; k < end; ++k)
      batch.push_back(*sources[order[k]]);
    if (beam) {
      auto result = session.translateBeam(batch, r.search);
      if (!result)
        return result.takeError();
      for (size_t k = first; k < end; ++k)
        out[order[k]] = std::move((*result)[k - first]);
    } else {
      auto result = session.translateGreedy(batch, r.search);
      if (!result)
        return result.takeError();
      for (size_t k = first; k < end; ++k)
        out[order[k]] = {std::move((*result)[k - first])};
    }
  }
  return out;
}

/// The warning for a source longer than the model's max_len allows.
static std::string truncation(const runtime::Session &session, size_t ids) {
  int64_t limit = session.maxSourceTokens();
  if (static_cast<int64_t>(ids) <= limit)
    return "";
  return std::to_string(ids) + " tokens, truncated to " +
         std::to_string(limit) + " (max_len " + std::to_string(limit + 1) +
         " with eos)";
}

/// Translator::translate with sentence splitting: every sentence of every
/// line is one source (batched with all others); each line gets one
/// hypothesis, its sentences' translations joined (ids concatenated, the
/// mean of their scores).
static Result<std::vector<Translation>>
translateSplit(Translator::Impl &state,
               const std::vector<std::string> &sentences,
               const TranslateOptions &options) {
  using R = Result<std::vector<Translation>>;
  const runtime::TextTokenizers &tok = *state.tokenizers;
  std::vector<Translation> out(sentences.size());
  // Every sentence of every line is one source; lines remember theirs.
  std::vector<std::optional<std::vector<int32_t>>> sources;
  std::vector<std::vector<std::string>> unknown;
  std::vector<std::vector<runtime::SplitSentence>> parts(sentences.size());
  std::vector<size_t> firstSource(sentences.size() + 1, 0);
  for (size_t i = 0; i < sentences.size(); ++i) {
    firstSource[i] = sources.size();
    llvm::StringRef text = llvm::StringRef(sentences[i]).rtrim("\r\n");
    if (text.trim().empty())
      continue;
    runtime::profile::Scope splitting(runtime::profile::Region::Tokenize);
    std::vector<runtime::SplitSentence> split =
        runtime::splitSentences(text);
    std::vector<runtime::Encoding> encodings;
    for (const runtime::SplitSentence &s : split) {
      auto encoded = tok.source->tokenize(s.text);
      if (!encoded) {
        out[i].error = message(encoded.takeError());
        break;
      }
      std::string warning = truncation(*state.session, encoded->ids.size());
      if (!warning.empty())
        out[i].warning = "a sentence of " + warning;
      encodings.push_back(std::move(*encoded));
    }
    if (!out[i].error.empty())
      continue;
    for (runtime::Encoding &e : encodings) {
      sources.push_back(std::move(e.ids));
      unknown.push_back(std::move(e.unknownSpans));
    }
    parts[i] = std::move(split);
  }
  firstSource[sentences.size()] = sources.size();
  auto decoded = decodeAll(*state.session, sources, options);
  if (!decoded)
    return R::failure(message(decoded.takeError()));
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (parts[i].empty())
      continue;
    std::vector<std::string> texts;
    Hypothesis joined;
    double scores = 0;
    int64_t scored = 0;
    bool notANumber = false;
    for (size_t k = firstSource[i]; k < firstSource[i + 1]; ++k) {
      std::vector<runtime::Hypothesis> &nbest = (*decoded)[k];
      if (nbest.empty())
        addWarning(
            out[i],
            (parts[i].size() > 1
                 ? "sentence " + std::to_string(k - firstSource[i] + 1) + ": "
                 : std::string()) +
                runtime::kNoHypothesis.str());
      else
        ++scored;
      notANumber |= runtime::anyScoreNaN(nbest);
      runtime::Hypothesis best =
          nbest.empty() ? runtime::Hypothesis{} : std::move(nbest.front());
      runtime::profile::Scope scope(runtime::profile::Region::Detokenize);
      texts.push_back(tok.target->decode(
          best.ids, options.replaceUnknown
                        ? llvm::ArrayRef<std::string>(unknown[k])
                        : llvm::ArrayRef<std::string>()));
      joined.ids.insert(joined.ids.end(), best.ids.begin(), best.ids.end());
      scores += best.score;
    }
    if (notANumber)
      addWarning(out[i], runtime::kScoreNotANumber.str());
    joined.text = runtime::joinTranslations(texts, parts[i]);
    // The mean over the sentences that have a translation.
    joined.score = scored ? scores / double(scored) : 0.0;
    out[i].hypotheses.push_back(std::move(joined));
  }
  return R(std::move(out));
}

Result<std::vector<Translation>>
Translator::translate(const std::vector<std::string> &sentences,
                      const TranslateOptions &options) {
  using R = Result<std::vector<Translation>>;
  runtime::profile::Scope whole(runtime::profile::Region::Translate);
  if (llvm::Error e = checkTranslation(options, state->session->model().desc))
    return R::failure(message(std::move(e)));
  if (!state->tokenizers)
    return R::failure(state->tokenizerError);
  const runtime::TextTokenizers &tok = *state->tokenizers;
  if (api::splitsSentences(options, state->session->model().desc,
                           options.scores))
    return translateSplit(*state, sentences, options);
  std::vector<Translation> out(sentences.size());
  std::vector<std::optional<std::vector<int32_t>>> sources(sentences.size());
  std::vector<std::vector<std::string>> unknown(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    llvm::StringRef text = llvm::StringRef(sentences[i]).rtrim("\r\n");
    if (text.trim().empty())
      continue;
    auto encoded = [&] {
      runtime::profile::Scope scope(runtime::profile::Region::Tokenize);
      return tok.source->tokenize(text);
    }();
    if (!encoded) {
      out[i].error = message(encoded.takeError());
      continue;
    }
    out[i].warning = truncation(*state->session, encoded->ids.size());
    sources[i] = std::move(encoded->ids);
    unknown[i] = std::move(encoded->unknownSpans);
  }
  auto decoded = decodeAll(*state->session, sources, options);
  if (!decoded)
    return R::failure(message(decoded.takeError()));
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (sources[i])
      addSearchWarnings(out[i], (*decoded)[i]);
    for (runtime::Hypothesis &h : (*decoded)[i]) {
      if (static_cast<int64_t>(out[i].hypotheses.size()) >= options.nBest)
        break;
      Hypothesis hyp;
      runtime::profile::Scope scope(runtime::profile::Region::Detokenize);
      hyp.text = tok.target->decode(
          h.ids, options.replaceUnknown ? llvm::ArrayRef<std::string>(unknown[i])
                                        : llvm::ArrayRef<std::string>());
      hyp.ids = std::move(h.ids);
      hyp.score = h.score;
      out[i].hypotheses.push_back(std::move(hyp));
    }
  }
  return R(std::move(out));
}

Result<std::vector<Translation>>
Translator::translateIds(const std::vector<std::vector<int32_t>> &sources,
                         const TranslateOptions &options) {
  using R = Result<std::vector<Translation>>;
  runtime::profile::Scope whole(runtime::profile::Region::Translate);
  if (llvm::Error e = checkTranslation(options, state->session->model().desc))
    return R::failure(message(std::move(e)));
  std::vector<Translation> out(sources.size());
  std::vector<std::optional<std::vector<int32_t>>> rows(sources.size());
  int64_t vocab = sourceVocabularySize();
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty())
      continue;
    auto bad = std::find_if(sources[i].begin(), sources[i].end(),
                            [&](int32_t id) { return id < 0 || id >= vocab; });
    if (bad != sources[i].end()) {
      out[i].error = "token id " + std::to_string(*bad) +
                     " is outside the source vocabulary (size " +
                     std::to_string(vocab) + ")";
      continue;
    }
    out[i].warning = truncation(*state->session, sources[i].size());
    rows[i] = sources[i];
  }
  auto decoded = decodeAll(*state->session, rows, options);
  if (!decoded)
    return R::failure(message(decoded.takeError()));
  for (size_t i = 0; i < sources.size(); ++i) {
    if (rows[i])
      addSearchWarnings(out[i], (*decoded)[i]);
    for (runtime::Hypothesis &h : (*decoded)[i]) {
      if (static_cast<int64_t>(out[i].hypotheses.size()) >= options.nBest)
        break;
      out[i].hypotheses.push_back({"", std::move(h.ids), h.score});
    }
  }
  return R(std::move(out));
}

Result<EncoderStates>
Translator::encode(const std::vector<std::vector<int32_t>> &sources) {
  auto states = state->session->encode(sources);
  if (!states)
    return Result<EncoderStates>::failure(message(states.takeError()));
  EncoderStates out;
  out.batch = states->batch;
  out.length = states->length;
  out.dModel = states->dModel;
  out.lengths = std::move(states->lengths);
  out.values = std::move(states->values);
  return Result<EncoderStates>(std::move(out));
}

Result<StreamStats> Translator::translateStream(int in, int out,
                                                int diagnostics,
                                                const TranslateOptions &options,
                                                const StreamOptions &stream) {
  using R = Result<StreamStats>;
  if (llvm::Error e = checkTranslation(options, state->session->model().desc))
    return R::failure(message(std::move(e)));
  if (!stream.ids && !state->tokenizers)
    return R::failure(state->tokenizerError);
  runtime::TranslateOptions r = api::toRuntimeOptions(options);
  // The lines' format is StreamOptions::scores' (TranslateOptions::scores
  // asks translate() for scores; a stream writes them where it says).
  r.scores = stream.scores || options.nBest > 1;
  if (options.splitSentences == "on" && (r.scores || stream.ids))
    return R::failure("splitting sentences gives one translation of text a "
                      "line: it cannot go with scores, n-best lists or "
                      "token ids");
  r.splitSentences = !stream.ids && api::splitsSentences(
                                        options, state->session->model().desc,
                                        r.scores);
  r.progress = stream.progress;
  runtime::LineReader reader(in);
  r.totalLines = reader.regularFileLines();
  llvm::raw_fd_ostream outStream(out, /*shouldClose=*/false);
  llvm::raw_fd_ostream diagStream(diagnostics, /*shouldClose=*/false);
  diagStream.SetUnbuffered();
  auto stats = runtime::translateStream(
      *state->session, stream.ids ? nullptr : &*state->tokenizers, reader,
      outStream, diagStream, r);
  // A stream that failed to write is an error of the call (left set, its
  // destructor would end the process), the output's before the
  // diagnostics'.
  std::string written;
  auto settle = [&](llvm::raw_fd_ostream &os, const char *name, int fd) {
    os.flush();
    std::error_code ec = frontend::takeWriteError(os);
    if (ec && written.empty())
      written = std::string(name) + ": cannot write to file descriptor " +
                std::to_string(fd) + ": " + ec.message();
  };
  settle(outStream, "output", out);
  settle(diagStream, "diagnostics", diagnostics);
  if (!stats)
    return R::failure(message(stats.takeError()));
  if (!written.empty())
    return R::failure(written);
  StreamStats s;
  s.lines = stats->lines;
  s.badLines = stats->badLines;
  s.unreadableLines = stats->warnedLines;
  s.truncatedLines = stats->truncatedLines;
  s.generatedTokens = stats->generatedTokens;
  return R(s);
}
