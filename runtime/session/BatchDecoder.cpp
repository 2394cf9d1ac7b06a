//===- BatchDecoder.cpp - a batch's KV caches and decoder steps -----------===//
#include "runtime/session/BatchDecoder.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/ProfileProbes.h"
#include "runtime/kernels/StepTeam.h"
#include "runtime/session/SlotMoves.h"
#include "runtime/session/StepWidth.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

using namespace tfmc::runtime;

static int64_t elementBytes(const CallFrame &frame, int index) {
  if (index < 0)
    return sizeof(float);
  return frame.function().args[index].element == ArgSpec::Element::F16
             ? 2
             : sizeof(float);
}

/// `frame`'s argument indices of the cross-attention keys/values and of the
/// self-attention caches, [2 * layer + {0: keys, 1: values}].
static std::pair<std::vector<int>, std::vector<int>>
layerArguments(const CallFrame &frame, int64_t layers) {
  std::vector<int> cross, self;
  for (int64_t l = 0; l < layers; ++l) {
    for (const char *kv : {"key.", "value."}) {
      std::string suffix = kv + std::to_string(l);
      cross.push_back(frame.find("cross_" + suffix));
      self.push_back(frame.find("self_" + suffix));
    }
  }
  return {std::move(cross), std::move(self)};
}

/// The self caches' next capacity: doubled, or straight to the limit where
/// doubling would leave less than half the present capacity to grow into (a
/// last growth by a few positions would copy every cache once more: 32 ->
/// 64 -> 65 becomes 32 -> 65).
static int64_t grownCapacity(int64_t capacity, int64_t limit) {
  int64_t doubled = 2 * capacity;
  return doubled + capacity / 2 >= limit ? limit : doubled;
}

char *BatchDecoder::acquire(int64_t elements, int64_t bytes) {
  int64_t floats = (elements * bytes + sizeof(float) - 1) / sizeof(float);
  return reinterpret_cast<char *>(arena.acquire(floats));
}

void BatchDecoder::noteOutOfMemory(llvm::StringRef what, int64_t bytes) {
  failed = true;
  if (failure)
    return;
  failure = batchOutOfMemory(what, bytes);
}

/// Bytes of one of a group's buffers: `elements` of `bytes` each, rounded
/// up to 64.
static int64_t groupMemberBytes(int64_t elements, int64_t bytes) {
  int64_t each = 0;
  if (llvm::MulOverflow(elements, bytes, each) ||
      llvm::AddOverflow(each, int64_t(63), each))
    llvm::report_bad_alloc_error("tfmc: out of memory");
  return each & ~int64_t(63);
}

/// Whether a group's buffers of `each` bytes share one arena buffer.
/// Larger ones are the pool's huge pages on their own, and taken one by
/// one they fit the idle blocks the encoder left.
static bool sharesOneBuffer(int64_t each) {
  return each <= int64_t(DecoderArena::pooledBytes());
}

std::vector<char *> BatchDecoder::acquireGroup(int64_t count, int64_t elements,
                                               int64_t bytes) {
  std::vector<char *> group;
  int64_t each = groupMemberBytes(elements, bytes), total = 0;
  if (!sharesOneBuffer(each)) {
    for (int64_t i = 0; i < count; ++i) {
      char *buffer = acquire(each, 1);
      if (!buffer) {
        releaseGroup(group);
        return group;
      }
      group.push_back(buffer);
    }
    return group;
  }
  if (count <= 0)
    return group;
  if (llvm::MulOverflow(each, count, total) || total > int64_t(SIZE_MAX / 2))
    llvm::report_bad_alloc_error("tfmc: out of memory");
  // The arena's own buffers, not the pool's blocks: kept from batch to
  // batch and grown in place, where a pool block of a new size each batch
  // (sources differ in length) would be mapped, and its fresh huge pages
  // cleared, again (0.7 ms a batch of the bundled model).
  char *base = reinterpret_cast<char *>(
      arena.acquireOwn((total + sizeof(float) - 1) / sizeof(float)));
  if (!base)
    return group;
  for (int64_t i = 0; i < count; ++i)
    group.push_back(base + i * each);
  return group;
}

void BatchDecoder::releaseGroup(std::vector<char *> &group) {
  // The arena knows a group's buffers by their starts: a shared buffer by
  // the first member's, the others are no buffer of its own and ignored.
  for (char *buffer : group)
    arena.release(reinterpret_cast<float *>(buffer));
  group.clear();
}

BatchDecoder::BatchDecoder(CallFrame &encode, CallFrame &decodeStep,
                           SourceBatch source, const BatchShape &shape,
                           DecoderArena &arena)
    : encodeFrame(encode), frame(decodeStep), arena(arena),
      src(std::move(source)), limit(std::max<int64_t>(shape.maxSteps, 1)),
      slots(src.rows * std::max<int64_t>(shape.slotsPerRow, 1)),
      layers(shape.layers), dModel(shape.dModel), vocab(shape.vocab),
      active(src.rows) {
  capacity = std::clamp<int64_t>(shape.initialPositions, 1, limit);
  // Argument indices of the per-layer buffers, looked up once rather than
  // by name at every step.
  std::tie(crossArgs, selfArgs) = layerArguments(frame, layers);
  if (layers > 0) {
    crossBytes = elementBytes(frame, crossArgs[0]);
    selfBytes = elementBytes(frame, selfArgs[0]);
  }
  // The self caches wait for the first step: by then the encoder's
  // buffers are idle in the pool they come from, and they take those pages
  // rather than fresh ones (DecoderArena.h).
  cross = acquireGroup(2 * layers, src.rows * src.length * dModel, crossBytes);
  if (layers > 0 && cross.empty())
    noteOutOfMemory("the cross-attention keys and values",
                    2 * layers * src.rows * src.length * dModel * crossBytes);
  // Slot r holds row r; the other slots hold no hypothesis yet.
  slotRow.resize(slots);
  for (int64_t s = 0; s < slots; ++s)
    slotRow[s] = static_cast<int32_t>(std::min<int64_t>(s, src.rows - 1));
  slotLengths.resize(slots);
  slotScratch.resize(slots);
  std::copy(src.lengths.data(), src.lengths.data() + src.rows,
            slotLengths.data());
  tokens.resize(slots);
  logits = arena.acquire(slots * vocab);
  if (!logits)
    noteOutOfMemory("the logits", slots * vocab * int64_t(sizeof(float)));
}

BatchDecoder::~BatchDecoder() {
  arena.releaseAll();
  if (release)
    release();
}

void BatchDecoder::bindSources(CallFrame &f, int64_t first, int64_t count) {
  f.bind("src_ids", src.ids.data() + first * src.length, {count, src.length});
  f.bind("src_lengths", src.lengths.data() + first, {count});
  int64_t rowBytes = src.length * dModel * crossBytes;
  for (int64_t l = 0; l < layers; ++l) {
    std::string n = std::to_string(l);
    f.bind("cross_key." + n, cross[2 * l] + first * rowBytes,
           {count, src.length, dModel});
    f.bind("cross_value." + n, cross[2 * l + 1] + first * rowBytes,
           {count, src.length, dModel});
  }
}

llvm::Error BatchDecoder::encode() {
  if (failed)
    return takeError();
  CallFrame &f = encodeFrame;
  // The encoder writes what decode_step reads: their element types agree.
  if (layers > 0 && elementBytes(f, f.find("cross_key.0")) != crossBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "encode and decode_step disagree on the cross-attention key type");
  // The encoder always runs on all the threads: its large layers choose
  // their kernel by the kernel threads (StepWidth.h).
  int parts =
      team ? static_cast<int>(std::clamp<int64_t>(src.rows, 1, team->size()))
           : 1;
  for (int m = 0; m < parts; ++m) {
    int64_t first = src.rows * m / parts,
            count = src.rows * (m + 1) / parts - first;
    bindSources(frameOf(StepKind::Encode, m), first, count);
  }
  return callFrames(StepKind::Encode, parts);
}

void BatchDecoder::useStepWidth(StepWidth &stepWidth, int64_t maxRows) {
  width = &stepWidth;
  narrowMaxRows = maxRows;
  width->startBatch();
}

namespace {
/// Sets the calling thread's library-kernel threads to one for a narrow
/// step without a team (a team's members compute on one each anyway), and
/// back when it goes.
class OneKernelThread {
public:
  explicit OneKernelThread(bool active) : before(active ? kernelThreads() : 0) {
    if (before)
      setKernelThreads(1);
  }
  ~OneKernelThread() {
    if (before)
      setKernelThreads(before);
  }

private:
  int before;
};
} // namespace

llvm::Error BatchDecoder::callFrames(StepKind kind, int parts) {
  if (parts == 1)
    return frameOf(kind, 0).call();
  std::vector<std::string> failures(parts);
  auto body = [&](int member) {
    if (member >= parts)
      return;
    if (llvm::Error e = frameOf(kind, member).call())
      failures[member] = llvm::toString(std::move(e));
  };
  team->run(body);
  for (const std::string &message : failures)
    if (!message.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  return llvm::Error::success();
}

llvm::Error BatchDecoder::takeError() {
  if (!failure)
    return llvm::Error::success();
  return std::move(failure);
}

bool BatchDecoder::growSelfCaches(int64_t positions) {
  int64_t grown = std::min(limit, positions);
  if (grown <= capacity)
    return true;
  profile::Scope scope(profile::Region::CacheMoves);
  int64_t oldRow = capacity * dModel * selfBytes,
          newRow = grown * dModel * selfBytes;
  size_t usedBytes = position * dModel * selfBytes;
  auto copy = [&](char *to, const char *from) {
    for (int64_t s = 0; s < active; ++s)
      std::memcpy(to + s * newRow, from + s * oldRow, usedBytes);
  };
  int64_t count = static_cast<int64_t>(self.size());
  if (!sharesOneBuffer(
          groupMemberBytes(slots * capacity * dModel, selfBytes))) {
    // Buffers of their own, and so the larger new ones too: one at a time,
    // so that each new one can take the pages the one before gave back.
    for (char *&buffer : self) {
      // A cache that cannot grow leaves those before it grown, which is
      // harmless: capacity stays, and no step runs after this.
      char *bigger = acquire(slots * grown * dModel, selfBytes);
      if (!bigger)
        return false;
      copy(bigger, buffer);
      arena.release(reinterpret_cast<float *>(buffer));
      buffer = bigger;
    }
  } else {
    // A shared buffer goes back only once every cache has left it.
    std::vector<char *> bigger =
        acquireGroup(count, slots * grown * dModel, selfBytes);
    if (bigger.empty() && count > 0)
      return false;
    for (int64_t b = 0; b < count; ++b)
      copy(bigger[b], self[b]);
    releaseGroup(self);
    self = std::move(bigger);
  }
  capacity = grown;
  return true;
}

void BatchDecoder::bindSlots(CallFrame &f, int64_t first, int64_t count) {
  f.bind("tokens", tokens.data() + first, {count, 1});
  f.bindScalar("step", position);
  f.bind("src_lengths", slotLengths.data() + first, {count});
  f.bind("cross_rows", slotRow.data() + first, {count});
  // decode_step, decode_greedy and decode_beam take the same arguments in
  // the same order (the search heads append their own).
  int64_t slotBytes = capacity * dModel * selfBytes;
  for (int64_t i = 0; i < 2 * layers; ++i) {
    f.bind(crossArgs[i], cross[i], {src.rows, src.length, dModel});
    f.bind(selfArgs[i], self[i] + first * slotBytes, {count, capacity, dModel});
  }
}

CallFrame &BatchDecoder::frameOf(StepKind kind, int member) {
  if (member == 0)
    return kind == StepKind::Encode   ? encodeFrame
           : kind == StepKind::Greedy ? *greedyFrame
           : kind == StepKind::Beam   ? *beamFrame
                                      : frame;
  const MemberFrames &m = members[member - 1];
  return kind == StepKind::Encode   ? *m.encode
         : kind == StepKind::Greedy ? *m.greedy
         : kind == StepKind::Beam   ? *m.beam
                                    : *m.step;
}

void BatchDecoder::useTeam(StepTeam &stepTeam,
                           std::vector<MemberFrames> others) {
  if (static_cast<int>(others.size()) + 1 != stepTeam.size())
    return;
  // Each member's frames must be of the same functions as this decoder's
  // (same argument indices) and cover the search heads it uses.
  for (const MemberFrames &m : others) {
    if (!m.encode || !m.step ||
        layerArguments(*m.step, layers) != std::make_pair(crossArgs, selfArgs))
      return;
    if ((greedyFrame && !m.greedy) || (beamFrame && !m.beam))
      return;
  }
  team = &stepTeam;
  members = std::move(others);
}

bool BatchDecoder::runStep(
    StepKind kind, llvm::ArrayRef<int32_t> next,
    llvm::function_ref<void(CallFrame &, int64_t, int64_t)> bindOwn) {
  if (failed)
    return false;
  if (self.empty() && layers > 0) {
    self = acquireGroup(2 * layers, slots * capacity * dModel, selfBytes);
    if (self.empty()) {
      noteOutOfMemory("the self-attention caches",
                      2 * layers * slots * capacity * dModel * selfBytes);
      return false;
    }
  }
  if (position >= capacity) {
    int64_t grown = grownCapacity(capacity, limit);
    if (!growSelfCaches(grown)) {
      noteOutOfMemory("the self-attention caches",
                      2 * layers * slots * grown * dModel * selfBytes);
      return false;
    }
  }
  std::copy(next.begin(), next.end(), tokens.data());
  auto start = std::chrono::steady_clock::now();
  rows += active;
  // With a team, every step runs on it (a member per slot while there are
  // fewer slots than members), unless the StepWidth says one thread (only
  // for steps whose results do not depend on it, and that would run on
  // more than one: a team's step of one slot runs on its first member).
  bool widthApplies =
      width && active <= narrowMaxRows && (!team || active >= 2);
  bool narrow = widthApplies && width->narrow();
  int parts =
      !team || narrow
          ? 1
          : static_cast<int>(std::clamp<int64_t>(active, 1, team->size()));
  // Contiguous ranges of slots, as even as they go.
  for (int m = 0; m < parts; ++m) {
    int64_t first = active * m / parts,
            count = active * (m + 1) / parts - first;
    CallFrame &f = frameOf(kind, m);
    bindSlots(f, first, count);
    bindOwn(f, first, count);
  }
  int64_t switchesBefore = widthApplies ? StepWidth::involuntarySwitches() : 0;
  llvm::Error called = [&] {
    OneKernelThread one(narrow && !team);
    return callFrames(kind, parts);
  }();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  stepTime += seconds;
  if (widthApplies)
    width->afterStep(seconds,
                     StepWidth::involuntarySwitches() - switchesBefore);
  ++position;
  if (!called)
    return true;
  // Keep the first failure; the search still runs to its end, without
  // steps.
  failed = true;
  if (!failure)
    failure = std::move(called);
  else
    llvm::consumeError(std::move(called));
  return false;
}

const float *BatchDecoder::step(llvm::ArrayRef<int32_t> next) {
  auto bindOwn = [&](CallFrame &f, int64_t first, int64_t count) {
    f.bind("logits", logits + first * vocab, {count, 1, vocab});
  };
  // On failure the search goes on over defined (if meaningless) logits;
  // the batch then fails with the error.
  if (!runStep(StepKind::Logits, next, bindOwn))
    std::fill(logits, logits + active * vocab, 0.0f);
  return logits;
}

void BatchDecoder::useGreedyStep(CallFrame &greedy, const SpecialIds &special) {
  // The per-layer argument indices were looked up in decode_step; a
  // decode_greedy that does not share them is not used (greedy search then
  // takes decode_step's logits).
  if (layerArguments(greedy, layers) != std::make_pair(crossArgs, selfArgs))
    return;
  greedyFrame = &greedy;
  neverIds.resize(special.never.size());
  std::copy(special.never.begin(), special.never.end(), neverIds.data());
  eosId = special.eos;
  allowEosFlags.resize(slots);
  chosen.resize(slots);
}

void BatchDecoder::useBeamStep(CallFrame &beam) {
  // As for decode_greedy; the allowed ids are decode_greedy's, so beam
  // steps need it too.
  if (!greedyFrame ||
      layerArguments(beam, layers) != std::make_pair(crossArgs, selfArgs))
    return;
  beamFrame = &beam;
}

void BatchDecoder::bindChoiceInputs(CallFrame &f, int64_t first,
                                    int64_t count) {
  f.bind("never_ids", neverIds.data(), {static_cast<int64_t>(neverIds.size())});
  f.bindScalar("eos_id", eosId);
  f.bind("allow_eos", allowEosFlags.data() + first, {count});
}

IncrementalDecoder::Candidates
BatchDecoder::beamStep(llvm::ArrayRef<int32_t> next,
                       llvm::ArrayRef<int32_t> allowEos, int64_t count) {
  if (!beamFrame)
    return {};
  std::copy(allowEos.begin(), allowEos.end(), allowEosFlags.data());
  if (static_cast<int64_t>(candidateIds.size()) < slots * count) {
    candidateValues.resize(slots * count);
    candidateIds.resize(slots * count);
  }
  auto bindOwn = [&](CallFrame &f, int64_t first, int64_t n) {
    bindChoiceInputs(f, first, n);
    f.bindScalar("candidates", count);
    f.bind("top_values", candidateValues.data() + first * count, {n, count});
    f.bind("top_ids", candidateIds.data() + first * count, {n, count});
  };
  // On failure no slot has a candidate (the rows end); the batch then
  // fails with the error.
  if (!runStep(StepKind::Beam, next, bindOwn))
    std::fill(candidateIds.data(), candidateIds.data() + active * count, -1);
  return {candidateValues.data(), candidateIds.data()};
}

const int32_t *BatchDecoder::greedyStep(llvm::ArrayRef<int32_t> next,
                                        llvm::ArrayRef<int32_t> allowEos) {
  if (!greedyFrame)
    return nullptr;
  std::copy(allowEos.begin(), allowEos.end(), allowEosFlags.data());
  auto bindOwn = [&](CallFrame &f, int64_t first, int64_t count) {
    bindChoiceInputs(f, first, count);
    f.bind("best_tokens", chosen.data() + first, {count});
  };
  // On failure every slot chooses nothing (-1: the row ends); the batch
  // then fails with the error.
  if (!runStep(StepKind::Greedy, next, bindOwn))
    std::fill(chosen.data(), chosen.data() + active, -1);
  return chosen.data();
}

void BatchDecoder::reorder(llvm::ArrayRef<int64_t> sources) {
  auto n = static_cast<int64_t>(sources.size());
  if (n > slots)
    llvm::report_fatal_error("tfmc: more hypotheses than decoder slots");
  {
    profile::Scope scope(profile::Region::CacheMoves);
    moveSelfCaches(sources);
  }
  // Lengths and rows follow their hypotheses.
  for (Buffer<int32_t> *perSlot : {&slotLengths, &slotRow}) {
    std::copy(perSlot->data(), perSlot->data() + active, slotScratch.begin());
    for (int64_t i = 0; i < n; ++i)
      (*perSlot)[i] = slotScratch[sources[i]];
  }
  active = n;
}

void BatchDecoder::moveSelfCaches(llvm::ArrayRef<int64_t> sources) {
  auto n = static_cast<int64_t>(sources.size());
  int64_t rowSize = capacity * dModel * selfBytes; // bytes per slot
  size_t usedBytes = position * dModel * selfBytes;
  if (slots == src.rows) {
    // Greedy decoders only compact: every source at or after its
    // destination, none continued twice.
    std::vector<char> taken(active, 0);
    for (int64_t i = 0; i < n; ++i)
      if (sources[i] < i || taken[sources[i]]++)
        llvm::report_fatal_error("tfmc: a greedy decoder was asked to fork");
  }
  // Each destination copied once, in an order that reads every slot before
  // it is overwritten (SlotMoves.h). (Until 2026-12-05 every slot that
  // another continued and that was itself overwritten went to a scratch
  // copy of all the caches first, and back: on the dev set at beam 4, 947
  // MB of copies, and a scratch area as large as the caches, in fresh
  // pages; now decoding is 1.07x faster, peak RSS 237 -> 201 MB.)
  std::vector<SlotMove> order = planSlotMoves(sources, active);
  bool saves = std::any_of(order.begin(), order.end(), [](const SlotMove &m) {
    return m.to == kSpareSlot;
  });
  if (saves && spare.size() < self.size() * usedBytes)
    spare.resize(self.size() * usedBytes);
  for (size_t b = 0; b < self.size(); ++b) {
    // The spare is there only when a cycle needs it (offsetting its null
    // data() would be undefined).
    char *data = self[b],
         *keep = saves ? spare.data() + b * usedBytes : nullptr;
    for (const SlotMove &m : order)
      std::memcpy(m.to == kSpareSlot ? keep : data + m.to * rowSize,
                  m.from == kSpareSlot ? keep : data + m.from * rowSize,
                  usedBytes);
  }
}
