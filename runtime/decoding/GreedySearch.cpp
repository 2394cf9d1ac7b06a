//===- GreedySearch.cpp - greedy decoding ---------------------------------===//
#include "runtime/decoding/GreedySearch.h"
#include "runtime/decoding/RepetitionGuards.h"
#include "runtime/kernels/KernelAbi.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tfmc::runtime;

namespace {

/// The scan DESIGN.md describes, token by token.
int32_t bestTokenInOrder(const float *logits, int64_t vocab,
                         const SpecialIds &special, bool allowEos,
                         llvm::ArrayRef<int32_t> banned) {
  int32_t best = -1;
  float bestValue = 0;
  const int32_t *nextBanned = banned.begin();
  for (int64_t v = 0; v < vocab; ++v) {
    auto id = static_cast<int32_t>(v);
    while (nextBanned != banned.end() && *nextBanned < id)
      ++nextBanned;
    if (nextBanned != banned.end() && *nextBanned == id)
      continue;
    if (special.neverChosen(id) || (id == special.eos && !allowEos))
      continue;
    // Strictly greater: the lowest id wins ties.
    if (best < 0 || logits[v] > bestValue) {
      best = id;
      bestValue = logits[v];
    }
  }
  return best;
}

constexpr int64_t kBlock = 8;

/// The same answer in two vector passes, for rows without banned tokens:
/// the largest allowed value (NaNs ignored), then the lowest allowed id
/// holding it. The scan above keeps the first allowed token when it is
/// NaN (nothing compares greater) and otherwise never takes a NaN, so
/// that case is checked first. Blocks holding a disallowed id go
/// element by element.
__attribute__((target("avx2"))) int32_t bestTokenAvx2(const float *logits,
                                                      int64_t vocab,
                                                      const SpecialIds &special,
                                                      bool allowEos) {
  auto disallowed = [&](int64_t v) {
    return special.neverChosen(v) || (v == special.eos && !allowEos);
  };
  auto holdsDisallowed = [&](int64_t first, int64_t end) {
    for (int64_t id : special.never)
      if (id >= first && id < end)
        return true;
    return !allowEos && special.eos >= first && special.eos < end;
  };
  int64_t first = 0;
  while (first < vocab && disallowed(first))
    ++first;
  if (first == vocab)
    return -1;
  if (logits[first] != logits[first])
    return static_cast<int32_t>(first);
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 maxima = lowest;
  float max = -std::numeric_limits<float>::infinity();
  int64_t v = 0;
  for (; v < vocab; v += kBlock) {
    int64_t end = std::min(v + kBlock, vocab);
    if (end - v == kBlock && !holdsDisallowed(v, end)) {
      // max_ps(x, m) keeps m when x is NaN.
      maxima = _mm256_max_ps(_mm256_loadu_ps(logits + v), maxima);
      continue;
    }
    for (int64_t i = v; i < end; ++i)
      if (!disallowed(i) && logits[i] > max)
        max = logits[i];
  }
  alignas(32) float lanes[kBlock];
  _mm256_store_ps(lanes, maxima);
  for (float x : lanes)
    max = x > max ? x : max;
  // The lowest allowed id at the maximum (there is one: logits[first] is a
  // number, so max >= it).
  const __m256 target = _mm256_set1_ps(max);
  for (v = 0; v < vocab; v += kBlock) {
    int64_t end = std::min(v + kBlock, vocab);
    if (end - v == kBlock && !holdsDisallowed(v, end)) {
      auto hits = static_cast<unsigned>(_mm256_movemask_ps(
          _mm256_cmp_ps(_mm256_loadu_ps(logits + v), target, _CMP_EQ_OQ)));
      if (hits != 0)
        return static_cast<int32_t>(v + __builtin_ctz(hits));
      continue;
    }
    for (int64_t i = v; i < end; ++i)
      if (!disallowed(i) && logits[i] == max)
        return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(first);
}

} // namespace

int32_t tfmc::runtime::bestToken(const float *logits, int64_t vocab,
                                 const SpecialIds &special, bool allowEos,
                                 llvm::ArrayRef<int32_t> banned) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (banned.empty() && avx2)
    return bestTokenAvx2(logits, vocab, special, allowEos);
  return bestTokenInOrder(logits, vocab, special, allowEos, banned);
}

std::vector<Hypothesis>
tfmc::runtime::greedySearch(IncrementalDecoder &decoder,
                            const SearchOptions &options,
                            const SpecialIds &special) {
  int64_t rows = decoder.activeSlots();
  std::vector<Hypothesis> results(rows);
  // slotRow[i]: the batch row that active slot i decodes.
  std::vector<int64_t> slotRow(rows);
  for (int64_t i = 0; i < rows; ++i)
    slotRow[i] = i;
  std::vector<int32_t> tokens(rows, special.start);
  int64_t vocab = decoder.vocabSize();
  // Each row's length limit (relative to its source when asked).
  std::vector<int64_t> limit(rows);
  int64_t longest = 0;
  for (int64_t r = 0; r < rows; ++r) {
    limit[r] = rowLengthLimit(options, decoder.sourceTokens(r));
    longest = std::max(longest, limit[r]);
  }
  bool guards = guardsActive(options);
  std::vector<float> guarded;
  // Without guards only each row's choice is needed: a decoder that can
  // make it inside the step (decode_greedy) never writes the logits.
  bool fused = options.fusedSteps && !guards && decoder.hasGreedyStep();
  std::vector<int32_t> allowEos;

  for (int64_t step = 0; step < longest && !slotRow.empty(); ++step) {
    const float *logits = nullptr;
    const int32_t *chosen = nullptr;
    if (fused) {
      allowEos.resize(slotRow.size());
      for (size_t i = 0; i < slotRow.size(); ++i)
        allowEos[i] = static_cast<int64_t>(results[slotRow[i]].ids.size()) >=
                      options.minLength;
      chosen = decoder.greedyStep(tokens, allowEos);
    } else {
      logits = decoder.step(tokens);
    }
    std::vector<bool> finished(slotRow.size(), false);
    bool anyFinished = false;
    for (size_t i = 0; i < slotRow.size(); ++i) {
      std::vector<int32_t> &out = results[slotRow[i]].ids;
      int32_t token;
      if (chosen) {
        token = chosen[i];
      } else {
        bool eosAllowed =
            static_cast<int64_t>(out.size()) >= options.minLength;
        const float *row = logits + i * vocab;
        std::vector<int32_t> banned;
        if (guards) {
          guarded.assign(row, row + vocab);
          penalizeRepeats(guarded.data(), out, options.repetitionPenalty);
          banned = repeatedNgramTokens(out, options.noRepeatNgramSize);
          row = guarded.data();
        }
        token = bestToken(row, vocab, special, eosAllowed, banned);
        if (token >= 0 && !std::isfinite(row[token]))
          token = kNotFiniteChoice;
      }
      if (token == special.eos || token < 0) {
        finished[i] = true;
        if (token == kNotFiniteChoice)
          results[slotRow[i]].score = std::nan("");
      } else {
        out.push_back(token);
        tokens[i] = token;
        // The limit counts eos: a row that has `limit` tokens is done.
        finished[i] = static_cast<int64_t>(out.size()) >= limit[slotRow[i]];
      }
      anyFinished |= finished[i];
    }
    if (!anyFinished)
      continue;
    // Move the last live slot into the first finished one until the live
    // slots are 0..live-1: at most one row moves per finished row.
    auto n = static_cast<int64_t>(slotRow.size());
    std::vector<int64_t> sources(n);
    for (int64_t i = 0; i < n; ++i)
      sources[i] = i;
    int64_t live = 0;
    for (bool f : finished)
      live += f ? 0 : 1;
    for (int64_t i = 0, j = n - 1;;) {
      while (i < j && !finished[i])
        ++i;
      while (j > i && finished[j])
        --j;
      if (i >= j)
        break;
      sources[i] = j;
      slotRow[i] = slotRow[j];
      tokens[i] = tokens[j];
      finished[i] = false;
      finished[j] = true;
    }
    sources.resize(live);
    slotRow.resize(live);
    tokens.resize(live);
    decoder.reorder(sources);
  }
  return results;
}
