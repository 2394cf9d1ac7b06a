//===- Translate.cpp - tfmc translate: text or ids, one line each ---------===//
//
// tfmc translate MODEL.json [-i FILE] [-o FILE] [--ids] [--batch-size N]
//                [--beam-size N] [--length-penalty A] [--n-best N] ...
// tfmc profile MODEL.json [translate's options] [--profile-format md|json|csv]
//              [--profile-output FILE] [--profile-svg FILE]
//
// `profile` is `translate` on the profiled variant of the model, followed
// by the profile (ProfileOutput, Profile.cpp).
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"
#include "tools/tfmc/IntegerOption.h"
#include "tools/tfmc/OutputPaths.h"

#include "runtime/api/TranslatorImpl.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/kernels/MachineProbe.h"
#include "runtime/session/Translator.h"

#include "mlir/Support/Timing.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class TranslateCommand : public Command {
public:
  TranslateCommand(cl::OptionCategory &cat, bool profiling)
      : sub(profiling ? "profile" : "translate",
            profiling ? "Translate as 'translate' does, then print where "
                        "the time went: every compiled op's time, FLOP, "
                        "bytes and fraction of this machine's limits"
                      : "Translate sentences, one per line"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("FILE"), cl::init(""), cl::sub(sub),
               cl::cat(cat)),
        dumpIR("dump-ir",
               cl::desc(
                   "Write the IR stages 01-04 of what this command compiles to "
                   "DIR as NN-stage.mlir"),
               cl::value_desc("DIR"), cl::init(""), cl::sub(sub), cl::cat(cat)),
        input("i", cl::desc("Input file (default or '-': stdin)"),
              cl::value_desc("FILE"), cl::init(""), cl::sub(sub), cl::cat(cat)),
        ids("ids", cl::desc("Lines are space-separated token ids"),
            cl::sub(sub), cl::cat(cat)),
        replaceUnk("replace-unk",
                   cl::desc("Write the k-th <unk> of a translation as the "
                            "source text of the k-th unknown source token "
                            "(text mode)"),
                   cl::sub(sub), cl::cat(cat)),
        batchSize("batch-size", cl::desc("Sentences per batch"), cl::init(32),
                  cl::sub(sub), cl::cat(cat)),
        maxLength("max-length",
                  cl::desc("Most tokens generated per sentence, eos "
                           "included"),
                  cl::init(256), cl::sub(sub), cl::cat(cat)),
        minLength("min-length", cl::desc("Fewest tokens before eos is allowed"),
                  cl::init(0), cl::sub(sub), cl::cat(cat)),
        maxLengthFactor(
            "max-length-factor",
            cl::desc("A sentence generates at most ceil(A x source tokens, "
                     "eos included) + B tokens (and at most --max-length); "
                     "0 turns this limit off"),
            cl::value_desc("A"), cl::init(3.0), cl::sub(sub), cl::cat(cat)),
        maxLengthOffset(
            "max-length-offset", cl::desc("B of --max-length-factor"),
            cl::value_desc("B"), cl::init(10), cl::sub(sub), cl::cat(cat)),
        noRepeatNgramSize(
            "no-repeat-ngram-size",
            cl::desc("Forbid a token that would repeat an n-gram of this "
                     "size already in the translation (0: off)"),
            cl::value_desc("N"), cl::init(0), cl::sub(sub), cl::cat(cat)),
        repetitionPenalty(
            "repetition-penalty",
            cl::desc("Divide positive logits of already generated tokens by "
                     "P, multiply negative ones (1: off)"),
            cl::value_desc("P"), cl::init(1.0), cl::sub(sub), cl::cat(cat)),
        beamSize("beam-size",
                 cl::desc("Beam width (1 = greedy); default: the model "
                          "file's decoding.beam_size, else 1"),
                 cl::init(1), cl::sub(sub), cl::cat(cat)),
        lengthPenalty(
            "length-penalty",
            cl::desc("Beam scores are divided by length^A; default: the "
                     "model file's decoding.length_penalty, else 1"),
            cl::value_desc("A"), cl::init(1.0), cl::sub(sub), cl::cat(cat)),
        nBest("n-best",
              cl::desc("Write the N best hypotheses per input as "
                       "'i ||| translation ||| score'"),
              cl::value_desc("N"), cl::init(0), cl::sub(sub), cl::cat(cat)),
        scores("scores", cl::desc("Write 'i ||| translation ||| score' lines"),
               cl::sub(sub), cl::cat(cat)),
        stats("stats",
              cl::desc("Print load/JIT, encoder and decoder times and "
                       "tokens/s to stderr"),
              cl::sub(sub), cl::cat(cat)),
        threads(sub, cat, "Threads for compiled code"),
        stepTeams("step-teams",
                  cl::desc("When a batch's threads run each step together, "
                           "sharing each layer's weight reads: auto (large "
                           "models, 8-15 rows a thread), always, never"),
                  cl::value_desc("auto|always|never"), cl::init("auto"),
                  cl::sub(sub), cl::cat(cat)),
        batchTokens("batch-tokens",
                    cl::desc("At most this many padded source tokens per "
                             "batch (rows x longest row; 0: no bound)"),
                    cl::value_desc("N"), cl::init(0), cl::sub(sub),
                    cl::cat(cat)),
        readAhead("read-ahead",
                  cl::desc("Lines read ahead and sorted by length into "
                           "batches (default 16 x --batch-size); reading "
                           "never waits for input that is not there yet"),
                  cl::value_desc("N"), cl::init(0), cl::sub(sub), cl::cat(cat)),
        sortBatches("sort-batches",
                    cl::desc("Batch the read-ahead window shortest first "
                             "(=false: in input order)"),
                    cl::init(true), cl::sub(sub), cl::cat(cat)),
        shard("shard",
              cl::desc("Translate only shard I of N (0-based): the I-th of N "
                       "contiguous blocks of the input file's lines; the "
                       "shards' outputs concatenated in order are the whole "
                       "translation (Slurm arrays, Kubernetes indexed Jobs)"),
              cl::value_desc("I/N"), cl::init(""), cl::sub(sub), cl::cat(cat)),
        strict("strict",
               cl::desc("Exit with status 1 (at the end) when a line could "
                        "not be read (invalid UTF-8) or was truncated"),
               cl::sub(sub), cl::cat(cat)),
        progress("progress",
                 cl::desc("An updating progress line and a final summary "
                          "on stderr (default when stderr is a terminal)"),
                 cl::sub(sub), cl::cat(cat)),
        splitSentences(
            "split-sentences",
            cl::desc("Translate each sentence of a line separately and join "
                     "the translations: on, off, or auto (on when the model "
                     "file says \"sentence_level\": true)"),
            cl::value_desc("on|off|auto"), cl::init("auto"), cl::sub(sub),
            cl::cat(cat)),
        kernels(sub, cat), computeType(sub, cat), kvType(sub, cat),
        cache(sub, cat), timing(sub, cat) {
    if (profiling)
      profileOutput.emplace(sub, cat);
  }

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    if (auto type = computeType.type(); !type)
      return fail(type.takeError());
    if (auto kv = kvType.type(); !kv)
      return fail(kv.takeError());
    if (batchSize < 1)
      return fail("--batch-size must be at least 1");
    if (maxLength < 1)
      return fail("--max-length must be at least 1");
    if (minLength < 0)
      return fail("--min-length must not be negative");
    if (minLength > maxLength)
      return fail("--min-length must not exceed --max-length (" +
                  std::to_string(maxLength) + ")");
    if (!(maxLengthFactor >= 0.0) || !std::isfinite(maxLengthFactor))
      return fail("--max-length-factor must be a non-negative number");
    if (maxLengthOffset < 0)
      return fail("--max-length-offset must not be negative");
    if (noRepeatNgramSize < 0)
      return fail("--no-repeat-ngram-size must not be negative");
    if (!runtime::isUsablePenalty(repetitionPenalty))
      return fail("--repetition-penalty must be a positive number that "
                  "float32 holds (normal, finite)");
    if (beamSize < 1 || beamSize > kMaxBeamSize)
      return fail("--beam-size must be between 1 and " +
                  std::to_string(kMaxBeamSize));
    // Without --beam-size, the model file's default beam (checked against
    // --n-best once the model is loaded).
    if ((nBest.getNumOccurrences() && nBest < 1) || nBest < 0 ||
        (beamSize.getNumOccurrences() && nBest > beamSize) ||
        nBest > kMaxBeamSize)
      return fail("--n-best must be between 1 and --beam-size");
    if (!(lengthPenalty >= 0.0) || !std::isfinite(lengthPenalty))
      return fail("--length-penalty must be a finite number, not negative");
    if (llvm::Expected<int> count = threads.count(); !count)
      return fail(count.takeError());
    if (batchTokens < 0)
      return fail("--batch-tokens must not be negative");
    if (readAhead < 0)
      return fail("--read-ahead must not be negative");
    if (stepTeams != "auto" && stepTeams != "always" && stepTeams != "never")
      return fail("--step-teams: expected 'auto', 'always' or 'never', got '" +
                  stepTeams + "'");
    if (splitSentences != "on" && splitSentences != "off" &&
        splitSentences != "auto")
      return fail("--split-sentences: expected on, off or auto, got '" +
                  splitSentences + "'");
    if (splitSentences == "on" && (ids || scores || nBest > 0))
      return fail("--split-sentences on gives one translation of text a "
                  "line: it cannot go with --ids, --scores or --n-best");
    if (ids && replaceUnk)
      return fail("--replace-unk copies source text: it cannot go with --ids");
    int inputFd = 0;
    if (!input.empty() && input != "-") {
      inputFd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
      if (inputFd < 0)
        return fail(input + ": cannot open file: " + std::strerror(errno));
      struct stat st;
      if (::fstat(inputFd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(inputFd);
        return fail(input + ": cannot open file: is a directory");
      }
    }
    // Opening an output truncates it: none may be a file this run reads
    // (the input, the model's files) or another output.
    FileRoles files;
    files.noteReadFd(inputFd, "the input file");
    files.noteModel(model);
    if (llvm::Error e = files.checkDumpDirectory(dumpIR))
      return fail(std::move(e));
    llvm::Error clash =
        output.empty() || output == "-"
            ? files.checkOutputFd(1, "standard output (the translations)")
            : files.checkOutput(output, "the translations (-o)");
    if (!clash && profileOutput)
      clash = profileOutput->checkPaths(files);
    if (clash) {
      if (inputFd > 0)
        ::close(inputFd);
      return fail(std::move(clash));
    }
    auto closeInput = llvm::make_scope_exit([&] {
      if (inputFd > 0)
        ::close(inputFd);
    });
    runtime::LineReader reader(inputFd);
    // --shard I/N: lines [floor(I*L/N), floor((I+1)*L/N)) of an input file
    // of L lines.
    int64_t shardIndex = 0, shardCount = 1;
    std::optional<int64_t> inputLines = reader.regularFileLines();
    if (!shard.empty()) {
      auto [i, n] = llvm::StringRef(shard).split('/');
      if (i.getAsInteger(10, shardIndex) || n.getAsInteger(10, shardCount) ||
          shardCount < 1 || shardIndex < 0 || shardIndex >= shardCount)
        return fail("--shard: expected I/N with 0 <= I < N, got '" + shard +
                    "'");
      if (!inputLines)
        return fail("--shard needs the input as a regular file (-i FILE): "
                    "its lines are counted to cut the shards");
    }
    // Loading goes through the public API (include/tfmc/Translator.h), with
    // the options every user of it has.
    tfmc::LoadOptions load;
    load.kernels = *library ? "library" : "loops";
    load.threads = threads.given();
    load.stepTeams = stepTeams;
    load.computeType = computeType.name();
    load.quantizeOutputProjection = computeType.outputProjection();
    load.kvType = kvType.name();
    load.dumpDir = dumpIR;
    load.cacheDir = cache.directory();
    load.useCache = !load.cacheDir.empty();
    load.requireDecoder = true;
    // Text mode: the tokenizers (and their model files) are checked before
    // the model is compiled, so a bad one is reported at once.
    load.requireTextTokenizers = !ids;
    load.profile = profileOutput.has_value();
    // The warm-up at load runs a batch of the size this run's batches have
    // (fewer for a short input file), so their kernels are packed then.
    int64_t expectedRows = batchSize;
    if (inputLines)
      expectedRows = std::min<int64_t>(
          expectedRows, std::max<int64_t>(*inputLines / shardCount, 1));
    load.warmUpRows =
        std::clamp<int64_t>(expectedRows, 1, runtime::Session::kMaxWarmUpRows);
    auto loadStart = std::chrono::steady_clock::now();
    auto translator = api::loadTranslator(model, load, timing.root());
    if (!translator)
      return fail(translator.takeError());
    // The process ends with this command (dispatch() exits without
    // teardown): the translator's memory goes back to the system with it,
    // instead of being unmapped and freed piece by piece first.
    auto leak = llvm::make_scope_exit([&] { (void)translator->release(); });
    tfmc::Translator::Impl &state = (*translator)->impl();
    double loadSeconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - loadStart)
                             .count();
    // The model file's decoding defaults, then what the command line sets.
    tfmc::TranslateOptions publicOptions = (*translator)->defaultOptions();
    if (beamSize.getNumOccurrences())
      publicOptions.beamSize = beamSize;
    if (lengthPenalty.getNumOccurrences())
      publicOptions.lengthPenalty = lengthPenalty;
    if (nBest > publicOptions.beamSize)
      return fail("--n-best must be between 1 and --beam-size (the model's "
                  "default beam size is " +
                  std::to_string(publicOptions.beamSize) + ")");
    // A row generates at most max_len tokens (decoder positions).
    if (int64_t positions = state.session->model().desc.arch.maxLen;
        minLength > positions)
      return fail("--min-length must not exceed the model's max_len (" +
                  std::to_string(positions) + ")");
    // Opening truncates the output files: only once every option is known
    // good (--n-best against the model file's beam size, what the load
    // checks), so that a refused command leaves existing files as they were.
    if (profileOutput)
      if (llvm::Error e = profileOutput->open())
        return fail(std::move(e));
    auto os = openOutput(output);
    if (!os)
      return fail(os.takeError());
    publicOptions.replaceUnknown = replaceUnk;
    publicOptions.batchSize = batchSize;
    publicOptions.batchTokens = batchTokens;
    publicOptions.readAhead = readAhead;
    publicOptions.sortByLength = sortBatches;
    publicOptions.maxLength = maxLength;
    publicOptions.minLength = minLength;
    publicOptions.maxLengthFactor = maxLengthFactor;
    publicOptions.maxLengthOffset = maxLengthOffset;
    publicOptions.noRepeatNgramSize = noRepeatNgramSize;
    publicOptions.repetitionPenalty = repetitionPenalty;
    publicOptions.nBest = nBest > 0 ? int64_t(nBest) : 1;
    publicOptions.splitSentences = splitSentences;
    runtime::TranslateOptions options = api::toRuntimeOptions(publicOptions);
    options.scores = scores || nBest > 0;
    options.splitSentences =
        !ids && api::splitsSentences(publicOptions,
                                     state.session->model().desc,
                                     options.scores);
    FirstWriteClock out(**os);
    std::optional<mlir::TimingScope> translateTiming;
    if (timing.root())
      translateTiming.emplace(timing.root()->nest("translate"));
    bool showProgress =
        progress || llvm::sys::Process::StandardErrIsDisplayed();
    options.progress = showProgress;
    options.totalLines = inputLines;
    if (!shard.empty()) {
      options.firstLine = shardIndex * *inputLines / shardCount;
      options.endLine = (shardIndex + 1) * *inputLines / shardCount;
      options.totalLines = *options.endLine - options.firstLine;
    }
    auto translateStart = std::chrono::steady_clock::now();
    auto result = runtime::translateStream(
        *state.session, ids ? nullptr : &*state.tokenizers, reader, out,
        llvm::errs(), options);
    double translateSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      translateStart)
            .count();
    out.flush();
    if (llvm::Error e = finishOutput(**os, output))
      return fail(std::move(e));
    translateTiming.reset();
    if (out.firstWrite())
      timing.note("first translation written after (since start)",
                  *out.firstWrite());
    if (!result)
      return fail(result.takeError());
    if (stats || showProgress) {
      const runtime::Session &s = *state.session;
      double decode = s.decodeSeconds();
      llvm::errs() << llvm::formatv(
          "tfmc: {0} lines ({1} bad, {13} unreadable), {2} tokens in {3:f3} s: {4:f1} "
          "sentences/s, {5:f1} tokens/s; load+compile {6:f3} s (JIT {7:f3} "
          "s), encode {8:f3} s, decode {9:f3} s (model steps {10:f3} s for "
          "{14} decoder rows, search {11:f3} s), {12:f1} tokens/s "
          "decoding\n",
          result->writtenLines, result->badLines, result->generatedTokens,
          translateSeconds,
          translateSeconds > 0 ? result->writtenLines / translateSeconds
                               : 0.0,
          translateSeconds > 0 ? result->generatedTokens / translateSeconds
                               : 0.0,
          loadSeconds, s.compiled().compileSeconds(), s.encodeSeconds(), decode,
          s.stepSeconds(), std::max(0.0, decode - s.stepSeconds()),
          decode > 0 ? result->generatedTokens / decode : 0.0,
          result->warnedLines, s.decodedRows());
      llvm::errs() << "tfmc: run: " << s.configuration() << ", "
                   << threads.given()
                   << (threads.given() == 1 ? " thread; " : " threads; ")
                   << runtime::hostDescription() << "\n";
      if (s.narrowSteps() > 0)
        llvm::errs() << llvm::formatv(
            "tfmc: {0} of {1} decoder steps ran on one thread of {2} (cores "
            "shared with other processes, or TFMC_STEP_WIDTH: docs/cli.md, "
            "--threads)\n",
            s.narrowSteps(), s.widthSteps(), threads.given());
    }
    if (profileOutput)
      if (llvm::Error e = profileOutput->write(**translator))
        return fail(std::move(e));
    // Bad token ids fail the run (at the end); with --strict so do
    // unreadable and truncated lines.
    if (result->badLines)
      return 1;
    if (strict && (result->warnedLines || result->truncatedLines))
      return 1;
    return 0;
  }

private:
  /// Forwards to another stream and remembers when the first byte was
  /// written (the time to the first translation).
  class FirstWriteClock : public llvm::raw_ostream {
  public:
    explicit FirstWriteClock(llvm::raw_ostream &target) : target(target) {
      SetUnbuffered();
    }
    std::optional<double> firstWrite() const { return first; }

  private:
    void write_impl(const char *data, size_t size) override {
      target.write(data, size);
      target.flush();
      if (!first && size)
        first = secondsSinceStart();
    }
    uint64_t current_pos() const override { return target.tell(); }
    llvm::raw_ostream &target;
    std::optional<double> first;
  };

  cl::SubCommand sub;
  cl::opt<std::string> model, output, dumpIR, input;
  cl::opt<bool> ids, replaceUnk;
  IntegerOption<int64_t> batchSize, maxLength, minLength;
  cl::opt<double> maxLengthFactor;
  IntegerOption<int64_t> maxLengthOffset, noRepeatNgramSize;
  cl::opt<double> repetitionPenalty;
  IntegerOption<int64_t> beamSize;
  cl::opt<double> lengthPenalty;
  IntegerOption<int64_t> nBest;
  cl::opt<bool> scores, stats;
  ThreadsOption threads;
  cl::opt<std::string> stepTeams;
  IntegerOption<int64_t> batchTokens, readAhead;
  cl::opt<bool> sortBatches;
  cl::opt<std::string> shard;
  cl::opt<bool> strict, progress;
  cl::opt<std::string> splitSentences;
  KernelsOption kernels;
  ComputeTypeOptions computeType;
  KeyValueTypeOption kvType;
  CacheOptions cache;
  TimingOption timing;
  std::optional<ProfileOutput> profileOutput;
};

} // namespace

std::unique_ptr<Command> createTranslateCommand(cl::OptionCategory &cat) {
  return std::make_unique<TranslateCommand>(cat, /*profiling=*/false);
}

std::unique_ptr<Command> createProfileCommand(cl::OptionCategory &cat) {
  return std::make_unique<TranslateCommand>(cat, /*profiling=*/true);
}

} // namespace tfmc::driver
