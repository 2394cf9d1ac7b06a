//===- StepWidth.h - all of the threads, or one, for a decoder step -*- C++
//-*-===//
//
// With --threads N a batch's decoder steps run on all N threads (a
// StepTeam, or one thread whose library kernels split their columns): each
// step meets at every layer, so it goes at the pace of its slowest thread.
// On a machine that other processes share, the thread whose core they take
// holds the others at every layer: with one busy process beside it on a
// 2-core host, two threads decoded a batch of 16 at 0.72x and a batch of
// 4 at 0.43x the speed of one (base model, AMD EPYC). A StepWidth watches
// for that and runs the steps on the calling thread alone while it lasts.
//
//  * Evidence: the process's involuntary context switches (getrusage) per
//    second of decoding. A thread that has its core to itself is not
//    preempted; one that shares it is, every few milliseconds (idle host:
//    25-41 a second with two threads; one busy process beside: 128-196).
//  * Trial: evidence alone does not say that one thread is faster (a
//    lighter load beside may still leave two threads ahead), so it only
//    starts a trial of a few steps on one thread, whose times are set
//    against the steps just before; the faster width is kept.
//  * On one thread, trials of all the threads come back on a schedule (the
//    other core may have freed up: nothing on the one thread says so).
//  * A trial that loses doubles the wait before the next (up to
//    kMaxBackoff seconds), so a machine where the evidence misleads pays a
//    few steps every few seconds; a switch starts the wait again from the
//    shortest.
//
// Translations are the same at either width: rows are independent, and the
// kernels compute each output from its row and column alone. The state
// lives across batches (Session keeps one); only step times of the same
// batch are compared, and a batch's first steps (fresh pages) are left out.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_STEPWIDTH_H
#define RUNTIME_SESSION_STEPWIDTH_H

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::runtime {

class StepWidth {
public:
  /// Auto: as above; All: every step on all the threads (as before
  /// 2026-12-05); One: every step on one thread; Alternate: every other
  /// step on one thread (for tests: the switch must not change a result).
  enum class Policy { Auto, All, One, Alternate };
  /// TFMC_STEP_WIDTH=auto|all|one|alternate (unset: auto); an unknown
  /// value gives auto and one `note:` line on stderr, once per process.
  static Policy environmentPolicy();
  /// The policy for a TFMC_STEP_WIDTH value (null: unset); `note` gets the
  /// line for an unknown one.
  static Policy policyFor(const char *value, std::string &note);

  explicit StepWidth(Policy policy = environmentPolicy()) : policy(policy) {}

  /// Whether the next step (or encoder call) runs on one thread.
  bool narrow() const {
    switch (policy) {
    case Policy::All:
      return false;
    case Policy::One:
      return true;
    case Policy::Alternate:
      return stepCount % 2 == 1;
    case Policy::Auto:
      break;
    }
    return trialLeft > 0 ? !oneThread : oneThread;
  }

  /// A new batch: its steps are not compared with the last batch's.
  void startBatch();

  /// After each step: how long it took, when it ended (seconds on a
  /// steady clock) and the process's involuntary context switches so far.
  void afterStep(double stepSeconds, double now, int64_t switches);

  /// The process's involuntary context switches so far (getrusage).
  static int64_t involuntarySwitches();

  /// Steps run on one thread (trials included) since the StepWidth began.
  int64_t narrowSteps() const { return narrowCount; }

  /// Steps at the start of a batch left out of every comparison.
  static constexpr int kWarmSteps = 3;
  /// Steps compared on each side: the trial's, and the kept width's just
  /// before it (typical()).
  static constexpr int kCompared = 6;
  /// Preemptions a second of decoding at or above which all the threads
  /// are tried against one.
  static constexpr double kSwitchRate = 90;
  /// ... measured over this long, or over the time these many take (a
  /// shared machine shows sooner; an idle one sees fewer than 10 in 0.2 s
  /// but for bursts of a few, as when threads start).
  static constexpr double kEvidenceSeconds = 0.2;
  static constexpr int64_t kEvidenceSwitches = 24;
  /// A trial wins only when its typical step is this much shorter.
  static constexpr double kMargin = 0.95;
  /// Seconds from a trial to the next one, at least: doubled after each
  /// trial that loses, from the shortest after a switch.
  static constexpr double kMinBackoff = 0.1, kMaxBackoff = 6.4;

private:
  /// A step time typical of `v`: what the comparisons compare.
  static double typical(std::vector<double> v);
  /// Ends a trial at `now`: keeps the faster width.
  void settleTrial(double now);

  Policy policy;
  // Kept across batches.
  bool oneThread = false;
  int64_t stepCount = 0;
  double backoff = kMinBackoff;
  /// When the next trial may start (steady clock, seconds).
  double nextTrial = 0;
  int64_t narrowCount = 0;

  // This batch's.
  int warm = 0;
  /// The kept width's last step times (at most kCompared).
  std::vector<double> recent;
  /// The running trial's step times, and its steps still to run.
  std::vector<double> trial;
  int trialLeft = 0;
  /// Where the evidence window started: time and switches (negative time:
  /// not yet).
  double evidenceStart = -1;
  int64_t switchesAtStart = 0;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_STEPWIDTH_H
