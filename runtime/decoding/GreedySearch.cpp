//===- GreedySearch.cpp - greedy decoding ---------------------------------===//
#include "runtime/decoding/GreedySearch.h"

using namespace tfmc::runtime;

int32_t tfmc::runtime::bestToken(const float *logits, int64_t vocab,
                                 const SpecialIds &special, bool allowEos) {
  int32_t best = -1;
  float bestValue = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    auto id = static_cast<int32_t>(v);
    if (id == special.pad || id == special.bos ||
        (id == special.eos && !allowEos))
      continue;
    // Strictly greater: the lowest id wins ties.
    if (best < 0 || logits[v] > bestValue) {
      best = id;
      bestValue = logits[v];
    }
  }
  return best;
}

std::vector<std::vector<int32_t>>
tfmc::runtime::greedySearch(IncrementalDecoder &decoder,
                            const SearchOptions &options,
                            const SpecialIds &special) {
  int64_t rows = decoder.activeSlots();
  std::vector<std::vector<int32_t>> outputs(rows);
  // slotRow[i]: the batch row that active slot i decodes.
  std::vector<int64_t> slotRow(rows);
  for (int64_t i = 0; i < rows; ++i)
    slotRow[i] = i;
  std::vector<int32_t> tokens(rows, special.bos);
  int64_t vocab = decoder.vocabSize();

  for (int64_t step = 0; step < options.maxLength && !slotRow.empty(); ++step) {
    const float *logits = decoder.step(tokens);
    std::vector<bool> finished(slotRow.size(), false);
    bool anyFinished = false;
    for (size_t i = 0; i < slotRow.size(); ++i) {
      std::vector<int32_t> &out = outputs[slotRow[i]];
      bool allowEos = static_cast<int64_t>(out.size()) >= options.minLength;
      int32_t token = bestToken(logits + i * vocab, vocab, special, allowEos);
      if (token == special.eos || token < 0) {
        finished[i] = true;
      } else {
        out.push_back(token);
        tokens[i] = token;
        // max-length counts eos: a row that has maxLength tokens is done.
        finished[i] = static_cast<int64_t>(out.size()) >= options.maxLength;
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
  return outputs;
}
