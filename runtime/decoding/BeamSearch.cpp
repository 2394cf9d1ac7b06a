//===- BeamSearch.cpp - beam search with length normalisation -------------===//
#include "runtime/decoding/BeamSearch.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/kernels/TopKScan.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace tfmc::runtime;

namespace {

struct Active {
  std::vector<int32_t> ids;
  double score = 0; // sum of log-probabilities
  int64_t slot = 0; // decoder slot holding its KV cache
};

struct Finished {
  Hypothesis hypothesis;
  int64_t order = 0; // finishing order, for ties
};

struct Candidate {
  double score;
  int64_t hypothesis; // index in the row's active list
  int32_t token;
};

struct Row {
  std::vector<Active> active;
  std::vector<Finished> finished;
  int64_t finishOrder = 0;
  bool done = false;
};

/// How score x ranks against y: 1 above, -1 below, 0 tied. A NaN ranks above
/// every number (as torch.sort and torch.topk order it) and ties with another
/// NaN: a row whose logits went NaN returns a NaN-scored hypothesis, and the
/// line is warned about, rather than a finite one that finished before (and the
/// comparisons stay a strict weak order for the sorts).
int compareScores(double x, double y) {
  bool xn = std::isnan(x), yn = std::isnan(y);
  if (xn || yn)
    return xn == yn ? 0 : xn ? 1 : -1;
  return x > y ? 1 : x < y ? -1 : 0;
}

double normalised(double score, int64_t length, double alpha) {
  return score / std::pow(double(length), alpha);
}

/// Gives the continuing rows' hypotheses (`continuing`: their indices in
/// `state`, ascending) the decoder slots 0 .. N - 1, N their number: each
/// slot's parent slot goes to `sources` and its last token to `tokens`. A
/// hypothesis whose parent's slot is below N takes it when no hypothesis
/// before it (rows in order, each row's in rank order) did: its KV cache is
/// already there, so the decoder copies only for forks and for parents
/// past the new end. A row that finishes leaves its slots to hypotheses
/// from the end of the batch, rather than every later row moving down
/// (until 2026-12-06 each row took the next slots in row order: on the dev
/// set at beam 4, 2 of every 5 copies were of rows moving down); a row's
/// slots need not be contiguous, as the decoder reads each slot's source
/// row through its own index. The order of each row's hypotheses (what
/// ties are broken by) is unchanged; only slots are assigned.
void placeInSlots(std::vector<Row> &state,
                  const std::vector<int64_t> &continuing,
                  std::vector<int64_t> &sources, std::vector<int32_t> &tokens) {
  int64_t count = 0;
  for (int64_t r : continuing)
    count += static_cast<int64_t>(state[r].active.size());
  sources.assign(count, -1);
  tokens.assign(count, 0);
  std::vector<char> placed;
  placed.reserve(count);
  for (int64_t r : continuing)
    for (Active &a : state[r].active) {
      bool keep = a.slot < count && sources[a.slot] < 0;
      if (keep)
        sources[a.slot] = a.slot;
      placed.push_back(keep);
    }
  int64_t free = 0, next = 0;
  for (int64_t r : continuing)
    for (Active &a : state[r].active) {
      if (!placed[next++]) {
        while (sources[free] >= 0)
          ++free;
        sources[free] = a.slot;
        a.slot = free;
      }
      tokens[a.slot] = a.ids.back();
    }
}

/// Whether the row's first `wanted` results are already fixed: that many
/// hypotheses have finished and none of `next` can ever finish above the
/// wanted-th of them. Log-probabilities are <= 0, so a descendant of `a`
/// scores at most a.score, and a.score / L^alpha over the lengths still
/// possible (a.ids.size() + 1 up to `limit`) is largest at one of the two
/// ends. A later hypothesis with an equal score ranks after the earlier
/// ones, so equality is enough; the small margin absorbs pow's rounding
/// between the ends. NaN scores never settle a row.
bool resultsSettled(const Row &row, const std::vector<Active> &next,
                    int64_t wanted, int64_t limit, double alpha) {
  if (static_cast<int64_t>(row.finished.size()) < wanted)
    return false;
  std::vector<double> scores;
  scores.reserve(row.finished.size());
  for (const Finished &f : row.finished)
    scores.push_back(f.hypothesis.score);
  // Ranked as the results are (a NaN first): a NaN threshold settles
  // nothing below.
  std::nth_element(scores.begin(), scores.begin() + (wanted - 1), scores.end(),
                   [](double a, double b) { return compareScores(a, b) > 0; });
  double threshold = scores[wanted - 1];
  threshold -= 1e-12 * std::fabs(threshold);
  for (const Active &a : next) {
    auto shortest = static_cast<int64_t>(a.ids.size()) + 1;
    double reachable =
        std::max(normalised(a.score, std::min(shortest, limit), alpha),
                 normalised(a.score, limit, alpha));
    if (!(reachable <= threshold))
      return false;
  }
  return true;
}

} // namespace

std::vector<std::vector<Hypothesis>>
tfmc::runtime::beamSearch(IncrementalDecoder &decoder,
                          const SearchOptions &options,
                          const SpecialIds &special) {
  int64_t rows = decoder.activeSlots();
  int64_t beam = std::max<int64_t>(options.beamSize, 1);
  int64_t vocab = decoder.vocabSize();
  std::vector<Row> state(rows);
  std::vector<int64_t> limit(rows);
  int64_t longest = 0;
  for (int64_t r = 0; r < rows; ++r) {
    state[r].active.push_back({{}, 0.0, r});
    limit[r] = rowLengthLimit(options, decoder.sourceTokens(r));
    longest = std::max(longest, limit[r]);
  }
  std::vector<int32_t> tokens(rows, special.start);
  std::vector<float> guarded;
  bool guards = guardsActive(options);
  int64_t wanted = std::clamp<int64_t>(options.nBest, 1, beam);
  // Each hypothesis's best 2K and log_softmax shift (TopKScan.h: the
  // fused projection tfm.linear_topk computes the same bits).
  TopKScan scan;
  ScanExclusions excluded;
  excluded.never = special.never.data();
  excluded.neverCount = static_cast<int64_t>(special.never.size());
  excluded.eos = special.eos;

  // Without repetition guards the decoder can end its steps in the
  // candidates (decode_beam): the same bits, without the logits.
  bool fused = options.fusedSteps && !guards && decoder.hasBeamStep();
  int64_t count = 2 * beam;
  std::vector<int32_t> allowEos;
  // A row's candidates, reused from row to row and step to step.
  std::vector<Candidate> candidates;

  for (int64_t step = 0; step < longest; ++step) {
    const float *logits = nullptr;
    IncrementalDecoder::Candidates fusedCandidates;
    if (fused) {
      allowEos.assign(decoder.activeSlots(), 0);
      for (const Row &row : state)
        if (!row.done)
          for (const Active &a : row.active)
            allowEos[a.slot] =
                static_cast<int64_t>(a.ids.size()) >= options.minLength;
      fusedCandidates = decoder.beamStep(tokens, allowEos, count);
    } else {
      logits = decoder.step(tokens);
    }
    std::vector<int64_t> continuing;
    for (int64_t r = 0; r < rows; ++r) {
      Row &row = state[r];
      if (row.done)
        continue;
      bool last = step + 1 == limit[r];
      // Of all candidates only the first 2K matter, and those are among
      // each hypothesis's own best 2K.
      candidates.clear();
      for (size_t h = 0; h < row.active.size(); ++h) {
        const Active &a = row.active[h];
        if (fused) {
          const float *values = fusedCandidates.values + a.slot * count;
          const int32_t *ids = fusedCandidates.ids + a.slot * count;
          for (int64_t i = 0; i < count && ids[i] >= 0; ++i)
            candidates.push_back(
                {a.score + double(values[i]), static_cast<int64_t>(h), ids[i]});
          continue;
        }
        const float *hypothesisLogits = logits + a.slot * vocab;
        std::vector<int32_t> banned;
        if (guards) {
          guarded.assign(hypothesisLogits, hypothesisLogits + vocab);
          penalizeRepeats(guarded.data(), a.ids, options.repetitionPenalty);
          banned = repeatedNgramTokens(a.ids, options.noRepeatNgramSize);
          hypothesisLogits = guarded.data();
        }
        excluded.allowEos =
            static_cast<int64_t>(a.ids.size()) >= options.minLength;
        excluded.banned = banned.data();
        excluded.bannedCount = static_cast<int64_t>(banned.size());
        scan.reset(2 * beam);
        scan.add(hypothesisLogits, 0, vocab, excluded);
        // From logits to total scores, for the few that matter.
        float shift = scan.shift();
        for (const TopKCandidate &c : scan.best())
          candidates.push_back({a.score + double(c.value - shift),
                                static_cast<int64_t>(h), c.id});
      }
      auto better = [](const Candidate &x, const Candidate &y) {
        if (int c = compareScores(x.score, y.score))
          return c > 0;
        if (x.hypothesis != y.hypothesis)
          return x.hypothesis < y.hypothesis;
        return x.token < y.token;
      };
      size_t keep = std::min<size_t>(2 * beam, candidates.size());
      std::partial_sort(candidates.begin(), candidates.begin() + keep,
                        candidates.end(), better);
      std::vector<Active> next;
      for (size_t rank = 0; rank < keep; ++rank) {
        const Candidate &c = candidates[rank];
        const Active &parent = row.active[c.hypothesis];
        if (c.token == special.eos) {
          if (static_cast<int64_t>(rank) < beam)
            row.finished.push_back(
                {{parent.ids,
                  normalised(c.score, int64_t(parent.ids.size()) + 1,
                             options.lengthPenalty)},
                 row.finishOrder++});
          continue;
        }
        if (static_cast<int64_t>(next.size()) < beam) {
          Active a{parent.ids, c.score, parent.slot};
          a.ids.push_back(c.token);
          next.push_back(std::move(a));
        }
      }
      if (static_cast<int64_t>(row.finished.size()) >= beam) {
        row.done = true;
        continue;
      }
      if (last || next.empty()) {
        // Out of steps: the remaining hypotheses finish at the row's limit.
        for (Active &a : next)
          row.finished.push_back(
              {{a.ids, normalised(a.score, limit[r], options.lengthPenalty)},
               row.finishOrder++});
        row.done = true;
        continue;
      }
      // Only the n-best are returned: once no active hypothesis can change
      // them, the row stops without changing its results.
      if (resultsSettled(row, next, wanted, limit[r], options.lengthPenalty)) {
        row.done = true;
        continue;
      }
      row.active = std::move(next);
      continuing.push_back(r);
    }
    if (continuing.empty())
      break;
    std::vector<int64_t> sources;
    std::vector<int32_t> nextTokens;
    placeInSlots(state, continuing, sources, nextTokens);
    decoder.reorder(sources);
    tokens = std::move(nextTokens);
  }

  std::vector<std::vector<Hypothesis>> results(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Finished> &f = state[r].finished;
    std::stable_sort(
        f.begin(), f.end(), [](const Finished &x, const Finished &y) {
          if (int c = compareScores(x.hypothesis.score, y.hypothesis.score))
            return c > 0;
          return x.order < y.order;
        });
    for (size_t i = 0; i < f.size() && static_cast<int64_t>(i) < wanted; ++i)
      results[r].push_back(std::move(f[i].hypothesis));
  }
  return results;
}
