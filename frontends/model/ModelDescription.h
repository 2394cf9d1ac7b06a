//===- ModelDescription.h - model.json (format tfm-model v1) ----*- C++ -*-===//
//
// The parsed, validated form of a model description file. See
// docs/model-format.md.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_MODEL_MODELDESCRIPTION_H
#define FRONTENDS_MODEL_MODELDESCRIPTION_H

#include "frontends/model/LayerRecipe.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::frontend {

enum class Activation { Relu, Gelu, Silu };
enum class NormPlacement { Post, Pre };

llvm::StringRef stringifyActivation(Activation a);
llvm::StringRef stringifyNormPlacement(NormPlacement n);

struct Architecture {
  int64_t dModel = 0;
  int64_t numHeads = 0;
  int64_t numEncoderLayers = 0;
  int64_t numDecoderLayers = 0;
  int64_t dFF = 0;
  int64_t maxLen = 0;
  Activation activation = Activation::Relu;
  /// The "norm" shorthand; absent when every stack has an explicit recipe
  /// and the file leaves it out.
  std::optional<NormPlacement> norm = NormPlacement::Post;
  double layerNormEps = 1e-5;
  bool embeddingScale = false;
  /// "sinusoidal" (computed by the runtime) or "table" (the tensors
  /// encoder_positions.weight / decoder_positions.weight).
  std::string positionalEncoding = "sinusoidal";
  bool positionTables() const { return positionalEncoding == "table"; }
  /// Explicit layer recipes ("encoder_layer", "decoder_layer"); without one
  /// a stack follows `norm`.
  std::optional<LayerRecipe> encoderLayer, decoderLayer;
  /// "encoder_final_norm", "decoder_final_norm"; default: norm == pre.
  std::optional<bool> encoderFinalNormFlag, decoderFinalNormFlag;

  int64_t headDim() const { return dModel / numHeads; }
  /// No decoder: "num_decoder_layers": 0, no target side.
  bool encoderOnly() const { return numDecoderLayers == 0; }
  /// The recipe each layer of a stack follows.
  LayerRecipe layerRecipe(LayerKind kind) const;
  /// Whether a stack ends with a LayerNorm (encoder_norm / decoder_norm).
  bool finalNorm(LayerKind kind) const;
};

/// The one-line refusal of decoder work (`what`: "translation", "forward")
/// asked of the encoder-only model at `path`: what every entry point says.
std::string needsDecoderMessage(llvm::StringRef path, llvm::StringRef what);

/// One side (source or target) of the model. Paths are absolute (resolved
/// against the directory of the JSON file).
struct SideSpec {
  std::string vocabPath;
  std::string tokenizer;    // "char" | "word" | "sentencepiece"
  std::string spmModelPath; // set iff tokenizer == "sentencepiece"
  /// "piece_ids": "vocab": SentencePiece pieces map to ids by their text
  /// through the vocabulary file (Marian, fairseq); otherwise the model's
  /// own ids, which must equal the vocabulary.
  bool piecesThroughVocab = false;
};

struct SpecialTokens {
  int64_t pad = 0, bos = 1, eos = 2, unk = 3;
  /// False when the file has no "bos" (Marian); `bos` is then -1.
  bool hasBos = true;
  /// The first token of every target row; default bos.
  int64_t decoderStart = 1;
  /// Target ids searches never choose; default pad and bos.
  std::vector<int64_t> neverGenerate = {0, 1};
};

/// How linear-layer weights are stored and multiplied: float32 as trained,
/// float16 or bfloat16 weights (float32 arithmetic), or int8 weights per
/// output row with dynamically quantized inputs (docs/quantization.md).
enum class ComputeType { Float32, Float16, BFloat16, Int8 };
llvm::StringRef stringifyComputeType(ComputeType type);
/// "float32", "float16", "bfloat16" or "int8"; std::nullopt otherwise.
std::optional<ComputeType> parseComputeType(llvm::StringRef name);

struct ModelDescription {
  std::string jsonPath;  // as given
  std::string directory; // directory holding the JSON file
  Architecture arch;
  SideSpec source, target;
  SpecialTokens special;
  std::string weightsPath; // absolute
  /// The optional "compute_type" field: the default of --compute-type.
  std::optional<ComputeType> computeType;
  /// The optional "sentence_level" field: the model was trained on single
  /// sentences, so `--split-sentences auto` splits its input lines.
  bool sentenceLevel = false;
  /// The optional "decoding" object: the search a translation uses where
  /// its caller does not choose one (`tfmc translate` and serve without
  /// --beam-size / --length-penalty, the APIs' default options).
  struct Decoding {
    std::optional<int64_t> beamSize;
    std::optional<double> lengthPenalty;
  } decoding;
};

/// The largest "decoding.beam_size" (tfmc::kMaxBeamSize of the public API).
constexpr int64_t kMaxDecodingBeamSize = 256;

/// Parses and validates a model.json file (strict: unknown or missing fields,
/// wrong types, out-of-range values are errors naming the field and file).
/// Does not open the vocab or weight files.
llvm::Expected<ModelDescription> parseModelDescription(llvm::StringRef path);

/// Same, from an in-memory buffer; `path` is used for messages and to resolve
/// relative paths.
llvm::Expected<ModelDescription>
parseModelDescriptionFromString(llvm::StringRef json, llvm::StringRef path);

/// The dotted path of the first key that occurs twice in one object of the
/// JSON text `json` (which must already have parsed), or std::nullopt.
/// llvm::json::parse silently keeps the last of duplicate keys.
std::optional<std::string> findDuplicateJsonKey(llvm::StringRef json);

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_MODELDESCRIPTION_H
