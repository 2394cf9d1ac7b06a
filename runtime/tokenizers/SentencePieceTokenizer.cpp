//===- SentencePieceTokenizer.cpp - the `sentencepiece` kind ------------===//
//
// Encoding and decoding go through libsentencepiece with the model named in
// model.json, so pieces, normalisation and detokenisation are exactly those
// of the Python `sentencepiece` module the model was trained with. Ids are
// either the model's own (the vocabulary file must list the model's pieces
// in id order; a mismatch is an error at load time rather than silently
// shifted ids) or, for converted Marian/fairseq models ("piece_ids":
// "vocab"), the line of each piece's text in the vocabulary file: encoding
// looks pieces up there (unknown: unk), decoding hands the vocabulary's
// tokens to SentencePiece's piece decoder.
//
//===----------------------------------------------------------------------===//
#include "runtime/tokenizers/Tokenizer.h"

#include "frontends/model/FileSupport.h"

#include <exception>
#include <optional>

#include "llvm/ADT/StringExtras.h"

#include <sentencepiece_processor.h>

using namespace tfmc;
using namespace tfmc::runtime;

namespace {

/// U+2581, which SentencePiece puts in front of word-initial pieces.
constexpr llvm::StringLiteral kWordBoundary = "\xe2\x96\x81";

class SentencePieceTokenizer : public Tokenizer {
public:
  SentencePieceTokenizer(const frontend::Vocabulary &vocab, int32_t unk,
                         bool piecesThroughVocab)
      : vocab(vocab), unk(unk), piecesThroughVocab(piecesThroughVocab) {}

  sentencepiece::SentencePieceProcessor processor;

  llvm::Expected<Encoding> tokenize(llvm::StringRef text) const override {
    if (llvm::Error e = validateUtf8(text))
      return std::move(e);
    sentencepiece::ImmutableSentencePieceText spt =
        processor.EncodeAsImmutableProto(
            absl::string_view(text.data(), text.size()));
    Encoding enc;
    for (size_t i = 0; i < spt.pieces_size(); ++i) {
      auto piece = spt.pieces(static_cast<int>(i));
      auto id = static_cast<int32_t>(piece.id());
      if (piecesThroughVocab) {
        // By the piece's text, as Marian's and fairseq's tokenizers do (an
        // unknown character's piece is the character itself).
        std::optional<int64_t> found = vocab.lookup(piece.piece());
        id = found ? static_cast<int32_t>(*found) : unk;
      }
      enc.ids.push_back(id);
      if (id == unk)
        enc.unknownSpans.push_back(
            llvm::StringRef(piece.surface()).trim().str());
    }
    return enc;
  }

  std::string
  decode(llvm::ArrayRef<int32_t> ids,
         llvm::ArrayRef<std::string> unkReplacements) const override {
    // Runs of known ids are decoded by SentencePiece; an unk between runs is
    // written as its replacement or as the unk piece, with a space before it
    // (unless it starts the line) and after it when the next run starts a
    // new word.
    std::string out;
    std::vector<int> run;
    size_t unks = 0;
    auto flushRun = [&] {
      if (run.empty())
        return;
      std::string text;
      bool newWord;
      if (piecesThroughVocab) {
        std::vector<std::string> pieces;
        for (int id : run)
          pieces.push_back(vocab.token(id).str());
        if (!processor.Decode(pieces, &text).ok())
          text.clear();
        newWord = llvm::StringRef(pieces.front()).starts_with(kWordBoundary);
      } else {
        if (!processor.Decode(run, &text).ok())
          text.clear();
        newWord = llvm::StringRef(processor.IdToPiece(run.front()))
                      .starts_with(kWordBoundary);
      }
      if (!out.empty() && newWord && !text.empty())
        out += ' ';
      out += text;
      run.clear();
    };
    for (int32_t id : ids) {
      if (id >= 0 && id < vocab.size() && id != unk) {
        run.push_back(id);
        continue;
      }
      flushRun();
      if (!out.empty())
        out += ' ';
      out += unks < unkReplacements.size() ? unkReplacements[unks++]
                                           : vocab.token(unk).str();
    }
    flushRun();
    return out;
  }

private:
  const frontend::Vocabulary vocab; // own copy: may outlive the model
  int32_t unk;
  bool piecesThroughVocab;
};

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str().c_str());
}

} // namespace

llvm::Expected<std::unique_ptr<Tokenizer>>
tfmc::runtime::createSentencePieceTokenizer(llvm::StringRef modelPath,
                                            const frontend::Vocabulary &vocab,
                                            int32_t unk,
                                            bool piecesThroughVocab) {
  auto tokenizer =
      std::make_unique<SentencePieceTokenizer>(vocab, unk, piecesThroughVocab);
  sentencepiece::SentencePieceProcessor &sp = tokenizer->processor;
  // Read the file here (regular files only; libsentencepiece's own reader
  // throws on a directory) and hand the bytes over.
  auto bytes = frontend::openFile(modelPath);
  if (!bytes)
    return fail("cannot load SentencePiece model '" + modelPath +
                "': " + llvm::toString(bytes.takeError()));
  llvm::StringRef serialized = (*bytes)->getBuffer();
  // libsentencepiece throws (e.g. from its trie builder) on some malformed
  // models; this file is built with exceptions so that none escapes.
  sentencepiece::util::Status status;
  try {
    status = sp.LoadFromSerializedProto(
        absl::string_view(serialized.data(), serialized.size()));
  } catch (const std::exception &e) {
    return fail("cannot load SentencePiece model '" + modelPath +
                "': " + e.what());
  } catch (...) {
    return fail("cannot load SentencePiece model '" + modelPath +
                "': the SentencePiece library failed on it");
  }
  if (!status.ok())
    return fail("cannot load SentencePiece model '" + modelPath +
                "': " + status.ToString());
  // Mapped through the vocabulary: the model only splits and joins text.
  if (piecesThroughVocab)
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  if (sp.GetPieceSize() != vocab.size())
    return fail("SentencePiece model '" + modelPath + "' has " +
                llvm::Twine(sp.GetPieceSize()) +
                " pieces but the vocabulary has " + llvm::Twine(vocab.size()) +
                " tokens");
  if (sp.unk_id() != unk)
    return fail("SentencePiece model '" + modelPath + "' uses unk id " +
                llvm::Twine(sp.unk_id()) + " but special_tokens.unk is " +
                llvm::Twine(unk));
  for (int id = 0; id < sp.GetPieceSize(); ++id)
    if (sp.IdToPiece(id) != vocab.token(id))
      return fail("SentencePiece model '" + modelPath + "' piece " +
                  llvm::Twine(id) + " is '" + sp.IdToPiece(id) +
                  "' but vocabulary line " + llvm::Twine(id + 1) + " is '" +
                  vocab.token(id) + "'");
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}
