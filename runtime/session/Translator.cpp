//===- Translator.cpp - line-oriented translation of a stream -------------===//
#include "runtime/session/Translator.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <string>

using namespace tfmc;
using namespace tfmc::runtime;

llvm::Expected<std::vector<int32_t>>
tfmc::runtime::parseIdLine(llvm::StringRef line, int64_t vocab,
                           llvm::StringRef side) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < line.size()) {
    // Fields are separated by spaces and tabs; the column is 1-based.
    size_t start = line.find_first_not_of(" \t", pos);
    if (start == llvm::StringRef::npos)
      break;
    size_t end = line.find_first_of(" \t", start);
    if (end == llvm::StringRef::npos)
      end = line.size();
    llvm::StringRef field = line.slice(start, end);
    pos = end;
    auto fail = [&](const llvm::Twine &what) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "column " + llvm::Twine(start + 1) +
                                         ": " + what);
    };
    int64_t id;
    if (field.getAsInteger(10, id)) {
      std::string shown = field.take_front(20).str();
      for (char &c : shown)
        if (!llvm::isPrint(c))
          c = '?';
      return fail("'" + shown + (field.size() > 20 ? "...'" : "'") +
                  " is not a token id");
    }
    if (id < 0 || id >= vocab)
      return fail("token id " + llvm::Twine(id) + " is outside the " + side +
                  " vocabulary (size " + llvm::Twine(vocab) + ")");
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
                               m.desc.source.spmModelPath,
                               m.desc.source.piecesThroughVocab);
  if (!src)
    return src.takeError();
  auto tgt = Tokenizer::create(m.desc.target.tokenizer, m.targetVocab, unk,
                               m.desc.target.spmModelPath,
                               m.desc.target.piecesThroughVocab);
  if (!tgt)
    return tgt.takeError();
  return TextTokenizers{std::move(*src), std::move(*tgt)};
}

namespace {

/// The single updating progress line on stderr: lines done (of the total
/// when known), sentences/s, target tokens/s and the time left.
class ProgressLine {
public:
  ProgressLine(llvm::raw_ostream &os, bool enabled,
               std::optional<int64_t> total)
      : os(os), enabled(enabled), total(total),
        start(std::chrono::steady_clock::now()) {}

  void update(int64_t lines, int64_t tokens, bool force = false) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - lastDraw < std::chrono::milliseconds(200))
      return;
    lastDraw = now;
    double seconds = std::chrono::duration<double>(now - start).count();
    double rate = seconds > 0 ? lines / seconds : 0;
    std::string text = total
                           ? llvm::formatv("{0}/{1} lines", lines, *total).str()
                           : llvm::formatv("{0} lines", lines).str();
    text += llvm::formatv(", {0:f1} sentences/s, {1:f0} tokens/s", rate,
                          seconds > 0 ? tokens / seconds : 0.0)
                .str();
    if (total && rate > 0 && lines < *total)
      text += llvm::formatv(", ETA {0:f0} s", (*total - lines) / rate).str();
    os << "\r" << text << "\x1b[K";
    os.flush();
    drawn = true;
  }
  /// Clears the line (before a warning, or at the end).
  void clear() {
    if (enabled && drawn) {
      os << "\r\x1b[K";
      os.flush();
      drawn = false;
    }
  }

private:
  llvm::raw_ostream &os;
  bool enabled;
  std::optional<int64_t> total;
  std::chrono::steady_clock::time_point start, lastDraw;
  bool drawn = false;
};

/// One input line on its way through the translator.
struct WindowLine {
  int64_t index = 0; // 0-based input line
  PendingLine line;
  bool done = false;
  std::vector<Hypothesis> nbest;
};

} // namespace

llvm::Expected<TranslateStats> tfmc::runtime::translateStream(
    Session &session, const TextTokenizers *tokenizers, LineReader &in,
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
  int64_t batchSize = std::max<int64_t>(options.batchSize, 1);
  int64_t readAhead =
      options.readAhead > 0
          ? options.readAhead
          : (batchSize > std::numeric_limits<int64_t>::max() / 16
                 ? std::numeric_limits<int64_t>::max()
                 : 16 * batchSize);
  ProgressLine progress(diagnostics, options.progress, options.totalLines);
  auto warn = [&](const std::string &text) {
    progress.clear();
    diagnostics << text;
  };

  // Lines read and not yet written, in input order.
  std::deque<WindowLine> window;
  int64_t undone = 0;
  auto writeReady = [&]() {
    bool wrote = false;
    while (!window.empty() && window.front().done) {
      WindowLine &w = window.front();
      wrote = true;
      if (!w.line.decode) {
        // An empty line translates to nothing; a bad one was reported.
        if (!options.scores)
          out << "\n";
        else if (!w.line.bad)
          out << w.index << " |||  ||| " << llvm::formatv("{0:f6}", 0.0)
              << "\n";
      } else if (!options.scores) {
        const std::vector<int32_t> &ids =
            w.nbest.empty() ? std::vector<int32_t>() : w.nbest.front().ids;
        stats.generatedTokens += static_cast<int64_t>(ids.size());
        out << render(ids, w.line) << "\n";
      } else {
        for (int64_t k = 0; k < options.nBest && k < int64_t(w.nbest.size());
             ++k) {
          out << w.index << " ||| " << render(w.nbest[k].ids, w.line) << " ||| "
              << llvm::formatv("{0:f6}", w.nbest[k].score) << "\n";
          stats.generatedTokens += static_cast<int64_t>(w.nbest[k].ids.size());
        }
      }
      ++stats.writtenLines;
      window.pop_front();
    }
    if (wrote) {
      out.flush();
      progress.update(stats.writtenLines, stats.generatedTokens);
    }
  };

  auto readLine = [&](const std::string &line, bool cut) {
    WindowLine w;
    w.index = stats.lines++;
    if (cut) {
      ++stats.truncatedLines;
      warn(llvm::formatv("warning: input line {0}: longer than {1} bytes; "
                         "only its first {2} bytes are read\n",
                         stats.lines, in.maxLineBytes(), line.size()));
    }
    llvm::StringRef text(line);
    text = text.rtrim("\r");
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
        // Text that cannot be read (invalid UTF-8) is a warning; token ids
        // that are not ids of the model are an error. Either way the line
        // gets an empty output line and the rest go on.
        w.line.bad = true;
        bool error = !sourceTokenizer;
        ++(error ? stats.badLines : stats.warnedLines);
        warn(llvm::formatv("{0}: input line {1}: {2}\n",
                           error ? "error" : "warning", stats.lines,
                           llvm::toString(encoded.takeError())));
      } else {
        w.line.decode = true;
        w.line.ids = std::move(encoded->ids);
        w.line.unknownSpans = std::move(encoded->unknownSpans);
        if (static_cast<int64_t>(w.line.ids.size()) > maxTokens) {
          if (!cut) // counted once
            ++stats.truncatedLines;
          warn(llvm::formatv("warning: input line {0}: {1} tokens, truncated "
                             "to {2} (max_len {3} with eos)\n",
                             stats.lines, w.line.ids.size(), maxTokens,
                             maxTokens + 1));
        }
      }
    }
    w.done = !w.line.decode;
    undone += w.done ? 0 : 1;
    window.push_back(std::move(w));
  };

  // Translates `rows` (pointers into the window) as one batch.
  bool beam = options.search.beamSize > 1 || options.scores;
  auto translateBatch = [&](llvm::ArrayRef<WindowLine *> rows) -> llvm::Error {
    TokenRows sources;
    for (WindowLine *w : rows)
      sources.push_back(w->line.ids);
    if (beam) {
      auto outputs = session.translateBeam(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i]->nbest = std::move((*outputs)[i]);
    } else {
      auto outputs = session.translate(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i]->nbest = {Hypothesis{std::move((*outputs)[i]), 0.0}};
    }
    for (WindowLine *w : rows)
      w->done = true;
    undone -= static_cast<int64_t>(rows.size());
    return llvm::Error::success();
  };

  bool ended = false;
  std::string line;
  for (;;) {
    // Read ahead, but wait for input only when there is nothing else to
    // do: lines typed or piped in are translated as soon as they arrive.
    while (!ended && undone < readAhead) {
      auto status = in.next(line, /*wait=*/undone == 0 && window.empty());
      if (!status)
        return status.takeError();
      if (*status == LineReader::Status::WouldBlock)
        break;
      if (*status == LineReader::Status::End) {
        ended = true;
        break;
      }
      // Outside this shard: counted (for indices), never translated.
      if (stats.lines < options.firstLine) {
        ++stats.lines;
        continue;
      }
      if (options.endLine && stats.lines >= *options.endLine) {
        ended = true;
        break;
      }
      readLine(line, in.truncated());
    }
    writeReady();
    if (window.empty() && ended)
      break;
    if (undone == 0)
      continue;
    // The window's untranslated lines, shortest first (stable), cut into
    // batches of at most batchSize sentences and batchTokens padded source
    // tokens; results are written in input order as soon as they are in.
    std::vector<WindowLine *> todo;
    for (WindowLine &w : window)
      if (!w.done)
        todo.push_back(&w);
    auto length = [&](const WindowLine *w) {
      return std::min<int64_t>(w->line.ids.size(), maxTokens) + 1;
    };
    if (options.sortByLength)
      std::stable_sort(todo.begin(), todo.end(),
                       [&](const WindowLine *a, const WindowLine *b) {
                         return length(a) < length(b);
                       });
    for (size_t first = 0; first < todo.size();) {
      size_t end = first + 1;
      int64_t longest = length(todo[first]);
      while (end < todo.size() && int64_t(end - first) < batchSize) {
        int64_t l = std::max(longest, length(todo[end]));
        if (options.batchTokens > 0 &&
            l * int64_t(end - first + 1) > options.batchTokens)
          break;
        longest = l;
        ++end;
      }
      if (llvm::Error e = translateBatch(
              llvm::ArrayRef<WindowLine *>(todo).slice(first, end - first)))
        return std::move(e);
      writeReady();
      first = end;
    }
  }
  progress.update(stats.writtenLines, stats.generatedTokens, /*force=*/true);
  progress.clear();
  return stats;
}
