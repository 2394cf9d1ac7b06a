//===- SessionDecode.cpp - greedy and beam translation of batches ---------===//
//
// A batch is encoded once and decoded step by step by a BatchDecoder. With
// several threads, a batch of kTeamMinSlotsPerThread to kTeamSlotsPerThread
// hypotheses per thread of a model whose steps stream their weights from
// memory is encoded and decoded on a StepTeam (each step's slots cut
// between the threads, which share the layers' weight reads); larger
// batches are cut into slices decoded apart, smaller ones run on one
// thread whose layers split their columns between the threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/SessionFrames.h"

#include "runtime/decoding/GreedySearch.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/kernels/StepTeam.h"
#include "runtime/session/BatchDecoder.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <thread>

using namespace tfmc;
using namespace tfmc::runtime;

llvm::Expected<std::unique_ptr<IncrementalDecoder>>
Session::startDecoding(const TokenRows &sources, int64_t maxSteps,
                       int64_t slotsPerRow) {
  auto start = std::chrono::steady_clock::now();
  // The decoder keeps its frames until it is destroyed.
  Frames &f = acquireFrames();
  auto decoder = startDecoding(f, sources, maxSteps, 0, slotsPerRow);
  if (!decoder) {
    releaseFrames(f);
    return decoder.takeError();
  }
  static_cast<BatchDecoder &>(**decoder).onRelease(
      [this, &f] { releaseFrames(f); });
  addTimes(secondsSince(start), 0, 0);
  return decoder;
}

llvm::Expected<std::unique_ptr<IncrementalDecoder>>
Session::startDecoding(Frames &workerFrames, const TokenRows &sources,
                       int64_t maxSteps, int64_t sureSteps, int64_t slotsPerRow,
                       llvm::function_ref<void(BatchDecoder &)> beforeEncode) {
  if (loaded.desc.arch.encoderOnly())
    return noDecoder(loaded, "translation");
  if (!workerFrames.encode || !workerFrames.decodeStep)
    return sessionError("this session was opened without translation");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  const frontend::Architecture &arch = loaded.desc.arch;
  BatchShape shape;
  shape.layers = arch.numDecoderLayers;
  shape.dModel = arch.dModel;
  shape.vocab = loaded.targetVocab.size();
  shape.maxSteps = maxSteps;
  shape.initialPositions = std::max(initialCachePositions, sureSteps);
  shape.slotsPerRow = slotsPerRow;
  SourceBatch src = padSources(sources, maxSourceTokens(), specialIds());
  ensurePositions(std::max(src.length, maxSteps));
  auto decoder = std::make_unique<BatchDecoder>(
      *workerFrames.encode, *workerFrames.decodeStep, std::move(src), shape,
      workerFrames.arena);
  if (workerFrames.decodeGreedy)
    decoder->useGreedyStep(*workerFrames.decodeGreedy, specialIds());
  if (workerFrames.decodeBeam)
    decoder->useBeamStep(*workerFrames.decodeBeam);
  if (beforeEncode)
    beforeEncode(*decoder);
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
  // The row with the batch's limit runs at least this far: its caches
  // start there rather than grow to it.
  int64_t sureSteps = std::min(effective.minLength, batchSteps);
  auto rows = static_cast<int64_t>(sources.size());
  int64_t slots = rows * std::max<int64_t>(slotsPerRow, 1);
  bool team = false;
  if (threads > 1 && stepTeams == SessionOptions::StepTeams::Always)
    team = slots >= 2 && slots <= kTeamMaxSlots;
  else if (threads > 1 && stepTeams == SessionOptions::StepTeams::Auto)
    team = slots >= kTeamMinSlotsPerThread * threads &&
           slots < kTeamSlotsPerThread * threads &&
           stepWeightBytes >= kTeamMinStepBytes &&
           threads <= StepTeam::coresHere();
  // With several threads and enough rows (but too many for a team),
  // contiguous slices of the batch are encoded and decoded at once on their
  // own threads, each with its own call frames and one library-kernel
  // thread (rows are independent, so the result is the same as one batch).
  int64_t workers = std::min<int64_t>(threads, rows / kMinRowsPerWorker);
  if (team || workers <= 1) {
    // One decoder over the whole batch: on a StepTeam of all the threads,
    // each member with frames of its own (member 0 this thread), or on this
    // thread alone with the library kernels using all the threads. The
    // decoder goes before the frames and the team.
    std::vector<FramesLease> leases;
    std::vector<BatchDecoder::MemberFrames> others;
    for (int m = 0; m < (team ? threads : 1); ++m) {
      leases.emplace_back(*this);
      Frames &f = *leases.back();
      if (m > 0)
        others.push_back({f.encode.get(), f.decodeStep.get(),
                          f.decodeGreedy.get(), f.decodeBeam.get()});
    }
    std::optional<StepTeam> stepTeam;
    if (team)
      stepTeam.emplace(threads);
    // The library kernels' thread count is per calling thread: every caller
    // uses the session's, so results do not depend on the caller. A team's
    // members compute on one kernel thread each, the calling thread too,
    // between them (an OpenMP pool left spinning after a parallel layer
    // would take a member's core).
    setKernelThreads(team ? 1 : threads);
    // On several threads that meet at every layer (a team, or the library
    // kernels' threads), whether each step runs on all of them or, while
    // other processes share the cores, on this one (StepWidth.h). Callers
    // at once each start from the session's and the last to finish leaves
    // its own: the state is advice, and a lost update costs a trial.
    std::optional<StepWidth> width;
    bool library = libraryKernels && haveLibraryKernels();
    if (threads > 1 && (team || library)) {
      std::lock_guard<std::mutex> lock(mutex);
      width = stepWidth;
    }
    // Steps whose results would change on one thread stay on all of them.
    int64_t narrowMaxRows = library ? threadNeutralRows() : INT64_MAX;
    int64_t narrowBefore = width ? width->narrowSteps() : 0;
    auto start = std::chrono::steady_clock::now();
    auto decoder = startDecoding(*leases[0], sources, batchSteps, sureSteps,
                                 slotsPerRow, [&](BatchDecoder &d) {
                                   if (stepTeam)
                                     d.useTeam(*stepTeam, std::move(others));
                                   if (width)
                                     d.useStepWidth(*width, narrowMaxRows);
                                 });
    double encodeSeconds = secondsSince(start);
    Result result;
    if (decoder) {
      auto &batch = static_cast<BatchDecoder &>(**decoder);
      start = std::chrono::steady_clock::now();
      result = search(**decoder, effective, specialIds());
      addTimes(encodeSeconds, secondsSince(start), batch.stepSeconds(),
               batch.rowSteps());
      if (width) {
        std::lock_guard<std::mutex> lock(mutex);
        stepWidth = *width;
        narrowStepCount += width->narrowSteps() - narrowBefore;
        widthStepCount += batch.steps();
      }
    }
    setKernelThreads(threads);
    if (!decoder)
      return decoder.takeError();
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
    auto decoder = startDecoding(*leases[w], slice.sources, batchSteps,
                                 sureSteps, slotsPerRow);
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
      return sessionError(slice.error);
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

llvm::Expected<std::vector<Hypothesis>>
Session::translateGreedy(const TokenRows &sources,
                         const SearchOptions &options) {
  return decode<std::vector<Hypothesis>>(sources, options, 1, greedySearch);
}

llvm::Expected<TokenRows> Session::translate(const TokenRows &sources,
                                             const SearchOptions &options) {
  auto rows = translateGreedy(sources, options);
  if (!rows)
    return rows.takeError();
  TokenRows ids;
  ids.reserve(rows->size());
  for (Hypothesis &row : *rows)
    ids.push_back(std::move(row.ids));
  return ids;
}
