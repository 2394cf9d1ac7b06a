//===- SessionForward.cpp - encoder states and teacher-forced logits ------===//
#include "runtime/session/SessionFrames.h"
#include "runtime/session/SourceBatch.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>

using namespace tfmc;
using namespace tfmc::runtime;

/// `count` zeros in `values`, or an error when the memory is not there.
/// The arrays encode() and forward() return are std::vectors, so this file
/// is built with C++ exceptions (runtime/CMakeLists.txt) to take a failed
/// allocation as an error result rather than end the process (the tfmc
/// command's own handler ends it with one line first).
static llvm::Error zeros(std::vector<float> &values, size_t count,
                         const char *what) {
  bool had = true;
  try {
    values.assign(count, 0.0f);
  } catch (const std::bad_alloc &) {
    had = false;
  } catch (const std::length_error &) {
    had = false;
  }
  if (had)
    return llvm::Error::success();
  return batchOutOfMemory(what, double(count) * sizeof(float));
}

/// In place over each [vocab] row: log_softmax or softmax.
static void normalizeRows(std::vector<float> &values, int64_t vocab,
                          LogitsOutput output) {
  if (output == LogitsOutput::Logits)
    return;
  for (size_t start = 0; start < values.size(); start += vocab) {
    float *row = values.data() + start;
    float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(double(row[v]) - top);
    double logSum = std::log(sum) + top;
    for (int64_t v = 0; v < vocab; ++v) {
      double logp = double(row[v]) - logSum;
      row[v] = static_cast<float>(
          output == LogitsOutput::LogProbs ? logp : std::exp(logp));
    }
  }
}

llvm::Expected<EncoderStates> Session::encode(const TokenRows &sources) {
  setKernelThreads(threads);
  FramesLease frames(*this);
  if (!frames->encodeStates)
    return sessionError("this session was opened without encoder states");
  if (sources.empty())
    return sessionError("no rows to run");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  SourceBatch src = padSources(sources, maxSourceTokens(), specialIds());
  ensurePositions(src.length);
  EncoderStates states;
  states.batch = src.rows;
  states.length = src.length;
  states.dModel = loaded.desc.arch.dModel;
  if (llvm::Error e =
          zeros(states.values, src.rows * src.length * states.dModel,
                "the encoder states"))
    return std::move(e);
  CallFrame &f = *frames->encodeStates;
  f.bind("src_ids", src.ids.data(), {src.rows, src.length});
  f.bind("src_lengths", src.lengths.data(), {src.rows});
  f.bind("states", states.values.data(), {src.rows, src.length, states.dModel});
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error e = f.call())
    return std::move(e);
  addTimes(secondsSince(start), 0, 0);
  // Padding positions hold whatever the layers made of pad tokens: zero
  // them so that the output depends on nothing but the row.
  for (int64_t r = 0; r < src.rows; ++r) {
    int32_t n = src.lengths[r];
    states.lengths.push_back(n);
    std::fill(states.values.begin() + (r * src.length + n) * states.dModel,
              states.values.begin() + (r + 1) * src.length * states.dModel,
              0.0f);
  }
  return states;
}

llvm::Expected<Logits> Session::forward(const TokenRows &sources,
                                        const TokenRows &targets,
                                        LogitsOutput output) {
  if (loaded.desc.arch.encoderOnly())
    return noDecoder(loaded, "forward");
  setKernelThreads(threads);
  FramesLease frames(*this);
  if (!frames->forward)
    return sessionError("this session was opened without teacher forcing");
  if (sources.size() != targets.size())
    return sessionError(llvm::formatv("{0} source rows but {1} target rows",
                               sources.size(), targets.size()));
  if (sources.empty())
    return sessionError("no rows to run");
  if (llvm::Error e = checkIds(sources, loaded.sourceVocab.size(), "source"))
    return std::move(e);
  if (llvm::Error e = checkIds(targets, loaded.targetVocab.size(), "target"))
    return std::move(e);
  const frontend::Architecture &arch = loaded.desc.arch;
  SpecialIds special = specialIds();
  SourceBatch src = padSources(sources, maxSourceTokens(), special);
  int64_t rows = src.rows, steps = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r].empty())
      return sessionError(llvm::formatv("target row {0} is empty (it must start "
                                 "with the decoder start token {1})",
                                 r, special.start));
    if (targets[r].front() != special.start)
      return sessionError(llvm::formatv("target row {0} does not start with the "
                                 "decoder start token ({1})",
                                 r, special.start));
    if (static_cast<int64_t>(targets[r].size()) > arch.maxLen)
      return sessionError(llvm::formatv(
          "target row {0} has {1} tokens, more than max_len ({2})", r,
          targets[r].size(), arch.maxLen));
    steps = std::max<int64_t>(steps, targets[r].size());
  }
  Buffer<int32_t> tgtIds(rows * steps), tgtLengths(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(tgtIds.data() + r * steps, tgtIds.data() + (r + 1) * steps,
              special.pad);
    std::copy(targets[r].begin(), targets[r].end(), tgtIds.data() + r * steps);
    tgtLengths[r] = static_cast<int32_t>(targets[r].size());
  }
  Logits logits;
  logits.batch = rows;
  logits.steps = steps;
  logits.vocab = loaded.targetVocab.size();
  if (llvm::Error e =
          zeros(logits.values, rows * steps * logits.vocab, "the logits"))
    return std::move(e);
  ensurePositions(std::max(src.length, steps));
  CallFrame &f = *frames->forward;
  f.bind("src_ids", src.ids.data(), {rows, src.length});
  f.bind("src_lengths", src.lengths.data(), {rows});
  f.bind("tgt_ids", tgtIds.data(), {rows, steps});
  f.bind("tgt_lengths", tgtLengths.data(), {rows});
  f.bind("logits", logits.values.data(), {rows, steps, logits.vocab});
  if (llvm::Error e = f.call())
    return std::move(e);
  normalizeRows(logits.values, logits.vocab, output);
  return logits;
}
