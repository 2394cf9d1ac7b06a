//===- StepTeam.cpp - threads that run one decoder step together ----------===//
#include "runtime/kernels/StepTeam.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>

using namespace tfmc::runtime;

namespace {

thread_local StepTeam *currentTeam = nullptr;
thread_local int currentMember = 0;
/// The generation of the calling member's last successful meet().
thread_local uint32_t meetingGeneration = 0;

/// Sleeps while `word` holds `value` (or until woken).
void futexWait(std::atomic<uint32_t> &word, uint32_t value) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE,
          value, nullptr, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE,
          INT_MAX, nullptr, nullptr, 0);
}

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
  std::vector<int> cpus = memberCpus();
  for (int m = 1; m < this->members; ++m) {
    helpers.emplace_back([this, m] { helper(m); });
    if (!cpus.empty())
      pinTo(helpers.back().native_handle(), cpus[m]);
  }
  if (!cpus.empty()) {
    pinned = pthread_getaffinity_np(pthread_self(), sizeof(callerCpus),
                                    &callerCpus) == 0;
    if (pinned)
      pinTo(pthread_self(), cpus[0]);
  }
}

std::vector<int> StepTeam::memberCpus() const {
  // Members that share a core serialise at every layer, and the kernel's
  // wake-up placement puts a woken member on its waker's core when no core
  // is idle (other processes running): on a 2-core host with two trainings
  // beside it, a 32-sentence batch-8 run took 17 s instead of 1.5 s with
  // both members on one core. Each member gets a core of its own, the
  // caller the one it runs on, when the process may use enough of them.
  cpu_set_t allowed;
  if (members < 2 ||
      pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) != 0)
    return {};
  int here = sched_getcpu();
  std::vector<int> cpus;
  if (here >= 0 && CPU_ISSET(here, &allowed))
    cpus.push_back(here);
  for (int c = 0; c < CPU_SETSIZE && static_cast<int>(cpus.size()) < members;
       ++c)
    if (CPU_ISSET(c, &allowed) && c != here)
      cpus.push_back(c);
  if (static_cast<int>(cpus.size()) < members)
    return {};
  return cpus;
}

int StepTeam::coresHere() {
  cpu_set_t allowed;
  if (pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) != 0)
    return 1;
  return CPU_COUNT(&allowed);
}

void StepTeam::pinTo(pthread_t thread, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(thread, sizeof(one), &one);
}

StepTeam::~StepTeam() {
  stopping.store(true);
  runs.fetch_add(1);
  signal();
  for (std::thread &t : helpers)
    t.join();
  if (pinned)
    pthread_setaffinity_np(pthread_self(), sizeof(callerCpus), &callerCpus);
}

StepTeam *StepTeam::current(int &member) {
  member = currentMember;
  return currentTeam;
}

void StepTeam::signal() {
  events.fetch_add(1);
  if (sleepers.load() > 0)
    futexWakeAll(events);
}

template <typename Done>
void StepTeam::waitUntil(Done done, std::chrono::microseconds spinTime) {
  auto start = std::chrono::steady_clock::now();
  for (int spin = 0; !done(); ++spin) {
    if (spin % 64 != 63 ||
        std::chrono::steady_clock::now() - start < spinTime) {
      _mm_pause();
      continue;
    }
    // Whoever makes done() true does so before it bumps `events`: either
    // this load sees the bump (and done() holds) or the wait returns at
    // once when the bump comes after it.
    sleepers.fetch_add(1);
    uint32_t seen = events.load();
    if (!done())
      futexWait(events, seen);
    sleepers.fetch_sub(1);
  }
}

void StepTeam::helper(int member) {
  uint64_t seen = 0;
  for (;;) {
    // Steps follow each other closely (a search between them): spin
    // longer before sleeping.
    waitUntil([&] { return runs.load() != seen; }, 4 * kSpinTime);
    if (stopping.load())
      return;
    seen = runs.load();
    {
      Membership in(this, member);
      setKernelThreads(1);
      body(context, member);
    }
    finished.fetch_add(1);
    signal();
  }
}

void StepTeam::run(void (*work)(void *, int), void *data) {
  // Every member is idle here: the barrier starts afresh.
  arrived.store(0, std::memory_order_relaxed);
  finished.store(0, std::memory_order_relaxed);
  broken.store(false, std::memory_order_relaxed);
  // Published by the bump of `runs` that the helpers wait for.
  body = work;
  context = data;
  runs.fetch_add(1);
  signal();
  int threads = kernelThreads();
  {
    Membership in(this, 0);
    setKernelThreads(1);
    work(data, 0);
  }
  setKernelThreads(threads);
  finished.fetch_add(1);
  signal();
  waitUntil([&] { return finished.load() == members; });
}

bool StepTeam::arriveAndWait() {
  if (broken.load(std::memory_order_acquire))
    return false;
  uint32_t g = generation.load();
  if (arrived.fetch_add(1) + 1 == members) {
    arrived.store(0);
    generation.store(g + 1);
    signal();
    return true;
  }
  waitUntil([&] { return generation.load() != g || finished.load() > 0; });
  // A member that passed this barrier and then finished has moved the
  // generation on before it counted itself finished.
  if (generation.load() != g)
    return true;
  broken.store(true);
  return false;
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
    if (o.layer != mine.layer || o.bias != mine.bias || o.detail != mine.detail)
      return false;
  meetingGeneration = g;
  all = slot.data();
  return true;
}

bool StepTeam::publish(const void *result) {
  offers[meetingGeneration % 3][currentMember].result = result;
  return arriveAndWait();
}
