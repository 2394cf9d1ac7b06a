//===- LayerRecipe.h - one layer's wiring of sublayers ----------*- C++ -*-===//
//
// A block recipe says how one encoder or decoder layer combines its
// sublayers, e.g. seed 000's encoder layer
//
//   x = x + self_attn(x); x = x + ffn(norm1(x)); x = norm2(x)
//
// Grammar (whitespace ignored):
//   recipe := stmt (';' stmt)* [';']
//   stmt   := NAME '=' expr
//   expr   := term ('+' term)*
//   term   := NAME | FUNC '(' expr ')'
//   FUNC   := self_attn | cross_attn | ffn | norm1 ... norm9
// `x` is the layer input and the final value of `x` its output; other names
// are local values that must be assigned before use. self_attn and ffn occur
// exactly once, cross_attn exactly once in a decoder layer and never in an
// encoder layer; norms any number of times, each normK with its own weights.
// See docs/model-format.md.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_LAYERRECIPE_H
#define FRONTENDS_MODEL_LAYERRECIPE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tfmc::frontend {

enum class LayerKind { Encoder, Decoder };

struct RecipeNode {
  enum class Kind {
    Variable,       // name
    SelfAttention,  // operands[0]
    CrossAttention, // operands[0]
    FeedForward,    // operands[0]
    Norm,           // name = "normK", operands[0]
    Add,            // operands[0] + operands[1] + ...
  };
  Kind kind = Kind::Variable;
  std::string name;
  std::vector<int> operands; // indices into LayerRecipe::nodes
};

struct LayerRecipe {
  struct Statement {
    std::string target;
    int value = -1; // index into nodes
  };
  std::vector<RecipeNode> nodes;
  std::vector<Statement> statements;

  /// The norms the recipe uses ("norm1", ...), sorted, each once.
  std::vector<std::string> norms() const;
  /// Canonical text: statements joined by "; ", single spaces around '='
  /// and '+'. Equal recipes print equally.
  std::string str() const;
};

/// Parses and checks a recipe. Errors read "column N: <problem>" (1-based
/// column of the offending character in `text`).
llvm::Expected<LayerRecipe> parseLayerRecipe(llvm::StringRef text,
                                             LayerKind kind);

/// The classic arrangements: post-norm x = normK(x + f(x)) and pre-norm
/// x = x + f(normK(x)) for each sublayer in order (self_attn, [cross_attn,]
/// ffn).
LayerRecipe postNormRecipe(LayerKind kind);
LayerRecipe preNormRecipe(LayerKind kind);

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_LAYERRECIPE_H
