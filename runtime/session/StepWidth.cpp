//===- StepWidth.cpp - a decoder step on all the threads or one -----------===//
#include "runtime/session/StepWidth.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tfmc::runtime;

int64_t StepWidth::involuntarySwitches() {
  rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return usage.ru_nivcsw;
}

StepWidth::Policy StepWidth::policyFor(const char *value, std::string &note) {
  if (!value || !*value || std::strcmp(value, "auto") == 0)
    return Policy::Auto;
  if (std::strcmp(value, "all") == 0)
    return Policy::All;
  if (std::strcmp(value, "one") == 0)
    return Policy::One;
  if (std::strcmp(value, "alternate") == 0)
    return Policy::Alternate;
  note = std::string("note: TFMC_STEP_WIDTH=") + value +
         " is not auto, all, one or alternate; using auto";
  return Policy::Auto;
}

StepWidth::Policy StepWidth::environmentPolicy() {
  static const Policy policy = [] {
    std::string note;
    Policy p = policyFor(std::getenv("TFMC_STEP_WIDTH"), note);
    if (!note.empty())
      std::fprintf(stderr, "%s\n", note.c_str());
    return p;
  }();
  return policy;
}

double StepWidth::typical(const std::vector<double> &v) {
  // The mean, with each time at most twice the median: the steps of a
  // shared machine alternate between fast and slow (a mean, not a median),
  // and one step may take a page fault's or a time slice's worth longer.
  std::vector<double> sorted = v;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                   sorted.end());
  double cap = 2 * sorted[sorted.size() / 2], sum = 0;
  for (double t : v)
    sum += std::min(t, cap);
  return sum / static_cast<double>(v.size());
}

void StepWidth::startBatch() {
  warm = 0;
  lastKept = 0;
  // A pair is two steps of one batch: an unfinished one starts again.
  haveOther = haveKept = false;
  otherNext = otherTimes.size() % 2 == 0;
}

void StepWidth::afterStep(double seconds, int64_t switches) {
  if (narrow())
    ++narrowCount;
  ++stepCount;
  if (policy != Policy::Auto)
    return;
  if (inTrial && ++trialSteps > kTrialSteps) {
    settleTrial(false);
    return;
  }
  if (warm < kWarmSteps) {
    ++warm;
    return;
  }
  if (inTrial) {
    trialStep(seconds);
    return;
  }
  lastKept = seconds;
  untilTrial -= seconds;
  // On one thread, trials of all the threads come on schedule; on all of
  // them, when the evidence says that their cores are shared.
  bool tryOther = oneThread;
  if (!oneThread) {
    evidenceSeconds += seconds;
    evidenceSwitches += switches;
    if (evidenceSeconds >= kEvidenceSeconds ||
        evidenceSwitches >= kEvidenceSwitches) {
      tryOther = static_cast<double>(evidenceSwitches) >=
                 kSwitchRate * evidenceSeconds;
      evidenceSeconds = 0;
      evidenceSwitches = 0;
    }
  }
  if (tryOther && untilTrial <= 0) {
    inTrial = true;
    otherNext = true;
    trialSteps = 0;
    haveOther = haveKept = false;
    otherTimes.clear();
    keptTimes.clear();
  }
}

void StepWidth::trialStep(double seconds) {
  if (otherNext) {
    if (lastKept > 0 && seconds > kAbort * lastKept) {
      settleTrial(false);
      return;
    }
    pairOther = seconds;
    haveOther = true;
  } else {
    pairKept = lastKept = seconds;
    haveKept = true;
  }
  if (!(haveOther && haveKept)) {
    otherNext = !otherNext;
    return;
  }
  otherTimes.push_back(pairOther);
  keptTimes.push_back(pairKept);
  haveOther = haveKept = false;
  if (otherTimes.size() == static_cast<size_t>(kPairs)) {
    settleTrial(typical(otherTimes) < kMargin * typical(keptTimes));
    return;
  }
  // The next pair in the other order.
  otherNext = otherTimes.size() % 2 == 0;
}

void StepWidth::settleTrial(bool won) {
  if (won) {
    oneThread = !oneThread;
    backoff = kMinBackoff;
  } else {
    backoff = std::min(2 * backoff, kMaxBackoff);
  }
  untilTrial = backoff;
  inTrial = otherNext = false;
  lastKept = 0;
  evidenceSeconds = 0;
  evidenceSwitches = 0;
}
