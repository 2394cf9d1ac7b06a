//===- LayerRecipe.cpp - one layer's wiring of sublayers ------------------===//
//
// A recursive-descent parser over a tiny token stream, followed by the
// checks that make a recipe buildable: sublayer counts, assignment before
// use, and no computed value left unused.
//
//===----------------------------------------------------------------------===//
#include "frontends/model/LayerRecipe.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace llvm;

namespace tfmc::frontend {

namespace {

struct Token {
  enum Kind { Name, Symbol, End } kind;
  StringRef text;
  size_t column; // 1-based
};

Error recipeError(size_t column, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           "column " + Twine(column) + ": " + message);
}

Expected<std::vector<Token>> tokenize(StringRef text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (isAlpha(c) || c == '_') {
      size_t start = i;
      while (i < text.size() && (isAlnum(text[i]) || text[i] == '_'))
        ++i;
      tokens.push_back({Token::Name, text.slice(start, i), start + 1});
      continue;
    }
    if (StringRef("=+();").contains(c)) {
      tokens.push_back({Token::Symbol, text.substr(i, 1), i + 1});
      ++i;
      continue;
    }
    return recipeError(
        i + 1,
        formatv("unexpected character '{0}'",
                isPrint(c)
                    ? std::string(1, c)
                    : formatv("\\x{0:x-2}", unsigned(uint8_t(c))).str()));
  }
  tokens.push_back({Token::End, "", text.size() + 1});
  return tokens;
}

/// normK with K in 1..9.
bool isNormName(StringRef name) {
  return name.size() == 5 && name.starts_with("norm") && name[4] >= '1' &&
         name[4] <= '9';
}

/// Names that are sublayers (or look like norms) and cannot hold values.
bool isReserved(StringRef name) {
  if (name == "self_attn" || name == "cross_attn" || name == "ffn")
    return true;
  return name.starts_with("norm") && name.size() > 4 &&
         all_of(name.drop_front(4), [](char c) { return isDigit(c); });
}

class Parser {
public:
  Parser(std::vector<Token> tokens, LayerKind kind)
      : tokens(std::move(tokens)), kind(kind) {}

  Expected<LayerRecipe> parse() {
    for (;;) {
      if (peek().kind == Token::End) {
        if (recipe.statements.empty())
          return recipeError(peek().column, "expected a statement");
        break;
      }
      if (Error e = statement())
        return std::move(e);
      if (peek().kind == Token::End)
        break;
      if (Error e = expect(";"))
        return std::move(e);
    }
    if (Error e = checkCounts())
      return std::move(e);
    if (Error e = checkLiveness())
      return std::move(e);
    return std::move(recipe);
  }

private:
  const Token &peek() const { return tokens[pos]; }
  Token next() { return tokens[pos == tokens.size() - 1 ? pos : pos++]; }

  static std::string describe(const Token &t) {
    if (t.kind == Token::End)
      return "the end of the recipe";
    return ("'" + t.text + "'").str();
  }

  Error expect(StringRef symbol) {
    Token t = next();
    if (t.kind == Token::Symbol && t.text == symbol)
      return Error::success();
    return recipeError(t.column,
                       "expected '" + symbol + "', found " + describe(t));
  }

  Error statement() {
    Token target = next();
    if (target.kind != Token::Name)
      return recipeError(target.column,
                         "expected a value name, found " + describe(target));
    if (isReserved(target.text))
      return recipeError(target.column, "'" + target.text +
                                            "' is a sublayer, not a value "
                                            "name");
    if (Error e = expect("="))
      return e;
    Expected<int> value = expression();
    if (!value)
      return value.takeError();
    recipe.statements.push_back({target.text.str(), *value});
    statementColumns.push_back(target.column);
    assigned.insert(target.text);
    return Error::success();
  }

  Expected<int> expression() {
    Expected<int> first = term();
    if (!first)
      return first.takeError();
    if (!(peek().kind == Token::Symbol && peek().text == "+"))
      return *first;
    RecipeNode add;
    add.kind = RecipeNode::Kind::Add;
    add.operands.push_back(*first);
    while (peek().kind == Token::Symbol && peek().text == "+") {
      next();
      Expected<int> operand = term();
      if (!operand)
        return operand.takeError();
      add.operands.push_back(*operand);
    }
    return addNode(std::move(add));
  }

  /// Parentheses nest at most this deep (the parser recurses per level).
  static constexpr int kMaxDepth = 64;

  Expected<int> term() {
    if (depth >= kMaxDepth)
      return recipeError(peek().column,
                         "nested deeper than " + Twine(kMaxDepth) + " levels");
    Token t = next();
    if (t.kind != Token::Name)
      return recipeError(t.column, "expected a value or a sublayer, found " +
                                       describe(t));
    if (!isReserved(t.text)) {
      if (!assigned.contains(t.text))
        return recipeError(t.column,
                           "'" + t.text + "' is used before it is assigned");
      RecipeNode var;
      var.name = t.text.str();
      return addNode(std::move(var));
    }
    RecipeNode call;
    if (t.text == "self_attn") {
      call.kind = RecipeNode::Kind::SelfAttention;
    } else if (t.text == "cross_attn") {
      if (kind == LayerKind::Encoder)
        return recipeError(t.column,
                           "cross_attn is only allowed in a decoder layer");
      call.kind = RecipeNode::Kind::CrossAttention;
    } else if (t.text == "ffn") {
      call.kind = RecipeNode::Kind::FeedForward;
    } else if (isNormName(t.text)) {
      call.kind = RecipeNode::Kind::Norm;
      call.name = t.text.str();
    } else {
      return recipeError(t.column, "unknown sublayer '" + t.text +
                                       "' (norms are norm1 ... norm9)");
    }
    if (call.kind != RecipeNode::Kind::Norm) {
      int &count = counts[t.text];
      if (++count > 1)
        return recipeError(t.column, t.text + " occurs more than once (a "
                                              "layer has one)");
    }
    if (Error e = expect("("))
      return std::move(e);
    ++depth;
    Expected<int> operand = expression();
    --depth;
    if (!operand)
      return operand.takeError();
    if (Error e = expect(")"))
      return std::move(e);
    call.operands.push_back(*operand);
    return addNode(std::move(call));
  }

  int addNode(RecipeNode node) {
    recipe.nodes.push_back(std::move(node));
    return static_cast<int>(recipe.nodes.size()) - 1;
  }

  Error checkCounts() {
    std::vector<StringRef> required = {"self_attn", "ffn"};
    if (kind == LayerKind::Decoder)
      required.insert(required.begin() + 1, "cross_attn");
    // A missing sublayer is noticed at the end of the text.
    for (StringRef name : required)
      if (!counts.lookup(name))
        return recipeError(
            tokens.back().column,
            "no " + name + " (a" +
                (kind == LayerKind::Decoder ? " decoder" : "n encoder") +
                " layer needs exactly one)");
    return Error::success();
  }

  void collectVariables(int node, std::set<std::string> &out) const {
    const RecipeNode &n = recipe.nodes[node];
    if (n.kind == RecipeNode::Kind::Variable)
      out.insert(n.name);
    for (int o : n.operands)
      collectVariables(o, out);
  }

  /// Every statement's value must reach the layer output (the final `x`):
  /// a sublayer computed into a dead value would be silently ignored.
  Error checkLiveness() const {
    std::set<std::string> live = {"x"};
    for (size_t i = recipe.statements.size(); i-- > 0;) {
      const LayerRecipe::Statement &s = recipe.statements[i];
      if (!live.count(s.target))
        return recipeError(statementColumns[i],
                           "the value assigned to '" + s.target +
                               "' is never used (the layer output is the "
                               "final x)");
      live.erase(s.target);
      collectVariables(s.value, live);
    }
    return Error::success();
  }

  std::vector<Token> tokens;
  size_t pos = 0;
  int depth = 0;
  LayerKind kind;
  LayerRecipe recipe;
  std::vector<size_t> statementColumns;
  StringSet<> assigned = {"x"};
  StringMap<int> counts;
};

void printNode(const LayerRecipe &r, int index, std::string &out) {
  const RecipeNode &n = r.nodes[index];
  auto call = [&](StringRef name) {
    out += name;
    out += '(';
    printNode(r, n.operands[0], out);
    out += ')';
  };
  switch (n.kind) {
  case RecipeNode::Kind::Variable:
    out += n.name;
    return;
  case RecipeNode::Kind::SelfAttention:
    return call("self_attn");
  case RecipeNode::Kind::CrossAttention:
    return call("cross_attn");
  case RecipeNode::Kind::FeedForward:
    return call("ffn");
  case RecipeNode::Kind::Norm:
    return call(n.name);
  case RecipeNode::Kind::Add:
    for (auto [i, o] : enumerate(n.operands)) {
      if (i)
        out += " + ";
      printNode(r, o, out);
    }
    return;
  }
}

LayerRecipe mustParse(StringRef text, LayerKind kind) {
  Expected<LayerRecipe> r = parseLayerRecipe(text, kind);
  if (!r)
    report_fatal_error(r.takeError());
  return std::move(*r);
}

} // namespace

std::vector<std::string> LayerRecipe::norms() const {
  std::set<std::string> names;
  for (const RecipeNode &n : nodes)
    if (n.kind == RecipeNode::Kind::Norm)
      names.insert(n.name);
  return {names.begin(), names.end()};
}

std::string LayerRecipe::str() const {
  std::string out;
  for (auto [i, s] : enumerate(statements)) {
    if (i)
      out += "; ";
    out += s.target + " = ";
    printNode(*this, s.value, out);
  }
  return out;
}

/// Tokens a recipe may have: real ones have a few dozen; the compiler's
/// time grows faster than linearly with the sums' operands (500 terms: 5 s,
/// 2000: 35 s), so a hostile recipe is refused rather than compiled.
constexpr size_t kMaxRecipeTokens = 512;

Expected<LayerRecipe> parseLayerRecipe(StringRef text, LayerKind kind) {
  Expected<std::vector<Token>> tokens = tokenize(text);
  if (!tokens)
    return tokens.takeError();
  if (tokens->size() > kMaxRecipeTokens + 1) // + End
    return recipeError((*tokens)[kMaxRecipeTokens].column,
                       "the recipe is longer than " + Twine(kMaxRecipeTokens) +
                           " tokens");
  return Parser(std::move(*tokens), kind).parse();
}

LayerRecipe postNormRecipe(LayerKind kind) {
  if (kind == LayerKind::Encoder)
    return mustParse("x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))",
                     kind);
  return mustParse("x = norm1(x + self_attn(x)); x = norm2(x + cross_attn(x));"
                   " x = norm3(x + ffn(x))",
                   kind);
}

LayerRecipe preNormRecipe(LayerKind kind) {
  if (kind == LayerKind::Encoder)
    return mustParse("x = x + self_attn(norm1(x)); x = x + ffn(norm2(x))",
                     kind);
  return mustParse("x = x + self_attn(norm1(x)); x = x + cross_attn(norm2(x));"
                   " x = x + ffn(norm3(x))",
                   kind);
}

} // namespace tfmc::frontend
