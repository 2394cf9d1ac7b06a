//===- tfmc/Translator.h - tfmc's C++ API -----------------------*- C++ -*-===//
//
// Load a model once, translate batches of sentences (text or token ids),
// get encoder states. What `tfmc translate` itself runs on.
//
//   auto translator = tfmc::Translator::load("examples/zh-en/model.json");
//   if (!translator) { std::cerr << translator.error() << "\n"; return 1; }
//   auto out = (*translator)->translate({"我们明天去公园吧。"});
//   std::cout << (*out)[0].best().text << "\n";
//
// A Translator may be used from several threads at once: the compiled code,
// weights and tokenizers are shared; each call leases its own call frames
// and decoder buffers (created on first need, reused afterwards).
//
//===----------------------------------------------------------------------===//
#ifndef TFMC_TRANSLATOR_H
#define TFMC_TRANSLATOR_H

#include "tfmc/Profile.h"
#include "tfmc/Result.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tfmc {

/// The largest thread count and beam size accepted (beyond them a run only
/// exhausts threads or memory).
constexpr int kMaxThreads = 256;
constexpr int64_t kMaxBeamSize = 256;

/// How a model is loaded and compiled.
struct LoadOptions {
  /// Linear layers through oneDNN ("library", when built with it) or
  /// compiled loops ("loops"); "" picks library when available.
  std::string kernels;
  /// Threads for compiled code and oneDNN (1 to kMaxThreads).
  int threads = 1;
  /// When a batch's threads run each step together, sharing the reads of
  /// each layer's weights (docs/cli.md, --threads): "auto" or "" (large
  /// models at 8-15 hypotheses per thread), "always" (every batch of 2-256
  /// hypotheses) or "never". The translations are the same either way.
  std::string stepTeams;
  /// How linear-layer weights are stored: "float32", "float16", "bfloat16"
  /// or "int8" (docs/quantization.md); "" takes the model file's
  /// "compute_type", else float32. quantizeOutputProjection false keeps the output
  /// projection in float32.
  std::string computeType;
  bool quantizeOutputProjection = true;
  /// How the attention keys and values a decoder step reads are stored:
  /// "float32", "float16", or "auto"/"" (float16 with the float16,
  /// bfloat16 and int8 compute types, float32 with float32;
  /// docs/quantization.md).
  std::string kvType;
  /// Compiled-model cache: a directory, "" for the default
  /// ($TFMC_CACHE_DIR, $XDG_CACHE_HOME/tfmc, ~/.cache/tfmc); useCache
  /// false neither reads nor writes it.
  std::string cacheDir;
  bool useCache = true;
  /// Write every IR stage of the compiled model here ("" for none).
  std::string dumpDir;
  /// Also compile the encoder-states function (encode()); always so for an
  /// encoder-only model.
  bool encoderStates = false;
  /// Fail before compiling when the model cannot translate (encoder-only),
  /// or, with requireTextTokenizers, when its tokenizers cannot be built
  /// (e.g. a SentencePiece model that does not match the vocabulary).
  /// Otherwise such problems are reported by the calls that need them.
  bool requireDecoder = false;
  bool requireTextTokenizers = false;
  /// Compile the profiled variant (a cycle counter read around every op;
  /// its own cache entry) and count where translate calls spend their
  /// time: profile() (docs/profile.md). Measures the machine's GEMM rate
  /// and memory bandwidth at load (~0.5 s). One profiling translator per
  /// process at a time.
  bool profile = false;
  /// Load runs a one-sentence translation so that the kernels pack their
  /// weights then rather than in the first batch; with more than one
  /// (at most 256), also a batch of this many sentences: the batch size
  /// translate calls will use. Some kernels change with the batch (a
  /// float32 weight of exact halves, like the bundled model's, runs on half
  /// panels below 32 rows and on a float32 copy from 32), and packing those
  /// in the first batch is paid in its decoding time.
  int64_t warmUpRows = 1;
};

/// How sentences are decoded and batched (the options of `tfmc translate`).
struct TranslateOptions {
  /// 1 (greedy) to kMaxBeamSize.
  int64_t beamSize = 1;
  double lengthPenalty = 1.0;
  /// Hypotheses returned per sentence (at most beamSize).
  int64_t nBest = 1;
  int64_t maxLength = 256;
  int64_t minLength = 0;
  /// At most ceil(maxLengthFactor x source tokens incl. eos) +
  /// maxLengthOffset tokens (0: off).
  double maxLengthFactor = 3;
  int64_t maxLengthOffset = 10;
  int64_t noRepeatNgramSize = 0;
  double repetitionPenalty = 1.0;
  /// Sentences and padded source tokens (0: no bound) per batch, lines
  /// read ahead (0: 16 x batchSize), and length-sorted batches.
  int64_t batchSize = 32;
  int64_t batchTokens = 0;
  int64_t readAhead = 0;
  bool sortByLength = true;
  /// Text: write the k-th <unk> as the k-th unknown source span.
  bool replaceUnknown = false;
  /// Text: translate each sentence of a line as its own source and join
  /// the translations into one ("on"), translate lines whole ("off"), or
  /// split when the model file says it was trained on single sentences
  /// ("auto": "sentence_level": true). One translation a line: "on" with
  /// nBest > 1 or scores is an error, "auto" is then off. Token ids are
  /// never split.
  std::string splitSentences = "auto";
  /// Score greedy translations too (`tfmc translate --scores`): greedy
  /// search then runs as a beam of one, which computes each step's
  /// log-softmax (a little slower; the same tokens but where the repetition
  /// guards leave no allowed token: kNoHypothesis). Beam search always
  /// scores. Like nBest > 1, it cannot go with splitSentences "on" ("auto"
  /// is then off).
  bool scores = false;
};

struct Hypothesis {
  std::string text;         // detokenized (empty for translateIds)
  std::vector<int32_t> ids; // target ids, no bos/eos
  double score = 0; // normalised beam score (0 for greedy without scores)
};

struct Translation {
  /// Best first; empty when the input line was empty or bad.
  std::vector<Hypothesis> hypotheses;
  /// Why the line was not translated ("" when it was).
  std::string error;
  /// A warning (e.g. the source was truncated to the model's max_len).
  std::string warning;
  const Hypothesis &best() const;
};

/// Encoder output [batch, length, dModel], row-major; positions at or
/// beyond a row's length (its ids + eos) are zero.
struct EncoderStates {
  int64_t batch = 0, length = 0, dModel = 0;
  std::vector<int32_t> lengths;
  std::vector<float> values;
};

/// What translateStream reads and writes.
struct StreamOptions {
  /// Lines are space-separated token ids in and out (no tokenizer).
  bool ids = false;
  /// Write "i ||| translation ||| score" lines, nBest per input.
  bool scores = false;
  /// An updating progress line on the diagnostics descriptor.
  bool progress = false;
};

struct StreamStats {
  /// Lines read; lines that are errors (bad token ids: an empty output
  /// line); lines of text that could not be read (invalid UTF-8: an empty
  /// output line and a warning); lines whose source was truncated to the
  /// model's max_len; tokens generated.
  int64_t lines = 0, badLines = 0, unreadableLines = 0, truncatedLines = 0,
          generatedTokens = 0;
};

/// "" when Translator::load would take `options`, else the one-line
/// reason it would fail with (the checks that need no model file).
std::string loadOptionsError(const LoadOptions &options);

class Translator {
public:
  static Result<std::unique_ptr<Translator>>
  load(const std::string &modelPath, const LoadOptions &options = {});
  ~Translator();

  /// TranslateOptions{} with the model file's "decoding" defaults (beam
  /// size, length penalty; docs/model-format.md): what a translation
  /// without options uses, and what `tfmc translate` and `tfmc serve`
  /// start from.
  TranslateOptions defaultOptions() const;

  /// Translates sentences (text through the model's tokenizers). A bad
  /// sentence (invalid UTF-8...) gets its error and no hypotheses; the
  /// others are translated. Fails only for errors of the whole batch.
  /// Without options: defaultOptions().
  Result<std::vector<Translation>>
  translate(const std::vector<std::string> &sentences,
            const TranslateOptions &options);
  Result<std::vector<Translation>>
  translate(const std::vector<std::string> &sentences);
  /// The same for token-id sources (eos is appended here).
  Result<std::vector<Translation>>
  translateIds(const std::vector<std::vector<int32_t>> &sources,
               const TranslateOptions &options);
  Result<std::vector<Translation>>
  translateIds(const std::vector<std::vector<int32_t>> &sources);
  /// Encoder states of token-id sources (encoder-only models too).
  Result<EncoderStates> encode(const std::vector<std::vector<int32_t>> &sources);

  /// Reads lines from file descriptor `in` and writes one line per input
  /// line to `out`, in order, as `tfmc translate` does (text, or token ids
  /// with `ids`; `scores`: "i ||| translation ||| score" lines). Warnings
  /// and errors go to `diagnostics`; `progress` draws a progress line there.
  /// An `out` or `diagnostics` that cannot be written (a closed descriptor,
  /// a full disk) makes the call an error once the input is read (a pipe
  /// whose reader is gone raises SIGPIPE first, as any write does: ignore
  /// it in the process to get the error instead). The line format is
  /// `stream.scores`', whatever `options.scores` says.
  Result<StreamStats> translateStream(int in, int out, int diagnostics,
                                      const TranslateOptions &options,
                                      const StreamOptions &stream = {});

  /// With LoadOptions::profile: per-op times, FLOP, bytes and roofline
  /// fractions of the translate calls since load or resetProfile();
  /// an error otherwise.
  Result<Profile> profile() const;
  void resetProfile();

  /// Sizes of the model.
  int64_t sourceVocabularySize() const;
  int64_t targetVocabularySize() const; // 0 for an encoder-only model
  bool encoderOnly() const;
  /// What the compiled code computes with, in words: the weights' type,
  /// the attention keys' and values' (models with a decoder) and the
  /// kernels, e.g. "float32 weights, float32 keys/values, library kernels"
  /// (LoadOptions resolved against the model file).
  std::string configuration() const;
  /// "" when translate() and the other calls would take `options`, else
  /// the one-line reason they would fail with (the values alone, against
  /// this model's positions; not whether it has a decoder).
  std::string optionsError(const TranslateOptions &options) const;

  /// Internal state (runtime/api/TranslatorImpl.h; tools/tfmc reads the
  /// session's timings through it).
  struct Impl;
  Impl &impl() { return *state; }
  explicit Translator(std::unique_ptr<Impl> impl);

private:
  std::unique_ptr<Impl> state;
};

} // namespace tfmc

#endif // TFMC_TRANSLATOR_H
