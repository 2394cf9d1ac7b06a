//===- StepWidth.h - a decoder step on all the threads or one ---*- C++ -*-===//
//
// With --threads N a batch's decoder steps may run on all N threads (a
// StepTeam, or one thread whose library kernels split their columns): such
// a step meets at every layer, so it goes at the pace of its slowest
// thread. On a machine that other processes share, the thread whose core
// they take holds the others at every layer: with one busy process beside
// it on a 2-core host, two threads decoded a batch of 16 at 0.72x and a
// batch of 4 at 0.43x the speed of one (base model, AMD EPYC). A StepWidth
// watches for that and runs the steps on the calling thread alone while it
// lasts.
//
//  * Evidence: the process's involuntary context switches (getrusage)
//    during the steps, per second of them. A thread that has its core to
//    itself is rarely preempted; one that shares it is, every few
//    milliseconds (2 threads, idle host: 25-41 a second; one busy process
//    beside: 128-196). Counted over the whole process, it also sees one
//    preempted member among many.
//  * Trial: evidence alone does not say that one thread is faster (a
//    lighter load beside may leave all the threads ahead), so it starts a
//    trial: steps alternate between the two widths, and the pairs' times
//    (each pair two neighbouring steps of one batch, so of about the same
//    rows and cache length) decide; the faster width is kept. A step of
//    the other width that takes kAbort times the last step of the kept one
//    ends the trial at once (all the threads on a shared core can take a
//    time slice to wake up).
//  * On one thread, trials of all the threads come on a schedule (the
//    other core may have freed up: nothing seen from one thread says so).
//  * A trial that loses doubles the wait before the next (up to kMaxBackoff
//    seconds of decoding), so a machine where the evidence misleads pays a
//    few steps every few seconds; a switch starts the wait again from the
//    shortest.
//
// The caller keeps the translations the same at either width: BatchDecoder
// narrows only steps whose layers compute each output from its row and
// column alone whatever the thread count (at most 256 rows: the packed
// kernels), never the encoder (whose large layers choose their kernel by
// the thread count). Trials, evidence and waits run on across batches
// (Session keeps one StepWidth); a batch's first steps (fresh pages) are
// left out.
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

  /// Whether the next step runs on one thread.
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
    // A batch's first steps run at the kept width, in a trial too.
    return inTrial && otherNext && warm >= kWarmSteps ? !oneThread : oneThread;
  }

  /// A new batch: its first steps are not compared.
  void startBatch();

  /// After each step: how long it took and the process's involuntary
  /// context switches during it.
  void afterStep(double seconds, int64_t switches);

  /// The process's involuntary context switches so far (getrusage).
  static int64_t involuntarySwitches();

  /// Steps run on one thread (trials included) since the StepWidth began.
  int64_t narrowSteps() const { return narrowCount; }

  /// Steps at the start of a batch left out of every comparison.
  static constexpr int kWarmSteps = 2;
  /// Pairs of steps (one of each width) a trial compares.
  static constexpr int kPairs = 4;
  /// Steps a trial may take (warm ones included): batches too short to
  /// hold a pair after their first steps would keep it going for ever.
  static constexpr int kTrialSteps = 8 * kPairs;
  /// Preemptions a second of decoding at or above which all the threads
  /// are tried against one.
  static constexpr double kSwitchRate = 90;
  /// ... measured over this much decoding, or over the decoding these many
  /// take (a shared machine shows sooner; an idle one sees fewer than 10 in
  /// 0.2 s).
  static constexpr double kEvidenceSeconds = 0.2;
  static constexpr int64_t kEvidenceSwitches = 24;
  /// The other width wins when its typical step is this much shorter.
  static constexpr double kMargin = 0.95;
  /// ... and has lost at once when one of its steps takes this many times
  /// the kept width's last.
  static constexpr double kAbort = 3;
  /// Seconds of decoding from a trial to the next one, at least: doubled
  /// after each trial that loses, from the shortest after a switch.
  static constexpr double kMinBackoff = 0.1, kMaxBackoff = 6.4;

private:
  /// A step time typical of `v`: what the comparisons compare.
  static double typical(const std::vector<double> &v);
  /// Ends a trial: `won`, the other width is kept from now on.
  void settleTrial(bool won);

  Policy policy;
  bool oneThread = false;
  int64_t stepCount = 0, narrowCount = 0;
  double backoff = kMinBackoff;
  /// Seconds of decoding before the next trial may start.
  double untilTrial = 0;
  /// Evidence so far (steps of the kept width, all the threads).
  double evidenceSeconds = 0;
  int64_t evidenceSwitches = 0;
  /// The running trial: whether its next step is of the other width, the
  /// pair it is in (either step may come first: the order flips from pair
  /// to pair, so that a drift of the step times favours neither), and its
  /// complete pairs' times.
  bool inTrial = false, otherNext = false;
  int trialSteps = 0;
  bool haveOther = false, haveKept = false;
  double pairOther = 0, pairKept = 0;
  std::vector<double> otherTimes, keptTimes;
  /// A step of a running trial.
  void trialStep(double seconds);
  // This batch's.
  int warm = 0;
  /// The kept width's last step (0: none yet in this batch).
  double lastKept = 0;
};

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_STEPWIDTH_H
