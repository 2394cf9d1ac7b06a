//===- VocabularyTest.cpp - vocabulary files ------------------------------===//

#include "TestFiles.h"

#include "frontends/model/Vocabulary.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

class VocabularyTest : public ::testing::Test {
protected:
  Expected<Vocabulary> load(StringRef text) {
    return Vocabulary::load(dir.write("v.vocab", text));
  }
  std::string loadError(StringRef text) {
    Expected<Vocabulary> vocab = load(text);
    if (vocab)
      return "";
    return toString(vocab.takeError());
  }
  std::string path() const { return dir.file("v.vocab"); }

  TempDir dir;
};

TEST_F(VocabularyTest, LoadsOneTokenPerLine) {
  Expected<Vocabulary> vocab = load("<pad>\n<s>\n</s>\n<unk>\nHallo\n世界\n");
  ASSERT_TRUE(bool(vocab)) << toString(vocab.takeError());
  EXPECT_EQ(vocab->size(), 6);
  EXPECT_EQ(vocab->token(0), "<pad>");
  EXPECT_EQ(vocab->token(5), "世界");
  EXPECT_EQ(vocab->lookup("Hallo"), 4);
  EXPECT_EQ(vocab->lookup("世界"), 5);
  EXPECT_EQ(vocab->lookup("missing"), std::nullopt);
}

TEST_F(VocabularyTest, LineEndings) {
  Expected<Vocabulary> crlf = load("a\r\nb\r\nc\r\n");
  ASSERT_TRUE(bool(crlf)) << toString(crlf.takeError());
  EXPECT_EQ(crlf->size(), 3);
  EXPECT_EQ(crlf->token(1), "b");
  Expected<Vocabulary> noFinalNewline = load("a\nb");
  ASSERT_TRUE(bool(noFinalNewline)) << toString(noFinalNewline.takeError());
  EXPECT_EQ(noFinalNewline->size(), 2);
  Expected<Vocabulary> bom = load("\xEF\xBB\xBF"
                                  "a\nb\n");
  ASSERT_TRUE(bool(bom)) << toString(bom.takeError());
  EXPECT_EQ(bom->token(0), "a");
}

TEST_F(VocabularyTest, EmptyFile) {
  EXPECT_EQ(loadError(""), path() + ": vocabulary is empty");
}

TEST_F(VocabularyTest, EmptyToken) {
  EXPECT_EQ(loadError("a\nb\n\nc\n"), path() + ": line 3: empty token");
  EXPECT_EQ(loadError("a\n\n"), path() + ": line 2: empty token");
}

TEST_F(VocabularyTest, InvalidUtf8) {
  EXPECT_EQ(loadError("a\nb\nok\xC3(\n"),
            path() + ": line 3: invalid UTF-8 at byte 3");
  EXPECT_EQ(loadError("\xFF\n"), path() + ": line 1: invalid UTF-8 at byte 1");
}

TEST_F(VocabularyTest, DuplicateToken) {
  EXPECT_EQ(loadError("a\nb\nc\nb\n"),
            path() + ": line 4: duplicate token \"b\" (first on line 2)");
}

TEST_F(VocabularyTest, MissingFile) {
  Expected<Vocabulary> vocab = Vocabulary::load(dir.file("none.vocab"));
  ASSERT_FALSE(bool(vocab));
  EXPECT_EQ(toString(vocab.takeError()),
            dir.file("none.vocab") +
                ": cannot open file: No such file or directory");
}

TEST_F(VocabularyTest, FromTokens) {
  Expected<Vocabulary> vocab = Vocabulary::fromTokens({"x", "y"}, "test");
  ASSERT_TRUE(bool(vocab)) << toString(vocab.takeError());
  EXPECT_EQ(vocab->lookup("y"), 1);
  Expected<Vocabulary> dup = Vocabulary::fromTokens({"x", "x"}, "test");
  ASSERT_FALSE(bool(dup));
  EXPECT_EQ(toString(dup.takeError()),
            "test: line 2: duplicate token \"x\" (first on line 1)");
}

} // namespace
