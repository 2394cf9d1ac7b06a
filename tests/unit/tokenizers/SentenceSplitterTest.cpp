//===- SentenceSplitterTest.cpp - lines into sentences and back -----------===//
#include "runtime/tokenizers/SentenceSplitter.h"

#include <gtest/gtest.h>

using namespace tfmc::runtime;

namespace {

/// The sentences' texts; checks that they and their separators rebuild the
/// line byte for byte.
std::vector<std::string> texts(const std::string &line) {
  std::vector<SplitSentence> parts = splitSentences(line);
  std::string rebuilt;
  std::vector<std::string> out;
  for (const SplitSentence &p : parts) {
    rebuilt += p.before + p.text;
    out.push_back(p.text);
  }
  EXPECT_EQ(rebuilt, line);
  return out;
}

using Texts = std::vector<std::string>;

TEST(SentenceSplitter, ChinesePunctuationAndRuns) {
  EXPECT_EQ(texts("今天天气很好。我们去公园吧！你来吗？"),
            (Texts{"今天天气很好。", "我们去公园吧！", "你来吗？"}));
  // Runs of marks stay together; so do ellipses.
  EXPECT_EQ(texts("真的吗？！我不信……他走了。。"),
            (Texts{"真的吗？！", "我不信……", "他走了。。"}));
  EXPECT_EQ(texts("第一；第二。"), (Texts{"第一；", "第二。"}));
}

TEST(SentenceSplitter, ClosingQuotesAndBracketsStay) {
  EXPECT_EQ(texts("“我该做什么呢？”我自言自语道。"),
            (Texts{"“我该做什么呢？”", "我自言自语道。"}));
  EXPECT_EQ(texts("他说：「好吧。」（然后走了。）再见。"),
            (Texts{"他说：「好吧。」", "（然后走了。）", "再见。"}));
  EXPECT_EQ(texts("\"他明天会去游泳吗?\" \"是的, 他会。\""),
            (Texts{"\"他明天会去游泳吗?\"", "\"是的, 他会。\""}));
  EXPECT_EQ(texts("He said \"Stop!\" Then he left."),
            (Texts{"He said \"Stop!\"", "Then he left."}));
  // An ASCII quote after the marks opens the next sentence unless one is
  // open; apostrophes inside words do not count.
  EXPECT_EQ(texts("你说的不是真的。\"他会去吗?\" \"是的。\""),
            (Texts{"你说的不是真的。", "\"他会去吗?\"", "\"是的。\""}));
  EXPECT_EQ(texts("It's 'fine.' Don't go."),
            (Texts{"It's 'fine.'", "Don't go."}));
}

TEST(SentenceSplitter, WesternPunctuationNumbersAndAbbreviations) {
  EXPECT_EQ(texts("Pi is 3.14 or so. Mr. Smith met Dr. Who at 5 p.m. today."),
            (Texts{"Pi is 3.14 or so.", "Mr. Smith met Dr. Who at 5 p.m. today."}));
  EXPECT_EQ(texts("Is it? Yes! It is; really."),
            (Texts{"Is it?", "Yes!", "It is;", "really."}));
  EXPECT_EQ(texts("J. R. R. Tolkien wrote it. E.g. this one. And etc. too"),
            (Texts{"J. R. R. Tolkien wrote it.", "E.g. this one.",
                   "And etc. too"}));
  // A period before a lowercase word does not end the sentence.
  EXPECT_EQ(texts("It costs approx. ten dollars."),
            (Texts{"It costs approx. ten dollars."}));
  EXPECT_EQ(texts("Well... he said so. See www.example.com now."),
            (Texts{"Well... he said so.", "See www.example.com now."}));
  EXPECT_EQ(texts("价格是3.5元。好的。"), (Texts{"价格是3.5元。", "好的。"}));
  // After a CJK character ASCII marks end the sentence, spaced or not.
  EXPECT_EQ(texts("你的手干净吗?5加10很简单."),
            (Texts{"你的手干净吗?", "5加10很简单."}));
}

TEST(SentenceSplitter, MixedAndFullWidth) {
  EXPECT_EQ(texts("我喜欢Python. 你呢?我也是!"),
            (Texts{"我喜欢Python.", "你呢?", "我也是!"}));
  EXPECT_EQ(texts("你好！　他好．"), (Texts{"你好！", "他好．"}));
  // Separators are kept: leading, between and trailing whitespace.
  std::vector<SplitSentence> parts = splitSentences("  A b. C d.  E f.  ");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].before, "  ");
  EXPECT_EQ(parts[1].before, " ");
  EXPECT_EQ(parts[2].before, "  ");
  EXPECT_EQ(parts[2].text, "E f.  ");
}

TEST(SentenceSplitter, NoFinalPunctuationAndShortSentences) {
  EXPECT_EQ(texts("我们走吧"), (Texts{"我们走吧"}));
  EXPECT_EQ(texts("我们走吧。然后吃饭"), (Texts{"我们走吧。", "然后吃饭"}));
  // Fewer than two letters: joined with the next, or the previous if last.
  EXPECT_EQ(texts("好。我们走吧。"), (Texts{"好。我们走吧。"}));
  EXPECT_EQ(texts("我们走吧。好。"), (Texts{"我们走吧。好。"}));
  EXPECT_EQ(texts("。。。"), (Texts{"。。。"}));
  EXPECT_EQ(texts("!"), (Texts{"!"}));
  EXPECT_EQ(texts(""), (Texts{""}));
  EXPECT_EQ(texts("真疼。冷静点。"), (Texts{"真疼。", "冷静点。"}));
}

TEST(SentenceSplitter, InvalidUtf8IsOneSentence) {
  std::string bad = "好。\xff坏。";
  EXPECT_EQ(texts(bad), (Texts{bad}));
}

TEST(SentenceSplitter, HostileLines) {
  // 100,000 marks: one run, one sentence, linear time.
  std::string marks;
  for (int i = 0; i < 100000; ++i)
    marks += "。";
  EXPECT_EQ(texts(marks).size(), 1u);
  // 50,000 one-letter sentences all merge (counts add up, no rescans).
  std::string tiny;
  for (int i = 0; i < 50000; ++i)
    tiny += "a. ";
  EXPECT_EQ(splitSentences(tiny).size(), 1u);
}

TEST(SentenceSplitter, JoinSpacesEnglishAndKeepsCjkSeparators) {
  std::vector<SplitSentence> src = splitSentences("你好。 他好。");
  EXPECT_EQ(joinTranslations({"Hello.", "He is fine."}, src),
            "Hello. He is fine.");
  EXPECT_EQ(joinTranslations({"你好。", "他好。"}, src), "你好。 他好。");
  std::vector<SplitSentence> tight = splitSentences("Hi. Bye.");
  EXPECT_EQ(joinTranslations({"嗨。", "再见。"}, tight), "嗨。 再见。");
  std::vector<SplitSentence> none = splitSentences("Hi.Bye!");
  EXPECT_EQ(joinTranslations({"", "Bye."}, none), "Bye.");
  EXPECT_EQ(joinTranslations({"A.", ""}, none), "A.");
}

} // namespace
