//===- SourceBatch.cpp - source rows padded into one batch ----------------===//
#include "runtime/session/SourceBatch.h"

#include <algorithm>

using namespace tfmc::runtime;

SourceBatch
tfmc::runtime::padSources(const std::vector<std::vector<int32_t>> &sources,
                          int64_t maxTokens, const SpecialIds &special) {
  SourceBatch batch;
  batch.rows = static_cast<int64_t>(sources.size());
  for (const auto &s : sources)
    batch.length = std::max<int64_t>(
        batch.length, std::min<int64_t>(s.size(), maxTokens) + 1);
  batch.ids.resize(batch.rows * batch.length);
  batch.lengths.resize(batch.rows);
  for (int64_t r = 0; r < batch.rows; ++r) {
    int64_t n = std::min<int64_t>(sources[r].size(), maxTokens);
    int32_t *row = batch.ids.data() + r * batch.length;
    std::fill(row, row + batch.length, special.pad);
    std::copy(sources[r].begin(), sources[r].begin() + n, row);
    row[n] = special.eos;
    batch.lengths[r] = static_cast<int32_t>(n + 1);
  }
  return batch;
}
