//===- CompiledCallTest.cpp - compiled code that runs out of memory -------===//
//
// callCompiled() with stand-ins for compiled code that take their buffers
// through compiled code's malloc (bufferPoolSymbols): an allocation that
// fails ends the call at once with its size, the blocks the call held go
// back to the pool, and the next call runs as before; a step-team member
// that runs out, before or after meetings, leaves the others to finish
// alone, without a hang.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/CompiledCall.h"
#include "runtime/kernels/KernelAbi.h"
#include "runtime/kernels/StepTeam.h"

#include "gtest/gtest.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace tfmc::runtime;

namespace {

using MallocFn = void *(*)(size_t);
using FreeFn = void (*)(void *);

/// Compiled code's malloc and free, as the JIT resolves them.
MallocFn compiledCodeMalloc() {
  for (auto &[name, fn] : bufferPoolSymbols())
    if (name == "malloc")
      return reinterpret_cast<MallocFn>(fn);
  return nullptr;
}
FreeFn compiledCodeFree() {
  for (auto &[name, fn] : bufferPoolSymbols())
    if (name == "free")
      return reinterpret_cast<FreeFn>(fn);
  return nullptr;
}

/// More than the pool hands out: its allocation fails on any machine.
constexpr size_t kTooMuch = size_t(1) << 50;

/// The stand-in's arguments, packed as a compiled entry's are.
struct StepArguments {
  size_t lastRequest = 0;
  bool reachedEnd = false;
  /// Meetings to attempt before the last request, and after it; whether
  /// each found the others (and published with them).
  int meetingsBefore = 0, meetingsAfter = 0;
  std::vector<bool> met;
};

/// A library kernel's meeting, as compiled code reaches one.
void meetTeam(StepArguments &args, const void *input) {
  int member = -1;
  StepTeam *team = StepTeam::current(member);
  TeamOffer offer;
  static const int layer = 0;
  offer.layer = &layer;
  offer.rows = 1;
  offer.input = input;
  const TeamOffer *offers = nullptr;
  bool met = team && team->meet(offer, offers) && team->publish(input);
  args.met.push_back(met);
}

/// A compiled function's shape: a few live buffers (heap and mapped), one
/// freed on the way, then a request of `lastRequest` bytes, then the rest
/// freed.
void stepStandIn(void **packed) {
  auto *args = static_cast<StepArguments *>(packed[0]);
  MallocFn allocate = compiledCodeMalloc();
  FreeFn release = compiledCodeFree();
  auto *small = static_cast<char *>(allocate(1000));
  auto *mapped = static_cast<char *>(allocate(size_t(8) << 20));
  auto *brief = static_cast<char *>(allocate(5000));
  std::memset(small, 1, 1000);
  std::memset(mapped, 1, size_t(8) << 20);
  brief[0] = 1;
  release(brief);
  for (int m = 0; m < args->meetingsBefore; ++m)
    meetTeam(*args, small);
  auto *last = static_cast<char *>(allocate(args->lastRequest));
  last[0] = 1;
  release(last);
  for (int m = 0; m < args->meetingsAfter; ++m)
    meetTeam(*args, small);
  release(mapped);
  release(small);
  args->reachedEnd = true;
}

size_t callStandIn(StepArguments &args) {
  void *packed[] = {&args};
  return callCompiled(&stepStandIn, packed);
}

/// The pool's counters once a call has run to its end (its blocks idle).
PoolCounters countersAfterAWholeCall() {
  StepArguments warm;
  warm.lastRequest = 4096;
  EXPECT_EQ(callStandIn(warm), 0u);
  return bufferPoolCounters();
}

/// A call that ended at its last request has given its blocks back.
void expectEndedAndGivenBack(const StepArguments &args,
                             const PoolCounters &before) {
  EXPECT_FALSE(args.reachedEnd);
  PoolCounters after = bufferPoolCounters();
  EXPECT_EQ(after.liveMapped, before.liveMapped);
  EXPECT_EQ(after.liveHeap, before.liveHeap);
}

TEST(CompiledCall, RunsToTheEnd) {
  StepArguments args;
  args.lastRequest = 4096;
  EXPECT_EQ(callStandIn(args), 0u);
  EXPECT_TRUE(args.reachedEnd);
}

TEST(CompiledCall, FailedAllocationEndsTheCallAndFreesItsBlocks) {
  PoolCounters before = countersAfterAWholeCall();
  StepArguments args;
  args.lastRequest = kTooMuch;
  EXPECT_EQ(callStandIn(args), kTooMuch);
  expectEndedAndGivenBack(args, before);
  // The thread's next call starts afresh.
  StepArguments next;
  next.lastRequest = 4096;
  EXPECT_EQ(callStandIn(next), 0u);
  EXPECT_TRUE(next.reachedEnd);
  EXPECT_EQ(bufferPoolCounters().liveMapped, before.liveMapped);
}

TEST(CompiledCall, OutsideACallMallocFailsAsMallocDoes) {
  MallocFn allocate = compiledCodeMalloc();
  EXPECT_EQ(allocate(kTooMuch), nullptr);
  void *block = allocate(100);
  ASSERT_NE(block, nullptr);
  compiledCodeFree()(block);
}

TEST(CompiledCall, StepTeamMemberThatRunsOutLeavesTheOthersAlone) {
  StepTeam team(2);
  for (int failing : {0, 1}) {
    // Both members meet once, then one runs out; the other's next
    // meetings find nobody.
    StepArguments args[2];
    size_t results[2] = {1, 1};
    auto body = [&](int member) {
      args[member].meetingsBefore = 1;
      args[member].meetingsAfter = member == failing ? 0 : 2;
      args[member].lastRequest = member == failing ? kTooMuch : 4096;
      void *packed[] = {&args[member]};
      results[member] = callCompiled(&stepStandIn, packed);
    };
    team.run(body);
    EXPECT_EQ(results[failing], kTooMuch);
    EXPECT_FALSE(args[failing].reachedEnd);
    EXPECT_EQ(args[failing].met, std::vector<bool>{true});
    EXPECT_EQ(results[1 - failing], 0u);
    EXPECT_TRUE(args[1 - failing].reachedEnd);
    EXPECT_EQ(args[1 - failing].met, (std::vector<bool>{true, false, false}));
  }
}

/// A mapping the system refuses (here: beyond the address space the test
/// leaves the process), not one the pool refuses by its size: the call ends
/// as well, and the failure leaves the pool's peak, which bounds the idle
/// blocks it keeps, as it was.
TEST(CompiledCall, RefusedMappingEndsTheCallAndLeavesThePeak) {
  PoolCounters before = countersAfterAWholeCall();
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = size_t(64) << 30;
  if (saved.rlim_cur != RLIM_INFINITY)
    limited.rlim_cur = std::min(limited.rlim_cur, saved.rlim_cur);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limited), 0);
  StepArguments args;
  args.lastRequest = size_t(1) << 40;
  size_t failed = callStandIn(args);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_EQ(failed, size_t(1) << 40);
  expectEndedAndGivenBack(args, before);
  PoolCounters after = bufferPoolCounters();
  EXPECT_EQ(after.highWater, before.highWater);
  EXPECT_EQ(after.heapHighWater, before.heapHighWater);
}

} // namespace
