//===- StepWidthTest.cpp - a decoder step on all the threads or one -------===//
//
// StepWidth decides from step times and preemption counts; these tests
// feed it a simulated machine (the step times each width takes and the
// preemptions a second, as functions of the simulated time) and check
// what it chooses.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/StepWidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace tfmc::runtime;

namespace {

using Rate = std::function<double(double now)>;

struct Machine {
  Rate wide, narrow, switchesPerSecond;
  /// Steps per batch; each batch's first step takes 20 times as long.
  int64_t batchSteps = 64;
  double now = 0, switches = 0;
  int64_t steps = 0, narrowSteps = 0;

  void run(StepWidth &width, int64_t count) {
    for (int64_t i = 0; i < count; ++i, ++steps) {
      bool first = steps % batchSteps == 0;
      if (first)
        width.startBatch();
      bool one = width.narrow();
      narrowSteps += one;
      double t = (one ? narrow(now) : wide(now)) * (first ? 20 : 1);
      double before = switches;
      switches += switchesPerSecond(now) * t;
      now += t;
      width.afterStep(t, static_cast<int64_t>(switches) -
                             static_cast<int64_t>(before));
    }
  }
  /// Runs until the simulated clock reaches `until`.
  void runUntil(StepWidth &width, double until) {
    while (now < until)
      run(width, 1);
  }
};

Rate constant(double v) {
  return [v](double) { return v; };
}

constexpr double kIdleRate = 35, kSharedRate = 150;

TEST(StepWidth, AnIdleMachineKeepsAllTheThreads) {
  // Two threads twice as fast as one; preemptions at an idle host's rate.
  Machine m{constant(0.004), constant(0.008), constant(kIdleRate)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 20000);
  EXPECT_EQ(m.narrowSteps, 0);
  EXPECT_EQ(width.narrowSteps(), 0);
}

TEST(StepWidth, SharedCoresMoveTheStepsToOneThread) {
  // With another process on one core, two threads are slower than one and
  // preempted often.
  Machine m{constant(0.010), constant(0.006), constant(kSharedRate)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 100);
  EXPECT_TRUE(width.narrow());
  // Later trials of all the threads lose and come ever more rarely: over
  // the next minute, fewer than 2% of the steps.
  int64_t before = m.narrowSteps;
  m.narrowSteps = 0;
  m.run(width, 10000);
  EXPECT_GT(m.narrowSteps, 9800);
  EXPECT_EQ(width.narrowSteps(), before + m.narrowSteps);
}

TEST(StepWidth, AllTheThreadsComeBackWhenTheCoresFreeUp) {
  // Shared for the first 20 s, then idle again.
  double freed = 20;
  Machine m{[&](double now) { return now < freed ? 0.010 : 0.004; },
            constant(0.006),
            [&](double now) { return now < freed ? kSharedRate : kIdleRate; }};
  StepWidth width(StepWidth::Policy::Auto);
  m.runUntil(width, 10);
  EXPECT_TRUE(width.narrow());
  // Trials come at most kMaxBackoff seconds of decoding apart: within
  // that (and a trial's steps) of the cores freeing up, every step is on
  // all the threads again.
  m.runUntil(width, freed + StepWidth::kMaxBackoff + 1);
  int64_t before = m.narrowSteps;
  m.run(width, 5000);
  EXPECT_EQ(m.narrowSteps, before);
}

TEST(StepWidth, EvidenceThatMisleadsCostsFewSteps) {
  // Preempted often, yet two threads stay faster: trials lose and become
  // rare (each waits twice as long as the last, up to kMaxBackoff).
  Machine m{constant(0.005), constant(0.008), constant(200)};
  StepWidth width(StepWidth::Policy::Auto);
  m.runUntil(width, 120);
  EXPECT_FALSE(width.narrow());
  // kPairs narrow steps a trial; after the first few, one trial per
  // kMaxBackoff seconds.
  EXPECT_GT(m.narrowSteps, 0);
  EXPECT_LT(m.narrowSteps,
            StepWidth::kPairs * (8 + 120 / StepWidth::kMaxBackoff));
}

TEST(StepWidth, ShortBatchesSwitchBothWays) {
  // Batches of 8 steps (short sentences): a trial's pairs run on from
  // batch to batch, and so does the evidence.
  double freed = 30;
  Machine m{[&](double now) { return now < freed ? 0.010 : 0.004; },
            constant(0.006),
            [&](double now) { return now < freed ? kSharedRate : kIdleRate; }};
  m.batchSteps = 8;
  StepWidth width(StepWidth::Policy::Auto);
  m.runUntil(width, 10);
  int64_t before = m.narrowSteps;
  m.runUntil(width, freed);
  // Most steps of the shared stretch on one thread (a batch's first steps
  // follow the width in force).
  EXPECT_GT(m.narrowSteps - before, 0.9 * (m.steps - 10 / 0.006));
  m.runUntil(width, freed + StepWidth::kMaxBackoff + 1);
  before = m.narrowSteps;
  m.run(width, 5000);
  EXPECT_EQ(m.narrowSteps, before);
}

TEST(StepWidth, BatchesTooShortForAPairNeverSwitchBlindly) {
  // Three steps a batch (two words and an end), the first two never
  // compared: no pair ever completes. Trials must end (as lost) rather than
  // leave every step at the other width with nothing timed behind it.
  Machine m{constant(0.004), constant(0.010), constant(kSharedRate)};
  m.batchSteps = 3;
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 30000);
  EXPECT_LT(m.narrowSteps, 30000 / 20);
  EXPECT_FALSE(width.narrow());
}

TEST(StepWidth, ATrialIsNotFooledByStepsThatShrink) {
  // Greedy batches lose rows as sentences finish: each step is faster than
  // the one before (here by 12%), and one thread is no faster than all.
  // Comparing a trial's steps against the steps before it would credit the
  // trial with the shrinking; each pair's two steps come in either order,
  // so the shrinking favours neither width.
  int64_t k = 0;
  auto shrinking = [&k](double scale) {
    return [&k, scale](double) {
      return scale * 0.03 * std::pow(0.88, static_cast<double>(k % 64));
    };
  };
  Machine m{shrinking(1.0), shrinking(1.0), constant(kSharedRate)};
  StepWidth width(StepWidth::Policy::Auto);
  for (int i = 0; i < 64 * 200; ++i, ++k)
    m.run(width, 1);
  EXPECT_FALSE(width.narrow());
  EXPECT_LT(m.narrowSteps,
            StepWidth::kPairs * (8 + m.now / StepWidth::kMaxBackoff));
}

TEST(StepWidth, ASlowFirstStepEndsATrial) {
  // On one thread, a trial of all the threads whose first step takes a
  // time slice (a helper thread waking on a busy core) ends there.
  Machine m{constant(0.010), constant(0.006), constant(kSharedRate)};
  StepWidth width(StepWidth::Policy::Auto);
  m.runUntil(width, 5);
  ASSERT_TRUE(width.narrow());
  m.wide = constant(0.100);
  int64_t wideBefore = m.steps - m.narrowSteps;
  m.runUntil(width, 65);
  // One wide step per trial, trials at least kMaxBackoff apart once the
  // waits have grown (about 10 in 60 s, a few more before).
  int64_t wideSteps = m.steps - m.narrowSteps - wideBefore;
  EXPECT_GT(wideSteps, 0);
  EXPECT_LT(wideSteps, 8 + 60 / StepWidth::kMaxBackoff);
}

TEST(StepWidth, StepsThatAlternateAreAveraged) {
  // All the threads alternate between a fast and a slow step (the other
  // process moving between the cores): their mean decides, where a median
  // of alternating times could read either.
  auto alternating = [](double fast, double slow) {
    return
        [fast, slow, k = 0](double) mutable { return ++k % 2 ? fast : slow; };
  };
  // 3 and 9 ms (6 on average) against one thread's 5: one thread.
  Machine m{alternating(0.003, 0.009), constant(0.005), constant(kSharedRate)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 3000);
  EXPECT_GT(m.narrowSteps, 2700);
  // 1 and 7 ms (4 on average) against 5: all the threads.
  Machine n{alternating(0.001, 0.007), constant(0.005), constant(kSharedRate)};
  StepWidth other(StepWidth::Policy::Auto);
  n.run(other, 3000);
  EXPECT_LT(n.narrowSteps, 300);
}

TEST(StepWidth, FixedPolicies) {
  Machine m{constant(0.010), constant(0.006), constant(kSharedRate)};
  StepWidth all(StepWidth::Policy::All);
  m.run(all, 1000);
  EXPECT_EQ(m.narrowSteps, 0);

  Machine n{constant(0.004), constant(0.008), constant(0)};
  StepWidth one(StepWidth::Policy::One);
  n.run(one, 1000);
  EXPECT_EQ(n.narrowSteps, 1000);
  EXPECT_EQ(one.narrowSteps(), 1000);

  Machine a{constant(0.004), constant(0.008), constant(0)};
  StepWidth alternate(StepWidth::Policy::Alternate);
  EXPECT_FALSE(alternate.narrow());
  a.run(alternate, 1000);
  EXPECT_EQ(a.narrowSteps, 500);
}

TEST(StepWidth, PolicyFromItsName) {
  std::string note;
  EXPECT_EQ(StepWidth::policyFor(nullptr, note), StepWidth::Policy::Auto);
  EXPECT_EQ(StepWidth::policyFor("", note), StepWidth::Policy::Auto);
  EXPECT_EQ(StepWidth::policyFor("auto", note), StepWidth::Policy::Auto);
  EXPECT_EQ(StepWidth::policyFor("all", note), StepWidth::Policy::All);
  EXPECT_EQ(StepWidth::policyFor("one", note), StepWidth::Policy::One);
  EXPECT_EQ(StepWidth::policyFor("alternate", note),
            StepWidth::Policy::Alternate);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(StepWidth::policyFor("two", note), StepWidth::Policy::Auto);
  EXPECT_NE(note.find("TFMC_STEP_WIDTH=two"), std::string::npos);
}

} // namespace
