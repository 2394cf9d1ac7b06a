//===- StepTeam.h - threads that run one decoder step together --*- C++ -*-===//
//
// With --threads N a decoder step's slots can be cut into N contiguous
// ranges, each run through the compiled step on its own thread. Run apart,
// every thread would stream all of the layer weights from memory for its
// few rows; a batch-16 step of the base model reads ~110 MB of float32
// weights, and two threads reading them twice are bound by the memory
// bandwidth, which the second core does not raise. A StepTeam runs the
// ranges in lockstep instead, and the library kernels meet at every linear
// layer (meet()): each member takes every member's rows and computes a
// share of the layer's columns for all of them (the weights are read
// once), publishes its share (publish()), and copies its own rows of every
// share out. Everything between the layers (attention, norms, the
// search) stays on the member's own rows, in parallel.
//
// Members meet only at the same layer: if their offers name different
// layers (different paths through the compiled code), or a member has
// finished its step while another waits, the meeting fails for everyone
// and each member computes its own rows alone (for the rest of the step
// once a member has finished), so a member never waits for one that will
// not come. Results are the same either way: the kernels compute each
// output from its row and column alone.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_STEPTEAM_H
#define RUNTIME_KERNELS_STEPTEAM_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <vector>

namespace tfmc::runtime {

/// One member's part of a shared layer.
struct TeamOffer {
  /// The layer (its weight's and bias's addresses, and what else tells
  /// its uses apart: activation, storage): members share only the same.
  const void *layer = nullptr;
  const void *bias = nullptr;
  int64_t detail = 0;
  /// The member's rows of input.
  int64_t rows = 0;
  const void *input = nullptr;
  /// Anything else per row the layer needs (a fused search's flags).
  const void *extra = nullptr;
  /// Set by publish(): the member's share of the results, for every row.
  const void *result = nullptr;
};

class StepTeam {
public:
  /// A team of `members` threads: the thread that creates the team and
  /// calls run() is member 0, the others are started here and wait for
  /// work until the team goes. Where the process may run on at least
  /// `members` cores, each member is pinned to one of them (member 0, to
  /// the core it is on, until the team is destroyed on its thread).
  explicit StepTeam(int members);
  ~StepTeam();
  StepTeam(const StepTeam &) = delete;
  StepTeam &operator=(const StepTeam &) = delete;

  int size() const { return members; }

  /// Runs body(context, member) on every member at once (with one library
  /// kernel thread each) and returns when all have returned.
  void run(void (*body)(void *context, int member), void *context);
  template <typename Body> void run(Body &body) {
    run([](void *c, int member) { (*static_cast<Body *>(c))(member); }, &body);
  }

  /// The cores the calling thread may run on: a team of more members
  /// cannot give each its own (its members would serialise).
  static int coresHere();

  /// The team whose run() the calling thread is in, and its member number;
  /// nullptr outside run().
  static StepTeam *current(int &member);

  /// Offers the calling member's part of a layer and waits for the others'.
  /// True: all members are at the same layer; `offers` then lists every
  /// member's offer, in member order, until the member's next meet().
  /// False: the caller computes its own rows alone. What the offer points
  /// to must stay as it is until the member's publish() returns (or its
  /// meet() failed); its published result until its next meet() returns.
  bool meet(const TeamOffer &mine, const TeamOffer *&offers);
  /// After a successful meet(): publishes the member's share of the
  /// results and waits until every member has published (their `result`s
  /// are then in `offers`). False (the team broke up; no result may be
  /// read): the caller computes its own rows alone.
  bool publish(const void *result);

private:
  /// Waits until every member has arrived; false when a member finished
  /// its run() body instead (the team stays broken until the next run()).
  bool arriveAndWait();
  void helper(int member);
  /// A core per member (empty: too few to pin).
  std::vector<int> memberCpus() const;
  static void pinTo(pthread_t thread, int cpu);
  /// Bumps `events` and wakes its sleepers: after anything a waiter may
  /// wait for (a barrier passed, a member finished).
  void signal();
  /// Returns when done() holds: spins for `spinTime`, then sleeps on
  /// `events`.
  template <typename Done>
  void waitUntil(Done done, std::chrono::microseconds spinTime = kSpinTime);
  /// How long a waiting member spins before it sleeps: the members of a
  /// step reach a layer within microseconds of each other when each has a
  /// core. Beyond that a member sleeps in the kernel (futex) rather than
  /// spinning or yielding, so a core shared with other work goes to the
  /// member that is late: yielding handed whole time slices to the other
  /// processes, and on a 2-core host with two niced trainings running a
  /// batch-8 translation took 2.2-2.6 s on two threads against 0.7 s on
  /// one.
  static constexpr std::chrono::microseconds kSpinTime{2000};

  const int members;
  /// Offers by barrier generation modulo 3: a member may offer for the
  /// next layer while another still reads this one's results (a meeting
  /// takes one generation, or two with publish()).
  std::vector<TeamOffer> offers[3];
  std::atomic<int> arrived{0};
  std::atomic<uint32_t> generation{0};
  /// Members whose body has returned in this run().
  std::atomic<int> finished{0};
  std::atomic<bool> broken{false};
  /// The futex word waiters sleep on, and how many do.
  std::atomic<uint32_t> events{0};
  std::atomic<int> sleepers{0};

  // Work handed to the helper threads.
  void (*body)(void *, int) = nullptr;
  void *context = nullptr;
  std::atomic<uint64_t> runs{0};
  std::atomic<bool> stopping{false};
  std::vector<std::thread> helpers;
  /// Member 0's cores before it was pinned.
  cpu_set_t callerCpus;
  bool pinned = false;
};

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_STEPTEAM_H
