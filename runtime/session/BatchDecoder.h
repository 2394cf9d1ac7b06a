//===- BatchDecoder.h - a batch's KV caches and decoder steps ---*- C++ -*-===//
//
// The state of one batch being decoded: cross-attention keys/values from
// the encoder and self-attention KV caches, sized once for the batch, and
// the compiled decode_step called over the active slots.
//
// Slots are the hypotheses being extended (one per row for greedy, up to K
// per row for beam search), always contiguous 0..active-1 because the
// compiled step runs over a dense batch. Reordering them (beams that fork,
// hypotheses and rows that finish) never allocates:
//  * cross-attention keys/values depend only on the source row: they are
//    kept once per row, where the encoder wrote them, and never move;
//    decode_step reads them through `cross_rows` (each slot's row);
//  * self-attention caches move only the slots whose parent changed, and
//    only their filled positions, each once, in an order that reads every
//    slot before it is overwritten (a cycle of slots continuing each other
//    goes through one slot's worth of spare memory).
// Self caches start with room for BatchShape::initialPositions and double
// (up to the batch's limit, or to the limit at once when it is less than
// half as far again) when a step needs more, so a batch holds
// memory for the length it reaches rather than for the length it may
// reach (sentences end long before 3 x source + 10).
// Keys and values are float32 or float16 (tfm-half-caches), as the compiled
// functions' arguments say; the buffers are handled as bytes.
//
// With a StepTeam (useTeam), each step's active slots are cut into one
// contiguous range per member, run at once through each member's own call
// frames over views of the same buffers (StepTeam.h: the members' linear
// layers read their weights once for all of them). Rows are independent,
// so the results are those of one call over all slots.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_BATCHDECODER_H
#define RUNTIME_SESSION_BATCHDECODER_H

#include "runtime/decoding/IncrementalDecoder.h"
#include "runtime/session/Buffer.h"
#include "runtime/session/CallFrame.h"
#include "runtime/session/DecoderArena.h"
#include "runtime/session/SourceBatch.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>
#include <vector>

namespace tfmc::runtime {

class StepTeam;
class StepWidth;

struct BatchShape {
  int64_t layers = 0, dModel = 0, vocab = 0;
  /// Decoder positions each slot may fill (the batch's length limit).
  int64_t maxSteps = 1;
  /// Positions the self caches hold at first (they grow to maxSteps): the
  /// session's initialCachePositions, or the steps the batch is sure to
  /// run (--min-length) where more.
  int64_t initialPositions = 32;
  /// Hypotheses per row (beam size; 1 for greedy).
  int64_t slotsPerRow = 1;
};

class BatchDecoder : public IncrementalDecoder {
public:
  /// Buffers come from `arena` and go back to it when the decoder is
  /// destroyed (one decoder per arena at a time).
  BatchDecoder(CallFrame &encode, CallFrame &decodeStep, SourceBatch source,
               const BatchShape &shape, DecoderArena &arena);
  ~BatchDecoder() override;
  /// Called when the decoder is destroyed (after its buffers went back to
  /// the arena): gives the call frames back to their session.
  void onRelease(std::function<void()> callback) {
    release = std::move(callback);
  }

  /// Runs the encoder: fills every row's cross-attention keys/values (with
  /// a team, each member encodes a contiguous range of the rows).
  llvm::Error encode();

  int64_t vocabSize() const override { return vocab; }
  int64_t activeSlots() const override { return active; }
  const float *step(llvm::ArrayRef<int32_t> next) override;
  /// decode_greedy (tfm-greedy-head): steps that end in each slot's
  /// greedy choice; ids never chosen and eos come from `special`.
  void useGreedyStep(CallFrame &greedy, const SpecialIds &special);
  const int32_t *greedyStep(llvm::ArrayRef<int32_t> next,
                            llvm::ArrayRef<int32_t> allowEos) override;
  bool hasGreedyStep() const override { return greedyFrame != nullptr; }
  /// decode_beam (tfm-beam-head): steps that end in each slot's best
  /// candidates.
  void useBeamStep(CallFrame &beam);
  Candidates beamStep(llvm::ArrayRef<int32_t> next,
                      llvm::ArrayRef<int32_t> allowEos, int64_t count) override;
  bool hasBeamStep() const override { return beamFrame != nullptr; }
  /// The call frames of one more StepTeam member (encode's, decode_step's
  /// and, where this decoder uses them, decode_greedy's and decode_beam's).
  struct MemberFrames {
    CallFrame *encode = nullptr, *step = nullptr, *greedy = nullptr,
              *beam = nullptr;
  };
  /// Runs the encoder and the steps on `team` (at most one member per
  /// row or slot); `others[i]` are member i + 1's frames (team.size() - 1
  /// of them, each holding what this decoder's own frames hold). Called
  /// before encode().
  void useTeam(StepTeam &team, std::vector<MemberFrames> others);
  /// Lets `width` (StepWidth.h) run each step of at most `maxRows` slots
  /// on all the threads (the team's members, or the library kernels'
  /// threads) or on the calling thread alone, and tells it how long each
  /// took. `width` outlives the decoder.
  void useStepWidth(StepWidth &width, int64_t maxRows);
  void reorder(llvm::ArrayRef<int64_t> sources) override;
  llvm::Error takeError() override;
  int64_t sourceTokens(int64_t row) const override { return src.lengths[row]; }
  /// Seconds spent in the compiled decode_step so far (the rest of a
  /// search's time is the search itself).
  double stepSeconds() const { return stepTime; }
  /// Rows (hypotheses) run through decode_step so far, summed over steps.
  int64_t rowSteps() const { return rows; }
  /// Steps run so far.
  int64_t steps() const { return position; }

private:
  void moveSelfCaches(llvm::ArrayRef<int64_t> sources);
  enum class StepKind { Encode, Logits, Greedy, Beam };
  /// The frame of `kind` of team member `member` (0: this decoder's).
  CallFrame &frameOf(StepKind kind, int member);
  /// Binds what decode_step, decode_greedy and decode_beam share for slots
  /// [first, first + count).
  void bindSlots(CallFrame &f, int64_t first, int64_t count);
  /// Binds encode's arguments for source rows [first, first + count).
  void bindSources(CallFrame &f, int64_t first, int64_t count);
  /// Calls `kind`'s frames: with the team, the first `parts` members' at
  /// once, else (parts 1) this decoder's own.
  llvm::Error callFrames(StepKind kind, int parts);
  /// Runs one step of `kind` over the active slots (cut between the team's
  /// members when there is one), `next` their tokens; `bindOwn(f, first,
  /// count)` binds the rest of a frame's arguments for its slots. Times it
  /// and keeps its first failure; false when it failed.
  bool runStep(StepKind kind, llvm::ArrayRef<int32_t> next,
               llvm::function_ref<void(CallFrame &, int64_t, int64_t)> bindOwn);
  /// Makes room for `positions` positions per slot (at most `limit`),
  /// keeping the filled ones; false when the memory is not there (the
  /// caches are then as they were).
  bool growSelfCaches(int64_t positions);
  /// Keeps "out of memory" as the batch's failure (unless it has one) for
  /// `what`, `bytes` of it: no step runs after it.
  void noteOutOfMemory(llvm::StringRef what, int64_t bytes);

  CallFrame &encodeFrame, &frame;
  DecoderArena &arena;
  SourceBatch src;
  /// capacity: positions the self caches hold now; limit: the most they
  /// may need.
  int64_t capacity, limit, slots, layers, dModel, vocab;
  int64_t active = 0, position = 0;
  double stepTime = 0;
  int64_t rows = 0;
  /// Bytes of `elements` keys/values from the arena; nullptr when the
  /// memory is not there.
  char *acquire(int64_t elements, int64_t elementBytes);
  /// `count` buffers of `elements` keys/values each, 64-byte aligned. Up
  /// to DecoderArena::pooledBytes() each they are cut from one of the
  /// arena's own buffers: together they are large enough for huge pages,
  /// where each alone would be small pages (DecoderArena.h). Empty when
  /// the memory is not there (what was taken is given back).
  std::vector<char *> acquireGroup(int64_t count, int64_t elements,
                                   int64_t elementBytes);
  /// Gives a group from acquireGroup back to the arena and empties it.
  void releaseGroup(std::vector<char *> &group);

  /// Bytes per element of the cross-attention keys/values and of the self
  /// caches.
  int64_t crossBytes = sizeof(float), selfBytes = sizeof(float);
  /// [2 * layer + {0: keys, 1: values}]: cross-attention keys/values per
  /// source row (from the encoder) and self-attention caches per slot
  /// (taken at the first step).
  std::vector<char *> cross, self;
  /// One slot's self caches, saved to break a cycle of a reorder.
  std::vector<char> spare;
  /// The source row each slot holds (decode_step's cross_rows), and each
  /// slot's source length.
  Buffer<int32_t> slotRow, slotLengths;
  /// Their old values during a reorder.
  std::vector<int32_t> slotScratch;
  /// decode_step's argument index of cross[i] and self[i].
  std::vector<int> crossArgs, selfArgs;
  Buffer<int32_t> tokens;
  /// decode_step's output (from the arena: reused across batches).
  float *logits = nullptr;
  CallFrame *greedyFrame = nullptr, *beamFrame = nullptr;
  StepTeam *team = nullptr;
  std::vector<MemberFrames> members;
  StepWidth *width = nullptr;
  int64_t narrowMaxRows = 0;
  Buffer<int32_t> neverIds, allowEosFlags, chosen;
  /// decode_beam's outputs.
  Buffer<float> candidateValues;
  Buffer<int32_t> candidateIds;
  /// Binds the inputs decode_greedy and decode_beam share, for slots
  /// [first, first + count) (allowEosFlags already filled).
  void bindChoiceInputs(CallFrame &f, int64_t first, int64_t count);
  int64_t eosId = 0;
  llvm::Error failure = llvm::Error::success();
  /// A step failed, or the caches could not be had: the batch is lost and
  /// no step runs any more (each would fail again, or allocate up to the
  /// limit to no use).
  bool failed = false;
  std::function<void()> release;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_BATCHDECODER_H
