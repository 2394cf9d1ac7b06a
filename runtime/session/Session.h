//===- Session.h - a loaded, compiled model ready to run --------*- C++ -*-===//
#ifndef RUNTIME_SESSION_SESSION_H
#define RUNTIME_SESSION_SESSION_H

#include "frontends/model/Model.h"
#include "runtime/decoding/BeamSearch.h"
#include "runtime/decoding/IncrementalDecoder.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/session/CompiledModel.h"
#include "runtime/session/PositionTable.h"
#include "runtime/session/StepWidth.h"
#include "runtime/session/WeightStore.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tfmc::runtime {

class BatchDecoder;

struct SessionOptions {
  /// Write every IR stage of the compiled model to this directory.
  std::string dumpDir;
  /// Threads: a batch of a large model (kTeamMinStepBytes of weights a
  /// step) with kTeamMinSlotsPerThread up to kTeamSlotsPerThread
  /// hypotheses per thread runs each encoder call and decoder step on all
  /// of them at once, its rows cut between the threads, which share the
  /// reads of each layer's weights (a StepTeam); a larger batch, with at
  /// least kMinRowsPerWorker rows per thread, is split into that many
  /// slices decoded apart; otherwise one thread runs the steps and the
  /// library kernels (oneDNN and the packed kernels) use all the threads.
  int threads = 1;
  /// When batches run on a StepTeam: Auto as above (and only where the
  /// process may use a core per thread); Always every batch of at least two
  /// hypotheses and at most kTeamMaxSlots; Never none. The translations are the same either way.
  enum class StepTeams { Auto, Always, Never };
  StepTeams stepTeams = StepTeams::Auto;
  /// Linear layers through oneDNN (when built with it) or compiled loops.
  bool useLibraryKernels = haveLibraryKernels();
  /// Compile what translate() needs (encode, decode_step) and what
  /// forward() needs; leaving one out saves its JIT time.
  bool translation = true;
  bool teacherForcing = true;
  /// Compile what encode() needs (the encoder output alone). Encoder-only
  /// models have nothing else: translation and teacherForcing do not apply.
  bool encoderStates = false;
  /// Storage of linear-layer weights; unset: the model file's
  /// "compute_type", else float32. With float16/int8,
  /// quantizeOutputProjection says whether the output projection is too.
  std::optional<frontend::ComputeType> computeType;
  bool quantizeOutputProjection = true;
  /// Storage of the attention keys and values (KeyValueType.h).
  KeyValueType keyValueType = KeyValueType::Auto;
  /// Compiled-model cache directory (empty: none) and whether to recompile
  /// over an existing entry; see CompileOptions. Session::open(path, ...)
  /// also keeps the weight cache there (frontend/model/WeightCache.h).
  std::string cacheDir;
  bool refreshCache = false;
  /// Compile the profiled variant (probes around every op; a Profiler
  /// attaches to it).
  bool profile = false;
  /// Per-phase times (compile phases, binding weights) nest here when set.
  mlir::TimingScope *timing = nullptr;
  /// Run a one-token sentence through the encoder and the greedy step at
  /// load (library kernels, translation compiled, not profiled),
  /// so the kernels pack their weights into panels and prepare greedy's
  /// shortlist in open() rather than in the first batch's time. The times
  /// and row counts below start from zero after it.
  bool prepareKernels = true;
  /// Sentences of a second warm-up batch (when more than one, at most
  /// kMaxWarmUpRows): the batch size translate() will be called with.
  /// Some kernels change with the rows of a step (a float32 weight of exact
  /// halves runs on half panels below 32 rows and on a float32 copy from
  /// 32), so a one-row warm-up alone leaves the panels of the larger
  /// batches to be packed in the first one's decoding time.
  int64_t warmUpRows = 1;
  /// Positions each self-attention cache holds at first; it doubles, up to
  /// the batch's length limit, when a step needs more (tests use 1 to grow
  /// at every power of two).
  int64_t initialCachePositions = 32;
};

/// Encoder output [batch, length, d_model], row-major; positions at or
/// beyond a row's length (ids + eos) are zero.
struct EncoderStates {
  int64_t batch = 0, length = 0, dModel = 0;
  std::vector<int32_t> lengths;
  std::vector<float> values;
};

/// What forward() returns: raw logits, log_softmax or softmax of them.
enum class LogitsOutput { Logits, LogProbs, Probs };

/// Teacher-forced logits [batch, steps, vocab], row-major.
struct Logits {
  int64_t batch = 0, steps = 0, vocab = 0;
  std::vector<float> values;
};

using TokenRows = std::vector<std::vector<int32_t>>;

class Session {
public:
  /// Loads and validates the model file, compiles and JIT-links its
  /// functions and binds its weights.
  static llvm::Expected<std::unique_ptr<Session>>
  open(llvm::StringRef modelPath, const SessionOptions &options = {});
  /// The same for a model already loaded (frontend::loadModel).
  static llvm::Expected<std::unique_ptr<Session>>
  open(frontend::Model model, const SessionOptions &options = {});
  ~Session();

  /// The loaded model: description and vocabularies. Weights whose float32
  /// copy no compiled function binds have been released (null `data`).
  const frontend::Model &model() const { return loaded; }
  const CompiledModel &compiled() const { return *compiledModel; }
  SpecialIds specialIds() const;
  /// The most source tokens kept before eos (max_len - 1); longer sources
  /// are truncated.
  int64_t maxSourceTokens() const;

  /// Teacher-forced logits. `sources` hold token ids (eos is appended here,
  /// after truncation); `targets` start with bos.
  llvm::Expected<Logits> forward(const TokenRows &sources,
                                 const TokenRows &targets,
                                 LogitsOutput output = LogitsOutput::Logits);

  /// The encoder output for `sources` (token ids; eos appended here after
  /// truncation, batch right-padded, exactly as translate() builds them).
  llvm::Expected<EncoderStates> encode(const TokenRows &sources);

  /// Decodes a batch of sources (token ids, eos appended here) with greedy
  /// search. Each row's result is independent of the other rows.
  llvm::Expected<TokenRows> translate(const TokenRows &sources,
                                      const SearchOptions &options);
  /// ... as one hypothesis per row: score 0, or NaN for a row cut short
  /// where the logit it chose was NaN or infinite (greedySearch()).
  llvm::Expected<std::vector<Hypothesis>>
  translateGreedy(const TokenRows &sources, const SearchOptions &options);

  /// Decodes a batch with beam search (options.beamSize >= 1); returns each
  /// row's finished hypotheses, best first, with normalised scores.
  llvm::Expected<std::vector<std::vector<Hypothesis>>>
  translateBeam(const TokenRows &sources, const SearchOptions &options);

  /// Seconds spent in the encoder and in decoding steps since the session
  /// opened (for throughput reports).
  double encodeSeconds() const { return encodeTime; }
  double decodeSeconds() const { return decodeTime; }
  /// Of decodeSeconds, the time in the compiled decoder steps (the rest is
  /// the search: scores, candidates, cache moves). Summed over worker
  /// threads.
  double stepSeconds() const { return stepTime; }
  /// Decoder rows run in those steps (a beam of K decodes up to K rows per
  /// sentence and step): model cost per row = stepSeconds / decodedRows.
  int64_t decodedRows() const { return rowSteps; }
  /// Decoder steps that ran on one thread of several (StepWidth.h: other
  /// processes shared the cores, or TFMC_STEP_WIDTH), and all the steps of
  /// the batches whose threads meet at every layer (a step team, or the
  /// library kernels' threads; not those decoded as slices). Read, like
  /// the timers above, without the lock: between calls.
  int64_t narrowSteps() const { return narrowStepCount; }
  int64_t widthSteps() const { return widthStepCount; }

  /// What the compiled code computes with, for reports (--stats, tfmc
  /// profile, serve): the weights' type, the keys' and values' (models
  /// with a decoder), and the kernels, e.g. "float32 weights, float32
  /// keys/values, library kernels"; "int8 weights (output projection
  /// float32), ..." where a reduced type leaves the projection as it was.
  std::string configuration() const;

  /// Runs the encoder on `sources` and returns a decoder whose slots are
  /// the rows, with KV caches for `maxSteps` positions and room for
  /// `slotsPerRow` hypotheses per row.
  llvm::Expected<std::unique_ptr<IncrementalDecoder>>
  startDecoding(const TokenRows &sources, int64_t maxSteps,
                int64_t slotsPerRow = 1);

  /// The fewest rows each worker thread decodes. 8 rather than 16: with
  /// two threads a batch of 16 then runs as two slices of 8 instead of one
  /// batch with its GEMM columns split between the threads (base model,
  /// AMD EPYC AVX-512, bench/run.py medians of 3, 2 threads vs 1: int8
  /// 1.19x -> 1.49x, float32 1.34x -> 1.39x; batch 32 float32 1.79x).
  static constexpr int64_t kMinRowsPerWorker = 8;
  /// Batches of fewer than this many hypotheses (rows x beam) per thread
  /// decode on a StepTeam of all the threads; larger ones in slices. A
  /// few rows give each weight few multiply-adds, so two slices streaming
  /// all the weights each are bound by the memory bandwidth, which the
  /// second core does not raise; from 16 rows a thread the slices, which
  /// need no meeting at every layer, are as fast or faster (base model,
  /// AMD EPYC AVX-512, 2 threads, 32 sentences: batch 16 team 1.46-1.56 s
  /// against slices 1.60-1.64 s, batch 32 1.42-1.59 against 1.39-1.42,
  /// batch 64 2.22-2.24 against 2.05-2.06).
  static constexpr int64_t kTeamSlotsPerThread = 16;
  /// ... and not fewer than this many per thread: with fewer, the meetings
  /// cost more than the attention they parallelise, and one thread whose
  /// layers split their columns between the threads is faster (base model,
  /// 32 sentences at batch 4, 2 threads: 1.90-2.44 s against 2.25-2.57 s).
  static constexpr int64_t kTeamMinSlotsPerThread = 8;
  /// ... and only when a step reads at least this many bytes of weights:
  /// a model whose decoder weights stay in the last-level cache (32 MiB on
  /// the bench hosts) reads them from there whichever thread does, and its
  /// small layers make the meetings dear (the bundled model, 18 MB a step,
  /// 400 dev lines at batch 16 on 2 threads: team 0.38-0.60 s, slices
  /// 0.30-0.38 s). The base model (105 MB) at batch 16: team 1.20-1.51 s,
  /// median 1.27, against slices 1.34-1.68, median 1.43 (one thread 2.19).
  static constexpr int64_t kTeamMinStepBytes = int64_t(48) << 20;
  /// The most hypotheses a team decodes (StepTeams::Always): the rows the
  /// packed kernels its members share take.
  static constexpr int64_t kTeamMaxSlots = 256;
  /// SessionOptions::warmUpRows' bound: beyond 256 rows the decoder's
  /// layers leave the packed kernels (OneDnn::kPackedMaxRows).
  static constexpr int64_t kMaxWarmUpRows = 256;
  struct Frames;

private:
  /// SessionOptions::prepareKernels and warmUpRows.
  void prepareKernels(int64_t rows);

  explicit Session(frontend::Model model);
  llvm::Expected<std::unique_ptr<IncrementalDecoder>>
  /// `sureSteps`: steps the batch is sure to run (its minimum length), so
  /// that caches which would grow to them anyway start there.
  startDecoding(Frames &workerFrames, const TokenRows &sources,
                int64_t maxSteps, int64_t sureSteps, int64_t slotsPerRow,
                llvm::function_ref<void(BatchDecoder &)> beforeEncode = {});
  llvm::Error checkIds(const TokenRows &rows, int64_t vocab,
                       llvm::StringRef what) const;
  /// Computes the positional table's first `positions` rows where they are
  /// not yet (before a call that reads them: PositionTable.h).
  void ensurePositions(int64_t positions);
  /// Runs `search` over a decoder for `sources` (shared by greedy and beam).
  template <typename Result, typename Search>
  llvm::Expected<Result> decode(const TokenRows &sources,
                                const SearchOptions &options,
                                int64_t slotsPerRow, Search search);

  frontend::Model loaded;
  std::unique_ptr<CompiledModel> compiledModel;
  /// Sinusoidal encodings (null where the model stores its own tables).
  std::unique_ptr<PositionTable> positionalTable;
  /// Weights as the compiled functions take them (packed, converted).
  std::unique_ptr<WeightStore> weightStore;
  frontend::ComputeType computeType = frontend::ComputeType::Float32;
  /// Resolved from SessionOptions (configuration()).
  bool quantizedOutputProjection = true, halfKeysAndValues = false;
  double encodeTime = 0, decodeTime = 0, stepTime = 0;
  int64_t rowSteps = 0;
  /// Whether steps on several threads run on one for now: every batch
  /// starts from the last one's StepWidth (guarded by `mutex`).
  StepWidth stepWidth;
  int64_t narrowStepCount = 0, widthStepCount = 0;
  int threads = 1;
  /// Bytes of weights a decoder step reads (decode_greedy's arguments).
  int64_t stepWeightBytes = 0;
  /// SessionOptions::useLibraryKernels.
  bool libraryKernels = true;
  SessionOptions::StepTeams stepTeams = SessionOptions::StepTeams::Auto;
  int64_t initialCachePositions = 32;
  /// Call frames (weights bound), one set per concurrent caller or worker
  /// slice: a call leases what it needs and gives it back. Created on
  /// demand; `mutex` guards the pool, the packed weights and the timers.
  std::vector<std::unique_ptr<Frames>> frames;
  std::vector<Frames *> idleFrames;
  std::mutex mutex;
  class FramesLease;
  Frames &acquireFrames();
  void releaseFrames(Frames &f);
  void addTimes(double encode, double decode, double steps,
                int64_t rows = 0);
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_SESSION_H
