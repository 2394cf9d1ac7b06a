//===- StepWidthTest.cpp - all of the threads, or one, for a step
//----------===//
//
// StepWidth decides from step times and preemption counts; these tests
// feed it a simulated machine (a clock, a switch counter and the step
// times each width would take) and check what it chooses.
//
//===----------------------------------------------------------------------===//
#include "runtime/session/StepWidth.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tfmc::runtime;

namespace {

/// A machine on which a step takes `wide` or `narrow` seconds and the
/// process is preempted `switchesPerSecond` times a second, each of them a
/// function of the simulated time.
struct Machine {
  std::function<double(double)> wide, narrow, switchesPerSecond;
  double now = 100;
  double switches = 0;
  int64_t steps = 0, narrowSteps = 0;

  /// Runs `steps` steps in batches of `batchSteps`.
  void run(StepWidth &width, int64_t count, int64_t batchSteps = 64) {
    for (int64_t i = 0; i < count; ++i, ++steps) {
      if (steps % batchSteps == 0)
        width.startBatch();
      bool one = width.narrow();
      narrowSteps += one;
      double t = one ? narrow(now) : wide(now);
      // A batch's first step takes longer (fresh pages): never compared.
      if (steps % batchSteps == 0)
        t *= 20;
      switches += switchesPerSecond(now) * t;
      now += t;
      width.afterStep(t, now, static_cast<int64_t>(switches));
    }
  }
};

std::function<double(double)> constant(double v) {
  return [v](double) { return v; };
}

TEST(StepWidth, AnIdleMachineKeepsAllTheThreads) {
  // Two threads twice as fast as one; preemptions at an idle host's rate.
  Machine m{constant(0.004), constant(0.008), constant(35)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 20000);
  EXPECT_EQ(m.narrowSteps, 0);
  EXPECT_EQ(width.narrowSteps(), 0);
}

TEST(StepWidth, SharedCoresMoveTheStepsToOneThread) {
  // With another process on one core, two threads are slower than one and
  // preempted 150 times a second.
  Machine m{constant(0.010), constant(0.006), constant(150)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 100);
  EXPECT_TRUE(width.narrow());
  // Later trials of all the threads lose, and come ever more rarely: over
  // a minute, fewer than 2% of the steps.
  m.narrowSteps = m.steps = 0;
  m.run(width, 10000);
  EXPECT_GT(m.narrowSteps, 9800);
  EXPECT_GT(width.narrowSteps(), m.narrowSteps);
}

TEST(StepWidth, AllTheThreadsComeBackWhenTheCoresFreeUp) {
  // Shared for the first 20 s, then idle again.
  double freed = 0;
  Machine m{[&](double now) { return now < freed ? 0.010 : 0.004; },
            constant(0.006),
            [&](double now) { return now < freed ? 150.0 : 35.0; }};
  freed = m.now + 20;
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 2000);
  ASSERT_LT(m.now, freed);
  EXPECT_TRUE(width.narrow());
  // Trials come at most kMaxBackoff seconds apart: within that (and a
  // trial's steps) of the cores freeing up, every step is wide again.
  while (m.now < freed + StepWidth::kMaxBackoff + 1)
    m.run(width, 1);
  int64_t before = m.narrowSteps;
  m.run(width, 5000);
  EXPECT_EQ(m.narrowSteps, before);
  EXPECT_FALSE(width.narrow());
}

TEST(StepWidth, EvidenceThatMisleadsCostsFewSteps) {
  // Preempted often, yet two threads stay faster: trials lose and become
  // rare (each waits twice as long as the last, up to kMaxBackoff).
  Machine m{constant(0.005), constant(0.008), constant(200)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 24000); // ~2 minutes
  EXPECT_FALSE(width.narrow());
  // Each trial is kCompared steps; at most one per kMaxBackoff seconds once
  // the waits have grown, plus the few before.
  double minutes = (m.now - 100) / 60;
  EXPECT_LT(m.narrowSteps, StepWidth::kCompared *
                               (12 + 60 * minutes / StepWidth::kMaxBackoff));
  EXPECT_GT(m.narrowSteps, 0);
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
  Machine m{alternating(0.003, 0.009), constant(0.005), constant(150)};
  StepWidth width(StepWidth::Policy::Auto);
  m.run(width, 3000);
  EXPECT_GT(m.narrowSteps, 2700);
  // 1 and 7 ms (4 on average) against 5: all the threads.
  Machine n{alternating(0.001, 0.007), constant(0.005), constant(150)};
  StepWidth other(StepWidth::Policy::Auto);
  n.run(other, 3000);
  EXPECT_LT(n.narrowSteps, 300);
}

TEST(StepWidth, FixedPolicies) {
  Machine m{constant(0.010), constant(0.006), constant(150)};
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
