//===- TokenizerTest.cpp - tokenizers and the detokenizer -----------------===//
#include "runtime/tokenizers/Tokenizer.h"

#include <gtest/gtest.h>

using namespace tfmc;
using namespace tfmc::runtime;

namespace {

frontend::Vocabulary vocab(std::vector<std::string> tokens) {
  auto v = frontend::Vocabulary::fromTokens(std::move(tokens), "test");
  EXPECT_TRUE(static_cast<bool>(v));
  return std::move(*v);
}

/// The pieces a tokenizer looks up: encode the text and map ids back to
/// tokens (every piece of these tests is in the vocabulary).
std::vector<std::string> pieces(const Tokenizer &t,
                                const frontend::Vocabulary &v,
                                llvm::StringRef text) {
  auto ids = t.encode(text);
  EXPECT_TRUE(static_cast<bool>(ids));
  std::vector<std::string> out;
  for (int32_t id : *ids)
    out.push_back(v.token(id).str());
  return out;
}

TEST(Tokenizer, CharSplitsCjkCharactersAndAsciiWords) {
  frontend::Vocabulary v =
      vocab({"<pad>", "<s>", "</s>", "<unk>", "我", "们", "明", "天", "去",
             "公", "园", "吧", "。", "有", "2", "个", "iPhone", ",", "ok"});
  auto t = Tokenizer::create("char", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(pieces(**t, v, "我们明天去公园吧。"),
            (std::vector<std::string>{"我", "们", "明", "天", "去", "公", "园",
                                      "吧", "。"}));
  EXPECT_EQ(
      pieces(**t, v, "我有2个iPhone, ok"),
      (std::vector<std::string>{"我", "有", "2", "个", "iPhone", ",", "ok"}));
}

TEST(Tokenizer, WordSplitsWhitespaceAndPunctuation) {
  frontend::Vocabulary v =
      vocab({"<pad>", "<s>", "</s>", "<unk>", "Let", "'", "s", "go", "to",
             "the", "park", ",", "OK", "?"});
  auto t = Tokenizer::create("word", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(pieces(**t, v, "  Let's go to the park, OK?\t"),
            (std::vector<std::string>{"Let", "'", "s", "go", "to", "the",
                                      "park", ",", "OK", "?"}));
}

TEST(Tokenizer, UnknownPiecesMapToUnk) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>", "我", "们"});
  auto t = Tokenizer::create("char", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  auto ids = (*t)->encode("我们走");
  ASSERT_TRUE(static_cast<bool>(ids));
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 5, 3}));
}

TEST(Tokenizer, InvalidUtf8IsAnError) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("char", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  for (llvm::StringRef bad :
       {llvm::StringRef("ab\xff", 3), llvm::StringRef("\xe6\x88", 2),
        llvm::StringRef("\xc0\xaf", 2), llvm::StringRef("\xed\xa0\x80", 3)}) {
    auto ids = (*t)->encode(bad);
    ASSERT_FALSE(static_cast<bool>(ids));
    EXPECT_NE(llvm::toString(ids.takeError()).find("invalid UTF-8"),
              std::string::npos);
  }
}

TEST(Tokenizer, DetokenizerRestoresEnglishSpacing) {
  EXPECT_EQ(
      detokenize({"Let", "'s", "go", "to", "the", "park", ",", "OK", "?"}),
      "Let's go to the park, OK?");
  EXPECT_EQ(detokenize({"I", "don", "'t", "know", "(", "really", ")", "."}),
            "I don't know (really).");
  EXPECT_EQ(detokenize({"我", "们", "走", "。"}), "我们走。");
  EXPECT_EQ(detokenize({}), "");
}

TEST(Tokenizer, DecodeMapsIdsToPieces) {
  frontend::Vocabulary v =
      vocab({"<pad>", "<s>", "</s>", "<unk>", "Hello", ",", "world", "!"});
  auto t = Tokenizer::create("word", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ((*t)->decode({4, 5, 6, 7}), "Hello, world!");
  EXPECT_EQ((*t)->decode({4, 99}), "Hello <unk>");
}

TEST(Tokenizer, DetokenizerJoinsContractionsAndQuotes) {
  // What the word tokenizer makes of "Don't say "no", it's fine."
  EXPECT_EQ(detokenize({"Don", "'", "t", "say", "\"", "no", "\"", ",", "it",
                        "'", "s", "fine", "."}),
            "Don't say \"no\", it's fine.");
}

TEST(Tokenizer, WordRoundTripsEnglishSpacing) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>", "I", "'",
                                  "m", "not", "sure", ",", "am", "?"});
  auto t = Tokenizer::create("word", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  auto ids = (*t)->encode("I'm not sure, am I?");
  ASSERT_TRUE(static_cast<bool>(ids));
  EXPECT_EQ((*t)->decode(*ids), "I'm not sure, am I?");
}

TEST(Tokenizer, UnknownSourceSpansCanReplaceOutputUnks) {
  frontend::Vocabulary v =
      vocab({"<pad>", "<s>", "</s>", "<unk>", "我", "叫", "Hello", ","});
  auto src = Tokenizer::create("char", v, 3);
  ASSERT_TRUE(static_cast<bool>(src));
  auto enc = (*src)->tokenize("我叫Tom");
  ASSERT_TRUE(static_cast<bool>(enc));
  EXPECT_EQ(enc->ids, (std::vector<int32_t>{4, 5, 3}));
  EXPECT_EQ(enc->unknownSpans, (std::vector<std::string>{"Tom"}));
  auto tgt = Tokenizer::create("word", v, 3);
  ASSERT_TRUE(static_cast<bool>(tgt));
  EXPECT_EQ((*tgt)->decode({6, 7, 3}, enc->unknownSpans), "Hello, Tom");
  EXPECT_EQ((*tgt)->decode({6, 7, 3}), "Hello, <unk>");
  // More unks than spans: the rest stay visible.
  EXPECT_EQ((*tgt)->decode({3, 3}, enc->unknownSpans), "Tom <unk>");
}

TEST(Tokenizer, OutlivesTheVocabularyItWasMadeFrom) {
  // The driver builds the tokenizers from the loaded model, then moves the
  // model into the session: tokenizers must not point into it.
  std::unique_ptr<Tokenizer> t;
  {
    frontend::Vocabulary v =
        vocab({"<pad>", "<s>", "</s>", "<unk>", "Hello", ",", "world", "!"});
    auto created = Tokenizer::create("word", v, 3);
    ASSERT_TRUE(static_cast<bool>(created));
    t = std::move(*created);
    frontend::Vocabulary moved = std::move(v);
  }
  EXPECT_EQ(t->decode({4, 5, 6, 7}), "Hello, world!");
  auto ids = t->encode("world, Hello!");
  ASSERT_TRUE(static_cast<bool>(ids));
  EXPECT_EQ(*ids, (std::vector<int32_t>{6, 5, 4, 7}));
}

TEST(Tokenizer, UnknownKindIsAnError) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("bpe", v, 3);
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_EQ(llvm::toString(t.takeError()), "unknown tokenizer kind 'bpe'");
}

// The SentencePiece kind, with the bundled zh->en model's tokenizers. The
// expected ids and pieces come from the Python `sentencepiece` module on the
// same model files (the one the model was trained with).
std::string bundled(llvm::StringRef file) {
  return std::string(TFMC_SOURCE_DIR "/examples/zh-en/") + file.str();
}

struct SpmSide {
  frontend::Vocabulary vocab;
  std::unique_ptr<Tokenizer> tokenizer;
};

SpmSide loadSpm(llvm::StringRef side) {
  auto v = frontend::Vocabulary::load(bundled(side.str() + ".vocab"));
  EXPECT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  SpmSide s{std::move(*v), nullptr};
  auto t = Tokenizer::create("sentencepiece", s.vocab, 3,
                             bundled(side.str() + ".spm"));
  EXPECT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  s.tokenizer = std::move(*t);
  return s;
}

TEST(SentencePiece, EncodesLikeThePythonModule) {
  SpmSide src = loadSpm("src");
  auto ids = src.tokenizer->encode("我们明天去公园吧。");
  ASSERT_TRUE(static_cast<bool>(ids));
  EXPECT_EQ(*ids, (std::vector<int32_t>{22, 239, 33, 934, 87, 4}));
  EXPECT_EQ(src.vocab.token(22), "\xe2\x96\x81我们");
}

TEST(SentencePiece, DecodesToNormalText) {
  SpmSide tgt = loadSpm("tgt");
  std::vector<int32_t> ids = {141, 6, 8, 57, 7, 9, 384, 143, 21, 924, 12};
  EXPECT_EQ(tgt.tokenizer->decode(ids), "Let's go to the park tomorrow, OK?");
  auto again = tgt.tokenizer->encode("Let's go to the park tomorrow, OK?");
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(*again, ids);
}

TEST(SentencePiece, UnknownCharactersMapToUnkAndKeepTheirText) {
  SpmSide src = loadSpm("src");
  SpmSide tgt = loadSpm("tgt");
  auto enc = src.tokenizer->tokenize("他养了一只龘。");
  ASSERT_TRUE(static_cast<bool>(enc));
  EXPECT_EQ(enc->ids, (std::vector<int32_t>{13, 1142, 7, 586, 3, 4}));
  EXPECT_EQ(enc->unknownSpans, (std::vector<std::string>{"龘"}));
  // "the park" + unk + "?": visible by default, or the source text.
  EXPECT_EQ(tgt.tokenizer->decode({9, 384, 3, 12}), "the park <unk>?");
  EXPECT_EQ(tgt.tokenizer->decode({9, 384, 3, 12}, enc->unknownSpans),
            "the park 龘?");
}

TEST(SentencePiece, InvalidUtf8IsAnError) {
  SpmSide src = loadSpm("src");
  auto ids = src.tokenizer->encode(llvm::StringRef("我\xff", 4));
  ASSERT_FALSE(static_cast<bool>(ids));
  EXPECT_EQ(llvm::toString(ids.takeError()), "invalid UTF-8 at byte 3");
}

TEST(SentencePiece, ModelAndVocabularyMustAgree) {
  frontend::Vocabulary small = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("sentencepiece", small, 3, bundled("src.spm"));
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(llvm::toString(t.takeError())
                .find("has 4000 pieces but the vocabulary has 4 tokens"),
            std::string::npos);

  // The target vocabulary has the right size but other pieces.
  auto tgtVocab = frontend::Vocabulary::load(bundled("tgt.vocab"));
  ASSERT_TRUE(static_cast<bool>(tgtVocab));
  t = Tokenizer::create("sentencepiece", *tgtVocab, 3, bundled("src.spm"));
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("but vocabulary line"),
            std::string::npos);

  auto srcVocab = frontend::Vocabulary::load(bundled("src.vocab"));
  ASSERT_TRUE(static_cast<bool>(srcVocab));
  t = Tokenizer::create("sentencepiece", *srcVocab, 2, bundled("src.spm"));
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(llvm::toString(t.takeError())
                .find("uses unk id 3 but special_tokens.unk is 2"),
            std::string::npos);

  t = Tokenizer::create("sentencepiece", *srcVocab, 3, "/nonexistent.spm");
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(llvm::toString(t.takeError())
                .find("cannot load SentencePiece model '/nonexistent.spm'"),
            std::string::npos);
}

/// Marian's and fairseq's arrangement: the ids come from a vocabulary file
/// in its own order (here: specials first, the model's pieces reversed, pad
/// last), and pieces it lacks are unk.
TEST(SentencePiece, PiecesMappedThroughTheVocabulary) {
  auto srcVocab = frontend::Vocabulary::load(bundled("src.vocab"));
  ASSERT_TRUE(static_cast<bool>(srcVocab));
  auto plain = Tokenizer::create("sentencepiece", *srcVocab, 3,
                                 bundled("src.spm"));
  ASSERT_TRUE(static_cast<bool>(plain));
  const int64_t n = srcVocab->size();
  std::vector<std::string> tokens = {"</s>", "<unk>"};
  for (int64_t id = n - 1; id >= 4; --id)
    if (srcVocab->token(id) != "\xe5\x85\xac\xe5\x9b\xad") // 公园: left out
      tokens.push_back(srcVocab->token(id).str());
  tokens.push_back("<pad>");
  frontend::Vocabulary mapped = vocab(tokens);
  auto t = Tokenizer::create("sentencepiece", mapped, 1, bundled("src.spm"),
                             /*piecesThroughVocab=*/true);
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());

  llvm::StringRef text = "我们明天去公园吧。";
  auto modelIds = (*plain)->encode(text);
  auto ids = (*t)->encode(text);
  ASSERT_TRUE(static_cast<bool>(modelIds) && static_cast<bool>(ids));
  ASSERT_EQ(ids->size(), modelIds->size());
  int unknown = 0;
  for (size_t i = 0; i < ids->size(); ++i) {
    llvm::StringRef piece = srcVocab->token((*modelIds)[i]);
    if (piece == "\xe5\x85\xac\xe5\x9b\xad") {
      EXPECT_EQ((*ids)[i], 1) << "a piece missing from the vocabulary is unk";
      ++unknown;
      continue;
    }
    EXPECT_EQ(mapped.token((*ids)[i]), piece);
  }
  EXPECT_EQ(unknown, 1);

  // Decoding hands the vocabulary's tokens to SentencePiece: the same text
  // as the model's own ids, unk written as the vocabulary's unk token.
  std::vector<int32_t> known;
  for (int32_t id : *modelIds)
    if (srcVocab->token(id) != "\xe5\x85\xac\xe5\x9b\xad")
      known.push_back(id);
  std::vector<int32_t> knownMapped;
  for (int32_t id : *ids)
    if (id != 1)
      knownMapped.push_back(id);
  EXPECT_EQ((*t)->decode(knownMapped), (*plain)->decode(known));
  EXPECT_EQ((*t)->decode(*ids), "我们明天去 <unk>吧。");
  // No piece-by-piece check against the model in this mode.
  EXPECT_NE(mapped.size(), srcVocab->size());
}

} // namespace
