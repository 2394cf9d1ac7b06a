//===- TranslatorImpl.h - what a tfmc::Translator holds ---------*- C++ -*-===//
//
// Internal to tfmc (not installed): the session and tokenizers behind the
// public tfmc::Translator, and a load entry that records phase times.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_API_TRANSLATORIMPL_H
#define RUNTIME_API_TRANSLATORIMPL_H

#include "tfmc/Translator.h"

#include "runtime/profile/Profiler.h"
#include "runtime/session/Session.h"
#include "runtime/session/Translator.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir {
class TimingScope;
} // namespace mlir

struct tfmc::Translator::Impl {
  std::unique_ptr<runtime::Session> session;
  /// Text tokenizers, or why they could not be built (then only the id
  /// entry points work).
  std::optional<runtime::TextTokenizers> tokenizers;
  std::string tokenizerError;
  /// With LoadOptions::profile: the counters of the profiled variant.
  std::unique_ptr<runtime::Profiler> profiler;
};

namespace tfmc::api {

/// tfmc::Translator::load, with the phase times (loading, tokenizers,
/// compile) nested under `timing` when it is set.
llvm::Expected<std::unique_ptr<Translator>>
loadTranslator(const std::string &modelPath, const LoadOptions &options,
               mlir::TimingScope *timing);

/// The runtime's options for the public ones.
runtime::TranslateOptions toRuntimeOptions(const TranslateOptions &options);

/// Whether lines are split into sentences (options.splitSentences, "auto"
/// resolved against the model file; never with scores or n-best lists
/// unless "on", which checkOptions refuses there).
bool splitsSentences(const TranslateOptions &options,
                     const frontend::ModelDescription &model, bool scores);

/// How many sentences `texts` are once split as Translator::translate
/// splits them (a blank text is none).
size_t splitSentenceCount(const std::vector<std::string> &texts);

} // namespace tfmc::api

#endif // RUNTIME_API_TRANSLATORIMPL_H
