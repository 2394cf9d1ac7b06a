//===- SourceBatch.h - source rows padded into one batch --------*- C++ -*-===//
#ifndef RUNTIME_SESSION_SOURCEBATCH_H
#define RUNTIME_SESSION_SOURCEBATCH_H

#include "runtime/decoding/IncrementalDecoder.h"
#include "runtime/session/Buffer.h"

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

/// Right-padded source batch: each row is its ids (at most `maxTokens`)
/// followed by eos, padded with pad to the longest row.
struct SourceBatch {
  int64_t rows = 0, length = 0;
  Buffer<int32_t> ids;
  Buffer<int32_t> lengths; // ids + eos per row
};

SourceBatch padSources(const std::vector<std::vector<int32_t>> &sources,
                       int64_t maxTokens, const SpecialIds &special);

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_SOURCEBATCH_H
