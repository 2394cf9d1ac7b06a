//===- StepWidth.cpp - all of the threads, or one, for a decoder step -----===//
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

double StepWidth::typical(std::vector<double> v) {
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
  recent.clear();
  trial.clear();
  trialLeft = 0;
  evidenceStart = -1;
}

void StepWidth::afterStep(double seconds, double now, int64_t switches) {
  if (narrow())
    ++narrowCount;
  ++stepCount;
  if (policy != Policy::Auto)
    return;
  if (warm < kWarmSteps || trialLeft > 0) {
    if (warm < kWarmSteps) {
      ++warm;
    } else {
      trial.push_back(seconds);
      if (--trialLeft == 0)
        settleTrial(now);
    }
    // The evidence is of the kept width's steps only.
    evidenceStart = now;
    switchesAtStart = switches;
    return;
  }
  recent.push_back(seconds);
  if (recent.size() > static_cast<size_t>(kCompared))
    recent.erase(recent.begin());
  // On one thread, trials of all the threads come on schedule; on all of
  // them, when the evidence says that their cores are shared.
  bool tryOther = oneThread;
  if (!oneThread && (now - evidenceStart >= kEvidenceSeconds ||
                     switches - switchesAtStart >= kEvidenceSwitches)) {
    double rate =
        static_cast<double>(switches - switchesAtStart) / (now - evidenceStart);
    tryOther = rate >= kSwitchRate;
    evidenceStart = now;
    switchesAtStart = switches;
  }
  if (tryOther && now >= nextTrial &&
      recent.size() == static_cast<size_t>(kCompared)) {
    trialLeft = kCompared;
    trial.clear();
  }
}

void StepWidth::settleTrial(double now) {
  if (typical(trial) < kMargin * typical(recent)) {
    oneThread = !oneThread;
    backoff = kMinBackoff;
    recent = trial;
  } else {
    backoff = std::min(2 * backoff, kMaxBackoff);
  }
  nextTrial = now + backoff;
  trial.clear();
}
