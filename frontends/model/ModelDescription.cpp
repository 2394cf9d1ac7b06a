//===- ModelDescription.cpp - model.json (format tfm-model v1) ------------===//
//
// A strict reader: every field is required (except "model" on a side that
// does not use sentencepiece, where it is forbidden), unknown fields are
// errors, and the first problem found is reported as one line naming the
// file and the dotted field path.
//
//===----------------------------------------------------------------------===//

#include "frontends/model/ModelDescription.h"
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <optional>

using namespace llvm;

namespace tfmc::frontend {

/// The most layers a stack may declare.
static constexpr int64_t kMaxLayers = 4096;

StringRef stringifyActivation(Activation a) {
  switch (a) {
  case Activation::Relu:
    return "relu";
  case Activation::Gelu:
    return "gelu";
  case Activation::Silu:
    return "silu";
  }
  llvm_unreachable("unknown activation");
}

StringRef stringifyNormPlacement(NormPlacement n) {
  switch (n) {
  case NormPlacement::Post:
    return "post";
  case NormPlacement::Pre:
    return "pre";
  }
  llvm_unreachable("unknown norm placement");
}

LayerRecipe Architecture::layerRecipe(LayerKind kind) const {
  const std::optional<LayerRecipe> &explicitRecipe =
      kind == LayerKind::Encoder ? encoderLayer : decoderLayer;
  if (explicitRecipe)
    return *explicitRecipe;
  return norm == NormPlacement::Pre ? preNormRecipe(kind)
                                    : postNormRecipe(kind);
}

bool Architecture::finalNorm(LayerKind kind) const {
  if (kind == LayerKind::Decoder && encoderOnly())
    return false;
  const std::optional<bool> &flag =
      kind == LayerKind::Encoder ? encoderFinalNormFlag : decoderFinalNormFlag;
  if (flag)
    return *flag;
  return norm == NormPlacement::Pre;
}

namespace {

/// Renders a JSON value for a "got ..." clause, shortened if long.
std::string describe(const json::Value &v) {
  std::string text = formatv("{0}", v).str();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return text;
}

/// Walks the JSON tree, remembering only the first error. Accessors return a
/// harmless default after a failure so that callers can stay linear; the
/// result is discarded when `failed()`.
class DescriptionReader {
public:
  explicit DescriptionReader(StringRef file) : file(file) {}

  bool failed() const { return error.has_value(); }
  Error takeError() {
    return createStringError(inconvertibleErrorCode(), *error);
  }

  void fail(const Twine &message) {
    if (!error)
      error = (file + ": " + message).str();
  }
  void failField(StringRef field, const Twine &message) {
    fail("field '" + field + "': " + message);
  }

  /// Reports the first key of `obj` not in `allowed`.
  void checkKeys(const json::Object &obj, StringRef prefix,
                 ArrayRef<StringRef> allowed) {
    // Sorted so that the report does not depend on hash order.
    std::vector<std::string> keys;
    for (const auto &kv : obj)
      keys.push_back(kv.first.str());
    llvm::sort(keys);
    for (const std::string &key : keys)
      if (!llvm::is_contained(allowed, StringRef(key)))
        return fail("unknown field '" + join(prefix, key) + "'");
  }

  const json::Value *field(const json::Object &obj, StringRef prefix,
                           StringRef key) {
    if (const json::Value *v = obj.get(key))
      return v;
    fail("missing field '" + join(prefix, key) + "'");
    return nullptr;
  }

  const json::Object *object(const json::Object &obj, StringRef prefix,
                             StringRef key) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return nullptr;
    if (const json::Object *o = v->getAsObject())
      return o;
    failField(join(prefix, key), "expected an object, got " + describe(*v));
    return nullptr;
  }

  /// An integer >= `min`.
  int64_t integer(const json::Object &obj, StringRef prefix, StringRef key,
                  int64_t min) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return 0;
    std::optional<int64_t> i =
        v->kind() == json::Value::Number ? v->getAsInteger() : std::nullopt;
    if (i && *i >= min)
      return *i;
    StringRef what = min > 0 ? "a positive integer" : "a non-negative integer";
    failField(join(prefix, key), "expected " + what + ", got " + describe(*v));
    return 0;
  }

  std::string string(const json::Object &obj, StringRef prefix, StringRef key) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return "";
    std::optional<StringRef> s = v->getAsString();
    if (s && !s->empty())
      return s->str();
    failField(join(prefix, key),
              "expected a non-empty string, got " + describe(*v));
    return "";
  }

  /// A file name: a non-empty string without NUL characters (the file
  /// system would cut it there and open another file).
  std::string path(const json::Object &obj, StringRef prefix, StringRef key) {
    std::string s = string(obj, prefix, key);
    if (s.find('\0') != std::string::npos) {
      failField(join(prefix, key), "the path contains a NUL character");
      return "";
    }
    return s;
  }

  /// A string that must be one of `choices`.
  std::string choice(const json::Object &obj, StringRef prefix, StringRef key,
                     ArrayRef<StringRef> choices) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return "";
    std::optional<StringRef> s = v->getAsString();
    if (s && llvm::is_contained(choices, *s))
      return s->str();
    std::string expected;
    for (auto [i, c] : llvm::enumerate(choices))
      expected += (i == 0                    ? "\""
                   : i + 1 == choices.size() ? " or \""
                                             : ", \"") +
                  c.str() + "\"";
    failField(join(prefix, key),
              "expected " + expected + ", got " + describe(*v));
    return "";
  }

  bool boolean(const json::Object &obj, StringRef prefix, StringRef key) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return false;
    if (std::optional<bool> b = v->getAsBoolean())
      return *b;
    failField(join(prefix, key), "expected true or false, got " + describe(*v));
    return false;
  }

  double positiveNumber(const json::Object &obj, StringRef prefix,
                        StringRef key) {
    const json::Value *v = field(obj, prefix, key);
    if (!v)
      return 0;
    std::optional<double> d = v->getAsNumber();
    if (d && std::isfinite(*d) && *d > 0)
      return *d;
    failField(join(prefix, key),
              "expected a positive number, got " + describe(*v));
    return 0;
  }

  static std::string join(StringRef prefix, StringRef key) {
    return prefix.empty() ? key.str() : (prefix + "." + key).str();
  }

private:
  StringRef file;
  std::optional<std::string> error;
};

/// `p` if absolute, else `dir`/`p`, with "." and ".." removed.
std::string resolvePath(StringRef dir, StringRef p) {
  SmallString<256> out;
  if (sys::path::is_absolute(p)) {
    out = p;
  } else {
    out = dir;
    sys::path::append(out, p);
  }
  sys::path::remove_dots(out, /*remove_dot_dot=*/true);
  return out.str().str();
}

/// The optional block recipes and final-norm flags. A decoder recipe or
/// flag on an encoder-only model is an error.
void readRecipes(DescriptionReader &r, const json::Object &obj,
                 Architecture &arch) {
  StringRef p = "architecture";
  for (auto [key, kind, slot] :
       {std::tuple{"encoder_layer", LayerKind::Encoder, &arch.encoderLayer},
        std::tuple{"decoder_layer", LayerKind::Decoder, &arch.decoderLayer}}) {
    if (!obj.get(key))
      continue;
    std::string field = DescriptionReader::join(p, key);
    if (kind == LayerKind::Decoder && arch.encoderOnly())
      return r.failField(field, "not allowed when "
                                "architecture.num_decoder_layers is 0");
    std::string text = r.string(obj, p, key);
    if (r.failed())
      return;
    Expected<LayerRecipe> recipe = parseLayerRecipe(text, kind);
    if (!recipe)
      return r.failField(field, toString(recipe.takeError()));
    *slot = std::move(*recipe);
  }
  for (auto [key, isDecoder, slot] :
       {std::tuple{"encoder_final_norm", false, &arch.encoderFinalNormFlag},
        std::tuple{"decoder_final_norm", true, &arch.decoderFinalNormFlag}}) {
    if (!obj.get(key))
      continue;
    if (isDecoder && arch.encoderOnly())
      return r.failField(DescriptionReader::join(p, key),
                         "not allowed when architecture.num_decoder_layers "
                         "is 0");
    *slot = r.boolean(obj, p, key);
  }
}

void readArchitecture(DescriptionReader &r, const json::Object &obj,
                      Architecture &arch) {
  StringRef p = "architecture";
  r.checkKeys(obj, p,
              {"d_model", "num_heads", "num_encoder_layers",
               "num_decoder_layers", "d_ff", "max_len", "activation", "norm",
               "layer_norm_eps", "embedding_scale", "positional_encoding",
               "encoder_layer", "decoder_layer", "encoder_final_norm",
               "decoder_final_norm"});
  arch.dModel = r.integer(obj, p, "d_model", 1);
  arch.numHeads = r.integer(obj, p, "num_heads", 1);
  arch.numEncoderLayers = r.integer(obj, p, "num_encoder_layers", 1);
  arch.numDecoderLayers = r.integer(obj, p, "num_decoder_layers", 0);
  // Every layer names tensors; a count beyond any real model would only
  // exhaust memory building the names.
  for (auto [key, value] : {std::pair{"num_encoder_layers", arch.numEncoderLayers},
                            std::pair{"num_decoder_layers", arch.numDecoderLayers}})
    if (value > kMaxLayers)
      r.failField(DescriptionReader::join(p, key),
                  formatv("expected at most {0} layers, got {1}", kMaxLayers,
                          value)
                      .str());
  arch.dFF = r.integer(obj, p, "d_ff", 1);
  arch.maxLen = r.integer(obj, p, "max_len", 1);
  std::string activation =
      r.choice(obj, p, "activation", {"relu", "gelu", "silu"});
  arch.activation = activation == "gelu"   ? Activation::Gelu
                    : activation == "silu" ? Activation::Silu
                                           : Activation::Relu;
  if (r.failed())
    return;
  readRecipes(r, obj, arch);
  if (r.failed())
    return;
  // "norm" is a shorthand for the layers without a recipe: required only
  // while some stack has none.
  bool needNorm =
      !arch.encoderLayer || (!arch.encoderOnly() && !arch.decoderLayer);
  if (needNorm || obj.get("norm"))
    arch.norm = r.choice(obj, p, "norm", {"post", "pre"}) == "pre"
                    ? NormPlacement::Pre
                    : NormPlacement::Post;
  else
    arch.norm = std::nullopt;
  arch.layerNormEps = r.positiveNumber(obj, p, "layer_norm_eps");
  arch.embeddingScale = r.boolean(obj, p, "embedding_scale");
  arch.positionalEncoding =
      r.choice(obj, p, "positional_encoding", {"sinusoidal", "table"});
  if (r.failed())
    return;
  if (arch.dModel % arch.numHeads != 0)
    r.failField("architecture.num_heads",
                formatv("architecture.num_heads ({0}) does not divide "
                        "architecture.d_model ({1})",
                        arch.numHeads, arch.dModel)
                    .str());
}

void readSide(DescriptionReader &r, const json::Object &obj, StringRef p,
              StringRef dir, SideSpec &side) {
  r.checkKeys(obj, p, {"vocab", "tokenizer", "model", "piece_ids"});
  side.vocabPath = resolvePath(dir, r.path(obj, p, "vocab"));
  side.tokenizer =
      r.choice(obj, p, "tokenizer", {"char", "word", "sentencepiece"});
  if (r.failed())
    return;
  bool isSpm = side.tokenizer == "sentencepiece";
  if (obj.get("piece_ids")) {
    if (!isSpm)
      return r.failField(DescriptionReader::join(p, "piece_ids"),
                         "only allowed with tokenizer \"sentencepiece\", "
                         "not \"" +
                             side.tokenizer + "\"");
    side.piecesThroughVocab =
        r.choice(obj, p, "piece_ids", {"model", "vocab"}) == "vocab";
  }
  if (!obj.get("model")) {
    if (isSpm)
      r.fail("missing field '" + DescriptionReader::join(p, "model") +
             "' (required by tokenizer \"sentencepiece\")");
    return;
  }
  if (!isSpm) {
    r.failField(DescriptionReader::join(p, "model"),
                "only allowed with tokenizer \"sentencepiece\", not \"" +
                    side.tokenizer + "\"");
    return;
  }
  side.spmModelPath = resolvePath(dir, r.path(obj, p, "model"));
}

/// "decoding": beam_size (1 to kMaxDecodingBeamSize) and length_penalty
/// (a finite number >= 0), each optional.
void readDecoding(DescriptionReader &r, const json::Object &obj,
                  ModelDescription::Decoding &decoding) {
  r.checkKeys(obj, "decoding", {"beam_size", "length_penalty"});
  if (obj.get("beam_size")) {
    int64_t beam = r.integer(obj, "decoding", "beam_size", 1);
    if (beam > kMaxDecodingBeamSize)
      r.failField("decoding.beam_size",
                  "expected at most " + std::to_string(kMaxDecodingBeamSize) +
                      ", got " + std::to_string(beam));
    else if (beam >= 1)
      decoding.beamSize = beam;
  }
  if (const json::Value *v = obj.get("length_penalty")) {
    std::optional<double> d = v->getAsNumber();
    if (d && std::isfinite(*d) && *d >= 0)
      decoding.lengthPenalty = *d;
    else
      r.failField("decoding.length_penalty",
                  "expected a number >= 0, got " + describe(*v));
  }
}

void readSpecialTokens(DescriptionReader &r, const json::Object &obj,
                       SpecialTokens &special) {
  StringRef p = "special_tokens";
  r.checkKeys(obj, p,
              {"pad", "bos", "eos", "unk", "decoder_start", "never_generate"});
  special.pad = r.integer(obj, p, "pad", 0);
  special.hasBos = obj.get("bos") || !obj.get("decoder_start");
  special.bos = special.hasBos ? r.integer(obj, p, "bos", 0) : -1;
  special.eos = r.integer(obj, p, "eos", 0);
  special.unk = r.integer(obj, p, "unk", 0);
  if (r.failed())
    return;
  std::vector<std::pair<StringRef, int64_t>> ids = {
      {"pad", special.pad}, {"eos", special.eos}, {"unk", special.unk}};
  if (special.hasBos)
    ids.insert(ids.begin() + 1, {"bos", special.bos});
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (ids[i].second == ids[j].second)
        return r.failField(DescriptionReader::join(p, ids[i].first),
                           formatv("id {0} is also used by "
                                   "'special_tokens.{1}'",
                                   ids[i].second, ids[j].first)
                               .str());
  special.decoderStart = obj.get("decoder_start")
                             ? r.integer(obj, p, "decoder_start", 0)
                             : special.bos;
  special.neverGenerate = {special.pad};
  if (special.hasBos)
    special.neverGenerate.push_back(special.bos);
  const json::Value *banned = obj.get("never_generate");
  if (!banned || r.failed())
    return;
  std::string field = DescriptionReader::join(p, "never_generate");
  const json::Array *list = banned->getAsArray();
  if (!list)
    return r.failField(field, "expected a list of token ids, got " +
                                  describe(*banned));
  special.neverGenerate.clear();
  for (const json::Value &v : *list) {
    std::optional<int64_t> id =
        v.kind() == json::Value::Number ? v.getAsInteger() : std::nullopt;
    if (!id || *id < 0)
      return r.failField(field, "expected non-negative integers, got " +
                                    describe(v));
    if (*id == special.eos)
      return r.failField(field, formatv("id {0} is special_tokens.eos, which "
                                        "a search must be able to choose",
                                        *id)
                                    .str());
    if (llvm::is_contained(special.neverGenerate, *id))
      return r.failField(field, formatv("id {0} is listed twice", *id).str());
    special.neverGenerate.push_back(*id);
  }
}

} // namespace

/// The text of a JSON string's contents `raw` (between its quotes, escapes
/// as written), escapes decoded; `raw` as it is if it does not parse.
static std::string decodedJsonString(StringRef raw) {
  if (!raw.contains('\\'))
    return raw.str();
  Expected<json::Value> value = json::parse(("\"" + raw + "\"").str());
  if (!value) {
    consumeError(value.takeError());
    return raw.str();
  }
  std::optional<StringRef> text = value->getAsString();
  return text ? text->str() : raw.str();
}

std::optional<std::string> findDuplicateJsonKey(StringRef json) {
  struct Frame {
    bool isObject;
    std::string path;
    StringSet<> keys;
    std::string lastKey;
  };
  std::vector<Frame> stack;
  bool expectKey = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < json.size() && json[end] != '"')
        end += json[end] == '\\' ? 2 : 1;
      StringRef raw = json.slice(i + 1, end);
      i = end;
      if (!expectKey || stack.empty())
        continue;
      // Keys are compared as decoded: "w\u0065ights" is "weights".
      std::string text = decodedJsonString(raw);
      Frame &frame = stack.back();
      std::string key = DescriptionReader::join(frame.path, text);
      if (!frame.keys.insert(text).second)
        return key;
      frame.lastKey = std::move(key);
      expectKey = false;
      continue;
    }
    if (c == '{' || c == '[') {
      std::string path;
      if (!stack.empty())
        path = stack.back().isObject ? stack.back().lastKey
                                     : stack.back().path + "[]";
      stack.push_back({c == '{', std::move(path), {}, ""});
      expectKey = c == '{';
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
      expectKey = false;
    } else if (c == ',' && !stack.empty()) {
      expectKey = stack.back().isObject;
    }
  }
  return std::nullopt;
}

Expected<ModelDescription> parseModelDescriptionFromString(StringRef json,
                                                           StringRef path) {
  if (std::optional<size_t> at = nestingBeyond(json, kMaxJsonNesting))
    return createStringError(
        inconvertibleErrorCode(),
        path + ": invalid JSON: nested deeper than " +
            Twine(kMaxJsonNesting) + " levels at byte " + Twine(*at));
  Expected<json::Value> root = json::parse(json);
  if (!root)
    return createStringError(
        inconvertibleErrorCode(),
        path + ": invalid JSON: " + toString(root.takeError()));
  if (std::optional<std::string> key = findDuplicateJsonKey(json))
    return createStringError(inconvertibleErrorCode(),
                             path + ": duplicate field '" + *key + "'");

  ModelDescription desc;
  desc.jsonPath = path.str();
  SmallString<256> dir(sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  if (std::error_code ec = sys::fs::make_absolute(dir))
    return createStringError(inconvertibleErrorCode(),
                             path +
                                 ": cannot resolve directory: " + ec.message());
  sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  desc.directory = dir.str().str();

  DescriptionReader r(path);
  const json::Object *top = root->getAsObject();
  if (!top) {
    r.fail("expected a JSON object at top level, got " + describe(*root));
    return r.takeError();
  }
  r.checkKeys(*top, "",
              {"format", "version", "architecture", "source", "target",
               "special_tokens", "weights", "compute_type", "sentence_level",
               "decoding"});
  if (const json::Value *format = r.field(*top, "", "format")) {
    std::optional<StringRef> s = format->getAsString();
    if (!s || *s != "tfm-model")
      r.failField("format", "expected \"tfm-model\", got " + describe(*format));
  }
  if (const json::Value *version = r.field(*top, "", "version")) {
    std::optional<int64_t> v = version->getAsInteger();
    if (!v || *v != 1)
      r.failField("version", "unsupported version " + describe(*version) +
                                 " (expected 1)");
  }
  if (const json::Object *o = r.object(*top, "", "architecture"))
    readArchitecture(r, *o, desc.arch);
  if (const json::Object *o = r.object(*top, "", "source"))
    readSide(r, *o, "source", desc.directory, desc.source);
  // An encoder-only model has no target side.
  if (!r.failed() && desc.arch.encoderOnly()) {
    if (top->get("target"))
      r.failField("target", "not allowed when "
                            "architecture.num_decoder_layers is 0 (an "
                            "encoder-only model)");
  } else if (const json::Object *o = r.object(*top, "", "target")) {
    readSide(r, *o, "target", desc.directory, desc.target);
  }
  if (const json::Object *o = r.object(*top, "", "special_tokens"))
    readSpecialTokens(r, *o, desc.special);
  std::string weights = r.path(*top, "", "weights");
  if (top->get("sentence_level"))
    desc.sentenceLevel = r.boolean(*top, "", "sentence_level");
  if (top->get("decoding"))
    if (const json::Object *o = r.object(*top, "", "decoding"))
      readDecoding(r, *o, desc.decoding);
  if (top->get("compute_type"))
    desc.computeType = parseComputeType(
        r.choice(*top, "", "compute_type", {"float32", "float16", "bfloat16", "int8"}));
  if (r.failed())
    return r.takeError();
  desc.weightsPath = resolvePath(desc.directory, weights);
  return desc;
}

std::string needsDecoderMessage(StringRef path, StringRef what) {
  return (path + ": " + what +
          " needs a decoder, but this is an encoder-only model "
          "(num_decoder_layers is 0); use 'tfmc encode'")
      .str();
}

StringRef stringifyComputeType(ComputeType type) {
  switch (type) {
  case ComputeType::Float32:
    return "float32";
  case ComputeType::Float16:
    return "float16";
  case ComputeType::BFloat16:
    return "bfloat16";
  case ComputeType::Int8:
    return "int8";
  }
  llvm_unreachable("unknown compute type");
}

std::optional<ComputeType> parseComputeType(StringRef name) {
  for (ComputeType t :
       {ComputeType::Float32, ComputeType::Float16, ComputeType::BFloat16,
        ComputeType::Int8})
    if (name == stringifyComputeType(t))
      return t;
  return std::nullopt;
}

Expected<ModelDescription> parseModelDescription(StringRef path) {
  auto buffer = openFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseModelDescriptionFromString((*buffer)->getBuffer(), path);
}

} // namespace tfmc::frontend
