//===- LayerRecipeTest.cpp - block recipe parsing and checks --------------===//

#include "frontends/model/LayerRecipe.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace tfmc::frontend;

namespace {

std::string errorOf(StringRef text, LayerKind kind = LayerKind::Encoder) {
  Expected<LayerRecipe> r = parseLayerRecipe(text, kind);
  if (r)
    return "";
  return toString(r.takeError());
}

TEST(LayerRecipeTest, ParsesSeed000EncoderLayer) {
  Expected<LayerRecipe> r = parseLayerRecipe(
      "x = x + self_attn(x); x = x + ffn(norm1(x)); x = norm2(x)",
      LayerKind::Encoder);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  ASSERT_EQ(r->statements.size(), 3u);
  EXPECT_EQ(r->norms(), (std::vector<std::string>{"norm1", "norm2"}));
  // Statement 2: x = x + ffn(norm1(x)).
  const RecipeNode &sum = r->nodes[r->statements[1].value];
  ASSERT_EQ(sum.kind, RecipeNode::Kind::Add);
  ASSERT_EQ(sum.operands.size(), 2u);
  EXPECT_EQ(r->nodes[sum.operands[0]].kind, RecipeNode::Kind::Variable);
  const RecipeNode &ffn = r->nodes[sum.operands[1]];
  EXPECT_EQ(ffn.kind, RecipeNode::Kind::FeedForward);
  const RecipeNode &norm = r->nodes[ffn.operands[0]];
  EXPECT_EQ(norm.kind, RecipeNode::Kind::Norm);
  EXPECT_EQ(norm.name, "norm1");
}

TEST(LayerRecipeTest, CanonicalTextIgnoresSpacingAndTrailingSemicolon) {
  Expected<LayerRecipe> a = parseLayerRecipe(
      "h=norm1(x);x=x+self_attn(h)+ffn(h);", LayerKind::Encoder);
  ASSERT_TRUE(bool(a)) << toString(a.takeError());
  EXPECT_EQ(a->str(), "h = norm1(x); x = x + self_attn(h) + ffn(h)");
  Expected<LayerRecipe> b = parseLayerRecipe(a->str(), LayerKind::Encoder);
  ASSERT_TRUE(bool(b));
  EXPECT_EQ(b->str(), a->str());
  // Three terms are one sum node with three operands.
  const RecipeNode &sum = a->nodes[a->statements[1].value];
  EXPECT_EQ(sum.operands.size(), 3u);
}

TEST(LayerRecipeTest, ShorthandsAreTheClassicArrangements) {
  EXPECT_EQ(postNormRecipe(LayerKind::Encoder).str(),
            "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))");
  EXPECT_EQ(preNormRecipe(LayerKind::Decoder).str(),
            "x = x + self_attn(norm1(x)); x = x + cross_attn(norm2(x)); "
            "x = x + ffn(norm3(x))");
  EXPECT_EQ(postNormRecipe(LayerKind::Decoder).norms(),
            (std::vector<std::string>{"norm1", "norm2", "norm3"}));
}

TEST(LayerRecipeTest, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(errorOf(""), "column 1: expected a statement");
  EXPECT_EQ(errorOf("x = "), "column 5: expected a value or a sublayer, "
                             "found the end of the recipe");
  EXPECT_EQ(errorOf("x = ffn(x"), "column 10: expected ')', found the end "
                                  "of the recipe");
  EXPECT_EQ(errorOf("x == x"), "column 4: expected a value or a sublayer, "
                               "found '='");
  EXPECT_EQ(errorOf("x = x + self_attn(x) x = ffn(x)"),
            "column 22: expected ';', found 'x'");
  EXPECT_EQ(errorOf("x = x - ffn(x)"), "column 7: unexpected character '-'");
  EXPECT_EQ(errorOf("x = ffn x"), "column 9: expected '(', found 'x'");
  EXPECT_EQ(errorOf("ffn = self_attn(x)"),
            "column 1: 'ffn' is a sublayer, not a value name");
  EXPECT_EQ(errorOf("x = norm0(x)"),
            "column 5: unknown sublayer 'norm0' (norms are norm1 ... norm9)");
  EXPECT_EQ(errorOf("x = \x01"), "column 5: unexpected character '\\x01'");
}

TEST(LayerRecipeTest, MeaningErrors) {
  EXPECT_EQ(errorOf("x = self_attn(x)"),
            "column 17: no ffn (an encoder layer needs exactly one)");
  EXPECT_EQ(errorOf("x = self_attn(x); x = ffn(x)", LayerKind::Decoder),
            "column 29: no cross_attn (a decoder layer needs exactly one)");
  EXPECT_EQ(errorOf("x = ffn(x) + ffn(x) + self_attn(x)"),
            "column 14: ffn occurs more than once (a layer has one)");
  EXPECT_EQ(errorOf("x = cross_attn(x)"),
            "column 5: cross_attn is only allowed in a decoder layer");
  EXPECT_EQ(errorOf("x = h + self_attn(x); h = ffn(x)"),
            "column 5: 'h' is used before it is assigned");
  EXPECT_EQ(errorOf("x = x + self_attn(x); h = ffn(x)"),
            "column 23: the value assigned to 'h' is never used (the layer "
            "output is the final x)");
  // Overwritten before use: the first value of x is dead.
  EXPECT_EQ(errorOf("x = ffn(x); x = self_attn(norm1(h)); h = x"),
            "column 33: 'h' is used before it is assigned");
  EXPECT_EQ(errorOf("h = ffn(x); x = self_attn(x); x = x + h"), "");
  EXPECT_EQ(errorOf("x = ffn(x); x = self_attn(norm1(x) + x)"), "");
}

TEST(LayerRecipeTest, NormsMayRepeat) {
  Expected<LayerRecipe> r = parseLayerRecipe(
      "x = norm1(x + self_attn(norm1(x))); x = norm1(x + ffn(x))",
      LayerKind::Encoder);
  ASSERT_TRUE(bool(r)) << toString(r.takeError());
  EXPECT_EQ(r->norms(), std::vector<std::string>{"norm1"});
}

} // namespace
