//===- Translator.cpp - line-oriented translation of a stream -------------===//
#include "runtime/session/Translator.h"
#include "runtime/kernels/ProfileProbes.h"
#include "runtime/session/ProgressLine.h"
#include "runtime/tokenizers/SentenceSplitter.h"

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

/// One source row: a whole input line, or one sentence of it.
struct Piece {
  std::vector<int32_t> ids;
  std::vector<std::string> unknownSpans; // source text of unk pieces
  std::vector<Hypothesis> nbest;
};

/// One input line on its way through the translator. A line that is empty
/// or unreadable has no pieces and keeps its place as an empty output line.
struct WindowLine {
  int64_t index = 0; // 0-based input line
  bool bad = false;
  std::vector<Piece> pieces;
  /// With sentence splitting: the sentences the pieces came from.
  std::vector<SplitSentence> sentences;
  int64_t undonePieces = 0;
  bool decode() const { return !pieces.empty(); }
  bool done() const { return undonePieces == 0; }
};

/// Replaces the line breaks (LF, CR) in a translation with spaces, so that
/// it stays one output line: a target SentencePiece model with byte
/// fallback can decode the pieces <0x0A> and <0x0D> to them. Returns how
/// many were replaced.
int64_t keepOnOneLine(std::string &text) {
  int64_t replaced = 0;
  for (char &c : text)
    if (c == '\n' || c == '\r') {
      c = ' ';
      ++replaced;
    }
  return replaced;
}

/// A piece waiting for the model, and the line it belongs to.
struct PieceRef {
  WindowLine *line;
  Piece *piece;
};

} // namespace

llvm::Expected<TranslateStats> tfmc::runtime::translateStream(
    Session &session, const TextTokenizers *tokenizers, LineReader &in,
    llvm::raw_ostream &out, llvm::raw_ostream &diagnostics,
    const TranslateOptions &options) {
  profile::Scope whole(profile::Region::Translate);
  const Tokenizer *sourceTokenizer =
      tokenizers ? tokenizers->source.get() : nullptr;
  const Tokenizer *targetTokenizer =
      tokenizers ? tokenizers->target.get() : nullptr;
  auto render = [&](llvm::ArrayRef<int32_t> ids,
                    const Piece &source) -> std::string {
    profile::Scope scope(profile::Region::Detokenize);
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
  // Sentences are split only in text mode and for one translation a line.
  bool split = options.splitSentences && sourceTokenizer && !options.scores;
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

  // Lines read and not yet written, in input order; `undone` counts the
  // pieces still to translate.
  std::deque<WindowLine> window;
  int64_t undone = 0;
  // What the search leaves a line to be warned about: a source without a
  // hypothesis (kNoHypothesis) gets no translation (an empty line, no
  // n-best entry, or an empty sentence of a split line); NaN scores
  // (kScoreNotANumber) are said once per line.
  auto searchWarnings = [&](const WindowLine &w) {
    for (size_t k = 0; k < w.pieces.size(); ++k)
      if (w.pieces[k].nbest.empty())
        warn(llvm::formatv("warning: input line {0}: {1}{2}\n", w.index + 1,
                           w.pieces.size() > 1
                               ? llvm::formatv("sentence {0}: ", k + 1).str()
                               : std::string(),
                           kNoHypothesis));
    if (llvm::any_of(w.pieces,
                     [](const Piece &p) { return anyScoreNaN(p.nbest); }))
      warn(llvm::formatv("warning: input line {0}: {1}\n", w.index + 1,
                         kScoreNotANumber));
  };
  // Translations as output lines: a line break in one is said once per
  // input line.
  auto renderLine = [&](llvm::ArrayRef<int32_t> ids, const Piece &source,
                        const WindowLine &w, bool &warned) {
    std::string text = render(ids, source);
    if (keepOnOneLine(text) > 0 && !warned) {
      warn(llvm::formatv("warning: input line {0}: the translation holds a "
                         "line break; written as a space\n",
                         w.index + 1));
      warned = true;
    }
    return text;
  };
  auto writeReady = [&]() {
    bool wrote = false;
    while (!window.empty() && window.front().done()) {
      WindowLine &w = window.front();
      wrote = true;
      if (!w.decode()) {
        // An empty line translates to nothing; a bad one was reported.
        if (!options.scores)
          out << "\n";
        else if (!w.bad)
          out << w.index << " |||  ||| " << llvm::formatv("{0:f6}", 0.0)
              << "\n";
      } else if (!options.scores) {
        std::vector<std::string> texts;
        searchWarnings(w);
        bool warned = false;
        for (const Piece &p : w.pieces) {
          const std::vector<int32_t> &ids =
              p.nbest.empty() ? std::vector<int32_t>() : p.nbest.front().ids;
          stats.generatedTokens += static_cast<int64_t>(ids.size());
          texts.push_back(renderLine(ids, p, w, warned));
        }
        out << (w.sentences.empty() ? texts.front()
                                    : joinTranslations(texts, w.sentences))
            << "\n";
      } else {
        const Piece &p = w.pieces.front();
        searchWarnings(w);
        bool warned = false;
        for (int64_t k = 0; k < options.nBest && k < int64_t(p.nbest.size());
             ++k) {
          out << w.index << " ||| " << renderLine(p.nbest[k].ids, p, w, warned)
              << " ||| " << llvm::formatv("{0:f6}", p.nbest[k].score) << "\n";
          stats.generatedTokens += static_cast<int64_t>(p.nbest[k].ids.size());
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
    auto encode = [&](llvm::StringRef source) -> llvm::Expected<Encoding> {
      profile::Scope scope(profile::Region::Tokenize);
      if (sourceTokenizer)
        return sourceTokenizer->tokenize(source);
      auto ids = parseIdLine(source, vocab);
      if (!ids)
        return ids.takeError();
      Encoding e;
      e.ids = std::move(*ids);
      return e;
    };
    if (!text.trim().empty()) {
      std::vector<std::string> sources;
      if (split) {
        profile::Scope scope(profile::Region::Tokenize);
        w.sentences = splitSentences(text);
        for (const SplitSentence &s : w.sentences)
          sources.push_back(s.text);
        if (w.sentences.size() == 1)
          w.sentences.clear(); // nothing to join
      } else {
        sources.push_back(text.str());
      }
      bool truncated = cut;
      for (const std::string &source : sources) {
        llvm::Expected<Encoding> encoded = encode(source);
        if (!encoded) {
          // Text that cannot be read (invalid UTF-8) is a warning; token
          // ids that are not ids of the model are an error. Either way the
          // line gets an empty output line and the rest go on.
          w.bad = true;
          w.pieces.clear();
          w.sentences.clear();
          bool error = !sourceTokenizer;
          ++(error ? stats.badLines : stats.warnedLines);
          warn(llvm::formatv("{0}: input line {1}: {2}\n",
                             error ? "error" : "warning", stats.lines,
                             llvm::toString(encoded.takeError())));
          break;
        }
        Piece p;
        p.ids = std::move(encoded->ids);
        p.unknownSpans = std::move(encoded->unknownSpans);
        if (static_cast<int64_t>(p.ids.size()) > maxTokens) {
          if (!truncated) // counted once a line
            ++stats.truncatedLines;
          truncated = true;
          warn(llvm::formatv("warning: input line {0}: {1}{2} tokens, "
                             "truncated to {3} (max_len {4} with eos)\n",
                             stats.lines,
                             sources.size() > 1 ? "a sentence of " : "",
                             p.ids.size(), maxTokens, maxTokens + 1));
        }
        w.pieces.push_back(std::move(p));
      }
    }
    w.undonePieces = static_cast<int64_t>(w.pieces.size());
    undone += w.undonePieces;
    window.push_back(std::move(w));
  };

  // Translates `rows` (pieces of lines in the window) as one batch.
  bool beam = options.search.beamSize > 1 || options.scores;
  auto translateBatch = [&](llvm::ArrayRef<PieceRef> rows) -> llvm::Error {
    TokenRows sources;
    for (const PieceRef &r : rows)
      sources.push_back(r.piece->ids);
    if (beam) {
      auto outputs = session.translateBeam(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i].piece->nbest = std::move((*outputs)[i]);
    } else {
      auto outputs = session.translateGreedy(sources, options.search);
      if (!outputs)
        return outputs.takeError();
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i].piece->nbest = {std::move((*outputs)[i])};
    }
    for (const PieceRef &r : rows)
      --r.line->undonePieces;
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
    // The window's untranslated pieces, shortest first (stable), cut into
    // batches of at most batchSize rows and batchTokens padded source
    // tokens; lines are written in input order as soon as they are in.
    std::vector<PieceRef> todo;
    for (WindowLine &w : window)
      if (!w.done())
        for (Piece &p : w.pieces)
          todo.push_back({&w, &p});
    auto length = [&](const PieceRef &r) {
      return std::min<int64_t>(r.piece->ids.size(), maxTokens) + 1;
    };
    if (options.sortByLength)
      std::stable_sort(todo.begin(), todo.end(),
                       [&](const PieceRef &a, const PieceRef &b) {
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
              llvm::ArrayRef<PieceRef>(todo).slice(first, end - first)))
        return std::move(e);
      writeReady();
      first = end;
    }
  }
  progress.update(stats.writtenLines, stats.generatedTokens, /*force=*/true);
  progress.clear();
  return stats;
}
