//===- BeamSearch.cpp - beam search with length normalisation -------------===//
#include "runtime/decoding/BeamSearch.h"
#include "runtime/decoding/RepetitionGuards.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <immintrin.h>
#include <limits>

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

/// exp(x) for x <= 0 in float: x = n ln2 + r with |r| <= ln2/2, exp(r) by
/// its degree-6 Taylor polynomial (relative error < 2e-7), 2^n through the
/// exponent bits. Written branch-free so that the loop below vectorises.
__attribute__((always_inline)) inline float expNonPositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  // Round x / ln2 to the nearest integer with the 1.5 * 2^23 trick.
  float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/// sum_v exp(logits[v] - max), eight partial sums at a time. Always
/// inlined, so each caller compiles it for its own target (AVX2 + FMA, or
/// the baseline).
__attribute__((always_inline)) inline float
sumExpBody(const float *logits, int64_t vocab, float max) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t v = 0;
  for (; v + 8 <= vocab; v += 8)
    for (int k = 0; k < 8; ++k)
      partial[k] += expNonPositive(logits[v + k] - max);
  float sum = 0;
  for (; v < vocab; ++v)
    sum += expNonPositive(logits[v] - max);
  for (float p : partial)
    sum += p;
  return sum;
}

__attribute__((target("avx2,fma"))) float sumExpAvx2(const float *logits,
                                                     int64_t vocab, float max) {
  return sumExpBody(logits, vocab, max);
}

float sumExpGeneric(const float *logits, int64_t vocab, float max) {
  return sumExpBody(logits, vocab, max);
}

float sumExp(const float *logits, int64_t vocab, float max) {
  static const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2 ? sumExpAvx2(logits, vocab, max)
              : sumExpGeneric(logits, vocab, max);
}

constexpr int64_t kBlock = 16;

/// The largest of each block of kBlock logits (NaNs ignored); returns the
/// largest of all. `blocks` has ceil(vocab / kBlock) entries.
__attribute__((target("avx2"))) float blockMaximaAvx2(const float *logits,
                                                      int64_t vocab,
                                                      float *blocks) {
  const __m256 lowest =
      _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 all = lowest;
  int64_t b = 0, v = 0;
  for (; v + kBlock <= vocab; v += kBlock, ++b) {
    // max_ps(x, m) keeps m when x is NaN.
    __m256 m = _mm256_max_ps(_mm256_loadu_ps(logits + v), lowest);
    m = _mm256_max_ps(_mm256_loadu_ps(logits + v + 8), m);
    all = _mm256_max_ps(m, all);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m),
                          _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    blocks[b] = _mm_cvtss_f32(h);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, all);
  float max = -std::numeric_limits<float>::infinity();
  for (float x : lanes)
    max = x > max ? x : max;
  if (v < vocab) {
    float m = -std::numeric_limits<float>::infinity();
    for (; v < vocab; ++v)
      m = logits[v] > m ? logits[v] : m;
    blocks[b] = m;
    max = m > max ? m : max;
  }
  return max;
}

float blockMaximaGeneric(const float *logits, int64_t vocab, float *blocks) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t b = 0, v = 0; v < vocab; v += kBlock, ++b) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = v; i < std::min(v + kBlock, vocab); ++i)
      m = logits[i] > m ? logits[i] : m;
    blocks[b] = m;
    max = m > max ? m : max;
  }
  return max;
}

float blockMaxima(const float *logits, int64_t vocab, float *blocks) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? blockMaximaAvx2(logits, vocab, blocks)
              : blockMaximaGeneric(logits, vocab, blocks);
}

/// The log_softmax of one row is logits[v] - shift: its ranking is the
/// logits' ranking, so only the chosen candidates need their value. `max`
/// is the row's largest logit.
float logSoftmaxShift(const float *logits, int64_t vocab, float max) {
  return max + std::log(sumExp(logits, vocab, max));
}

double normalised(double score, int64_t length, double alpha) {
  return score / std::pow(double(length), alpha);
}

/// Keeps the best `capacity` candidates of one hypothesis, best first by
/// (score desc, token asc). Tokens arrive in ascending order, so a later
/// token ties below an earlier one.
class TopCandidates {
public:
  explicit TopCandidates(size_t capacity) : capacity(capacity) {}
  void clear() { items.clear(); }
  void offer(double score, int64_t hypothesis, int32_t token) {
    if (items.size() == capacity && !(score > items.back().score))
      return;
    Candidate c{score, hypothesis, token};
    auto at = std::upper_bound(items.begin(), items.end(), c,
                               [](const Candidate &x, const Candidate &y) {
                                 return x.score > y.score;
                               });
    items.insert(at, c);
    if (items.size() > capacity)
      items.pop_back();
  }
  const std::vector<Candidate> &best() const { return items; }
  /// Whether `score` could still enter.
  bool wants(double score) const {
    return items.size() < capacity || score > items.back().score;
  }

private:
  size_t capacity;
  std::vector<Candidate> items;
};

/// Gives the row's next hypotheses the decoder slots sources.size() ..
/// + next.size() - 1 (appending their parents' slots to `sources` and
/// their last tokens to `tokens`). A hypothesis whose parent's slot lies in
/// that range takes it when no sibling did before: its KV cache is already
/// there, so the decoder copies only for forks and moved rows. The order of
/// `next` (what ties are broken by) is unchanged; only slots are assigned.
void placeInSlots(std::vector<Active> &next, std::vector<int64_t> &sources,
                  std::vector<int32_t> &tokens) {
  auto first = static_cast<int64_t>(sources.size());
  auto count = static_cast<int64_t>(next.size());
  sources.resize(first + count, -1);
  tokens.resize(first + count, 0);
  std::vector<int64_t> chosen(next.size(), -1);
  for (size_t i = 0; i < next.size(); ++i) {
    int64_t parent = next[i].slot;
    if (parent >= first && parent < first + count && sources[parent] < 0) {
      sources[parent] = parent;
      chosen[i] = parent;
    }
  }
  int64_t free = first;
  for (size_t i = 0; i < next.size(); ++i) {
    if (chosen[i] < 0) {
      while (sources[free] >= 0)
        ++free;
      sources[free] = next[i].slot;
      chosen[i] = free;
    }
    next[i].slot = chosen[i];
    tokens[chosen[i]] = next[i].ids.back();
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
  std::nth_element(scores.begin(), scores.begin() + (wanted - 1), scores.end(),
                   std::greater<double>());
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
  TopCandidates top(2 * beam);
  int64_t wanted = std::clamp<int64_t>(options.nBest, 1, beam);
  std::vector<float> blockMax((vocab + kBlock - 1) / kBlock);

  for (int64_t step = 0; step < longest; ++step) {
    const float *logits = decoder.step(tokens);
    std::vector<int64_t> sources;
    std::vector<int32_t> nextTokens;
    for (int64_t r = 0; r < rows; ++r) {
      Row &row = state[r];
      if (row.done)
        continue;
      bool last = step + 1 == limit[r];
      // Of all candidates only the first 2K matter, and those are among
      // each hypothesis's own best 2K.
      std::vector<Candidate> candidates;
      for (size_t h = 0; h < row.active.size(); ++h) {
        const Active &a = row.active[h];
        const float *hypothesisLogits = logits + a.slot * vocab;
        std::vector<int32_t> banned;
        if (guards) {
          guarded.assign(hypothesisLogits, hypothesisLogits + vocab);
          penalizeRepeats(guarded.data(), a.ids, options.repetitionPenalty);
          banned = repeatedNgramTokens(a.ids, options.noRepeatNgramSize);
          hypothesisLogits = guarded.data();
        }
        float max = blockMaxima(hypothesisLogits, vocab, blockMax.data());
        float shift = logSoftmaxShift(hypothesisLogits, vocab, max);
        bool allowEos = static_cast<int64_t>(a.ids.size()) >= options.minLength;
        top.clear();
        const int32_t *nextBanned = banned.data();
        const int32_t *bannedEnd = banned.data() + banned.size();
        // Blocks of 16 logits whose largest cannot enter are skipped whole
        // (most of them, once the first 2K are in).
        for (int64_t first = 0; first < vocab; first += kBlock) {
          int64_t end = std::min(first + kBlock, vocab);
          if (!top.wants(blockMax[first / kBlock]))
            continue;
          for (int64_t v = first; v < end; ++v) {
            auto id = static_cast<int32_t>(v);
            while (nextBanned != bannedEnd && *nextBanned < id)
              ++nextBanned;
            if ((nextBanned != bannedEnd && *nextBanned == id) ||
                special.neverChosen(id) || (id == special.eos && !allowEos))
              continue;
            top.offer(hypothesisLogits[v], static_cast<int64_t>(h), id);
          }
        }
        // From logits to total scores, for the few that matter.
        for (Candidate c : top.best()) {
          c.score = a.score + double(static_cast<float>(c.score) - shift);
          candidates.push_back(c);
        }
      }
      auto better = [](const Candidate &x, const Candidate &y) {
        if (x.score != y.score)
          return x.score > y.score;
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
      placeInSlots(next, sources, nextTokens);
      row.active = std::move(next);
    }
    if (sources.empty())
      break;
    decoder.reorder(sources);
    tokens = std::move(nextTokens);
  }

  std::vector<std::vector<Hypothesis>> results(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Finished> &f = state[r].finished;
    std::stable_sort(f.begin(), f.end(),
                     [](const Finished &x, const Finished &y) {
                       if (x.hypothesis.score != y.hypothesis.score)
                         return x.hypothesis.score > y.hypothesis.score;
                       return x.order < y.order;
                     });
    for (size_t i = 0; i < f.size() && static_cast<int64_t>(i) < wanted; ++i)
      results[r].push_back(std::move(f[i].hypothesis));
  }
  return results;
}
