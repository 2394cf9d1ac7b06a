//===- StepTeam.cpp - threads that run one decoder step together ----------===//
#include "runtime/kernels/StepTeam.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>

using namespace tfmc::runtime;

namespace {

thread_local StepTeam *currentTeam = nullptr;
thread_local int currentMember = 0;
/// The generation of the calling member's last successful meet().
thread_local uint32_t meetingGeneration = 0;

/// Busy-wait rounds before a waiting thread yields its core: a decoder
/// step's layers are microseconds to a millisecond apart, and the members
/// are on cores of their own.
constexpr int kSpins = 1 << 14;

/// Sets the calling thread's team for the duration of a body.
class Membership {
public:
  Membership(StepTeam *team, int member) {
    currentTeam = team;
    currentMember = member;
  }
  ~Membership() { currentTeam = nullptr; }
};

} // namespace

StepTeam::StepTeam(int members) : members(std::max(members, 1)) {
  for (auto &o : offers)
    o.resize(this->members);
  for (int m = 1; m < this->members; ++m)
    helpers.emplace_back([this, m] { helper(m); });
}

StepTeam::~StepTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    runs.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  for (std::thread &t : helpers)
    t.join();
}

StepTeam *StepTeam::current(int &member) {
  member = currentMember;
  return currentTeam;
}

void StepTeam::helper(int member) {
  uint64_t seen = 0;
  for (;;) {
    // Steps follow each other closely: spin a little before sleeping.
    for (int spin = 0;
         spin < kSpins && runs.load(std::memory_order_acquire) == seen; ++spin)
      _mm_pause();
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return runs.load(std::memory_order_acquire) != seen;
      });
      if (stopping)
        return;
      seen = runs.load(std::memory_order_acquire);
    }
    {
      Membership in(this, member);
      setKernelThreads(1);
      body(context, member);
    }
    finished.fetch_add(1, std::memory_order_acq_rel);
  }
}

void StepTeam::run(void (*work)(void *, int), void *data) {
  // Every member is idle here: the barrier starts afresh.
  arrived.store(0, std::memory_order_relaxed);
  finished.store(0, std::memory_order_relaxed);
  broken.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex);
    body = work;
    context = data;
    runs.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  int threads = kernelThreads();
  {
    Membership in(this, 0);
    setKernelThreads(1);
    work(data, 0);
  }
  setKernelThreads(threads);
  finished.fetch_add(1, std::memory_order_acq_rel);
  for (int spin = 0; finished.load(std::memory_order_acquire) < members;
       ++spin) {
    if (spin < kSpins)
      _mm_pause();
    else
      std::this_thread::yield();
  }
}

bool StepTeam::arriveAndWait() {
  if (broken.load(std::memory_order_acquire))
    return false;
  uint32_t g = generation.load(std::memory_order_acquire);
  if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == members) {
    arrived.store(0, std::memory_order_relaxed);
    generation.store(g + 1, std::memory_order_release);
    return true;
  }
  for (int spin = 0; generation.load(std::memory_order_acquire) == g;
       ++spin) {
    if (finished.load(std::memory_order_acquire) > 0) {
      // A member that passed this barrier and then finished has moved the
      // generation on before it counted itself finished.
      if (generation.load(std::memory_order_acquire) != g)
        return true;
      broken.store(true, std::memory_order_release);
      return false;
    }
    if (spin < kSpins)
      _mm_pause();
    else
      std::this_thread::yield();
  }
  return true;
}

bool StepTeam::meet(const TeamOffer &mine, const TeamOffer *&all) {
  if (members == 1 || broken.load(std::memory_order_acquire))
    return false;
  int member = currentMember;
  uint32_t g = generation.load(std::memory_order_acquire);
  std::vector<TeamOffer> &slot = offers[g % 3];
  slot[member] = mine;
  slot[member].result = nullptr;
  if (!arriveAndWait())
    return false;
  for (const TeamOffer &o : slot)
    if (o.layer != mine.layer)
      return false;
  meetingGeneration = g;
  all = slot.data();
  return true;
}

bool StepTeam::publish(const void *result) {
  offers[meetingGeneration % 3][currentMember].result = result;
  return arriveAndWait();
}
