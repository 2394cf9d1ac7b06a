//===- Translator.cpp - line-oriented translation of a stream -------------===//
#include "runtime/session/Translator.h"

#include "llvm/Support/FormatVariadic.h"

#include <string>

using namespace tfmc;
using namespace tfmc::runtime;

llvm::Expected<std::vector<int32_t>>
tfmc::runtime::parseIdLine(llvm::StringRef line, int64_t vocab) {
  std::vector<int32_t> ids;
  llvm::SmallVector<llvm::StringRef> fields;
  line.split(fields, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef field : fields) {
    field = field.trim();
    if (field.empty())
      continue;
    int64_t id;
    if (field.getAsInteger(10, id))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "'%s' is not a token id",
                                     field.str().c_str());
    if (id < 0 || id >= vocab)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "token id %lld is outside the source vocabulary (size %lld)",
          static_cast<long long>(id), static_cast<long long>(vocab));
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

namespace {

/// A batch of input lines: the decodable ones go to the model, the others
/// keep their place as empty output lines.
struct PendingLine {
  bool decode = false;
  bool bad = false;
  std::vector<int32_t> ids;
  std::vector<std::string> unknownSpans; // source text of unk pieces
};

} // namespace

llvm::Expected<TextTokenizers>
tfmc::runtime::createTextTokenizers(const frontend::Model &m) {
  auto unk = static_cast<int32_t>(m.desc.special.unk);
  auto src = Tokenizer::create(m.desc.source.tokenizer, m.sourceVocab, unk,
                               m.desc.source.spmModelPath);
  if (!src)
    return src.takeError();
  auto tgt = Tokenizer::create(m.desc.target.tokenizer, m.targetVocab, unk,
                               m.desc.target.spmModelPath);
  if (!tgt)
    return tgt.takeError();
  return TextTokenizers{std::move(*src), std::move(*tgt)};
}

llvm::Expected<TranslateStats> tfmc::runtime::translateStream(
    Session &session, const TextTokenizers *tokenizers, std::istream &in,
    llvm::raw_ostream &out, llvm::raw_ostream &diagnostics,
    const TranslateOptions &options) {
  const Tokenizer *sourceTokenizer =
      tokenizers ? tokenizers->source.get() : nullptr;
  const Tokenizer *targetTokenizer =
      tokenizers ? tokenizers->target.get() : nullptr;
  auto render = [&](llvm::ArrayRef<int32_t> ids,
                    const PendingLine &source) -> std::string {
    if (targetTokenizer)
      return targetTokenizer->decode(
          ids, options.replaceUnknown
                   ? llvm::ArrayRef<std::string>(source.unknownSpans)
                   : llvm::ArrayRef<std::string>());
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i)
      text += (i ? " " : "") + std::to_string(ids[i]);
    return text;
  };
  TranslateStats stats;
  int64_t vocab = session.model().sourceVocab.size();
  int64_t maxTokens = session.maxSourceTokens();
  std::vector<PendingLine> batch;
  int64_t firstLine = 0; // 0-based number of the batch's first line
  auto flush = [&]() -> llvm::Error {
    TokenRows sources;
    for (PendingLine &p : batch)
      if (p.decode)
        sources.push_back(p.ids);
    bool beam = options.search.beamSize > 1 || options.scores;
    std::vector<std::vector<Hypothesis>> hypotheses;
    if (beam) {
      auto outputs = session.translateBeam(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      hypotheses = std::move(*outputs);
    } else {
      auto outputs = session.translate(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      for (std::vector<int32_t> &ids : *outputs)
        hypotheses.push_back({Hypothesis{std::move(ids), 0.0}});
    }
    size_t next = 0;
    for (PendingLine &p : batch) {
      int64_t index = firstLine++;
      if (!p.decode) {
        // An empty line translates to nothing; a bad one was reported.
        if (!options.scores)
          out << "\n";
        else if (!p.bad)
          out << index << " |||  ||| " << llvm::formatv("{0:f6}", 0.0) << "\n";
        continue;
      }
      const std::vector<Hypothesis> &nbest = hypotheses[next++];
      if (!options.scores) {
        const std::vector<int32_t> &ids =
            nbest.empty() ? std::vector<int32_t>() : nbest.front().ids;
        stats.generatedTokens += static_cast<int64_t>(ids.size());
        out << render(ids, p) << "\n";
        continue;
      }
      for (int64_t k = 0; k < options.nBest && k < int64_t(nbest.size()); ++k) {
        out << index << " ||| " << render(nbest[k].ids, p) << " ||| "
            << llvm::formatv("{0:f6}", nbest[k].score) << "\n";
        stats.generatedTokens += static_cast<int64_t>(nbest[k].ids.size());
      }
    }
    out.flush();
    batch.clear();
    return llvm::Error::success();
  };

  std::string line;
  while (std::getline(in, line)) {
    ++stats.lines;
    llvm::StringRef text(line);
    text = text.rtrim("\r");
    PendingLine pending;
    if (!text.trim().empty()) {
      auto encode = [&]() -> llvm::Expected<Encoding> {
        if (sourceTokenizer)
          return sourceTokenizer->tokenize(text);
        auto ids = parseIdLine(text, vocab);
        if (!ids)
          return ids.takeError();
        Encoding e;
        e.ids = std::move(*ids);
        return e;
      };
      llvm::Expected<Encoding> encoded = encode();
      if (!encoded) {
        ++stats.badLines;
        pending.bad = true;
        diagnostics << llvm::formatv("error: input line {0}: {1}\n",
                                     stats.lines,
                                     llvm::toString(encoded.takeError()));
      } else {
        pending.decode = true;
        pending.ids = std::move(encoded->ids);
        pending.unknownSpans = std::move(encoded->unknownSpans);
        if (static_cast<int64_t>(pending.ids.size()) > maxTokens) {
          ++stats.truncatedLines;
          diagnostics << llvm::formatv(
              "warning: input line {0}: {1} tokens, truncated to {2} "
              "(max_len {3} with eos)\n",
              stats.lines, pending.ids.size(), maxTokens, maxTokens + 1);
        }
      }
    }
    batch.push_back(std::move(pending));
    if (static_cast<int64_t>(batch.size()) >= options.batchSize)
      if (llvm::Error e = flush())
        return std::move(e);
  }
  if (!batch.empty())
    if (llvm::Error e = flush())
      return std::move(e);
  return stats;
}
