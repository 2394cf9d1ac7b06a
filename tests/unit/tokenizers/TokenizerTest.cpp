//===- TokenizerTest.cpp - char/word tokenizers and the detokenizer -------===//
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

std::vector<std::string> pieces(const Tokenizer &t, llvm::StringRef text) {
  return t.split(text);
}

TEST(Tokenizer, CharSplitsCjkCharactersAndAsciiWords) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("char", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(pieces(**t, "我们明天去公园吧。"),
            (std::vector<std::string>{"我", "们", "明", "天", "去", "公", "园",
                                      "吧", "。"}));
  EXPECT_EQ(
      pieces(**t, "我有2个iPhone, ok"),
      (std::vector<std::string>{"我", "有", "2", "个", "iPhone", ",", "ok"}));
}

TEST(Tokenizer, WordSplitsWhitespaceAndPunctuation) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("word", v, 3);
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(pieces(**t, "  Let's go to the park, OK?\t"),
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

TEST(Tokenizer, SentencePieceIsNotAvailableYet) {
  frontend::Vocabulary v = vocab({"<pad>", "<s>", "</s>", "<unk>"});
  auto t = Tokenizer::create("sentencepiece", v, 3);
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("not available yet"),
            std::string::npos);
}

} // namespace
