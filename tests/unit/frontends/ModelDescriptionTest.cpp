//===- ModelDescriptionTest.cpp - model.json parsing and validation -------===//

#include "TestFiles.h"

#include "frontends/model/ModelDescription.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

constexpr const char *kPath = "m/model.json";

Expected<ModelDescription>
parseEdited(function_ref<void(json::Object &)> edit = {}) {
  json::Object obj = tinyDescription();
  if (edit)
    edit(obj);
  return parseModelDescriptionFromString(toText(obj), kPath);
}

json::Object &sub(json::Object &obj, StringRef key) {
  return *obj.getObject(key);
}

/// The error message of a failed parse ("" if it succeeded).
std::string errorOf(function_ref<void(json::Object &)> edit) {
  Expected<ModelDescription> desc = parseEdited(edit);
  if (desc)
    return "";
  return toString(desc.takeError());
}

std::string currentDir() {
  SmallString<256> cwd;
  sys::fs::current_path(cwd);
  return cwd.str().str();
}

TEST(ModelDescriptionTest, ParsesValidDescription) {
  Expected<ModelDescription> desc = parseEdited();
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  const Architecture &a = desc->arch;
  EXPECT_EQ(a.dModel, 4);
  EXPECT_EQ(a.numHeads, 2);
  EXPECT_EQ(a.headDim(), 2);
  EXPECT_EQ(a.numEncoderLayers, 1);
  EXPECT_EQ(a.numDecoderLayers, 2);
  EXPECT_EQ(a.dFF, 8);
  EXPECT_EQ(a.maxLen, 16);
  EXPECT_EQ(a.activation, Activation::Relu);
  EXPECT_EQ(a.norm, NormPlacement::Post);
  EXPECT_DOUBLE_EQ(a.layerNormEps, 1e-5);
  EXPECT_FALSE(a.embeddingScale);
  EXPECT_EQ(a.positionalEncoding, "sinusoidal");
  EXPECT_EQ(desc->source.tokenizer, "char");
  EXPECT_EQ(desc->target.tokenizer, "word");
  EXPECT_EQ(desc->source.spmModelPath, "");
  EXPECT_EQ(desc->special.pad, 0);
  EXPECT_EQ(desc->special.bos, 1);
  EXPECT_EQ(desc->special.eos, 2);
  EXPECT_EQ(desc->special.unk, 3);
  EXPECT_EQ(desc->jsonPath, kPath);
}

TEST(ModelDescriptionTest, ParsesAlternativeEnumValues) {
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    sub(o, "architecture")["activation"] = "gelu";
    sub(o, "architecture")["norm"] = "pre";
    sub(o, "architecture")["embedding_scale"] = true;
    sub(o, "architecture")["layer_norm_eps"] = 1;
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_EQ(desc->arch.activation, Activation::Gelu);
  EXPECT_EQ(desc->arch.norm, NormPlacement::Pre);
  EXPECT_TRUE(desc->arch.embeddingScale);
  EXPECT_DOUBLE_EQ(desc->arch.layerNormEps, 1.0);
}

TEST(ModelDescriptionTest, Stringify) {
  EXPECT_EQ(stringifyActivation(Activation::Relu), "relu");
  EXPECT_EQ(stringifyActivation(Activation::Gelu), "gelu");
  EXPECT_EQ(stringifyNormPlacement(NormPlacement::Post), "post");
  EXPECT_EQ(stringifyNormPlacement(NormPlacement::Pre), "pre");
}

TEST(ModelDescriptionTest, ResolvesRelativePathsAgainstJsonDirectory) {
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    sub(o, "target")["vocab"] = "../shared/tgt.vocab";
    o["weights"] = "/abs/dir/w.safetensors";
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  std::string cwd = currentDir();
  EXPECT_EQ(desc->directory, cwd + "/m");
  EXPECT_EQ(desc->source.vocabPath, cwd + "/m/src.vocab");
  EXPECT_EQ(desc->target.vocabPath, cwd + "/shared/tgt.vocab");
  EXPECT_EQ(desc->weightsPath, "/abs/dir/w.safetensors");
}

TEST(ModelDescriptionTest, ReadsFileFromDisk) {
  TempDir dir;
  std::string path = dir.write("sub/model.json", toText(tinyDescription()));
  Expected<ModelDescription> desc = parseModelDescription(path);
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_EQ(desc->jsonPath, path);
  EXPECT_EQ(desc->directory, dir.file("sub"));
  EXPECT_EQ(desc->source.vocabPath, dir.file("sub/src.vocab"));
  EXPECT_EQ(desc->weightsPath, dir.file("sub/model.safetensors"));
}

TEST(ModelDescriptionTest, MissingFile) {
  TempDir dir;
  std::string path = dir.file("nope.json");
  Expected<ModelDescription> desc = parseModelDescription(path);
  ASSERT_FALSE(bool(desc));
  EXPECT_EQ(toString(desc.takeError()),
            path + ": cannot open file: No such file or directory");
}

TEST(ModelDescriptionTest, InvalidJson) {
  Expected<ModelDescription> desc = parseModelDescriptionFromString(
      "{\n  \"format\": \"tfm-model\",,\n}", kPath);
  ASSERT_FALSE(bool(desc));
  std::string msg = toString(desc.takeError());
  EXPECT_EQ(msg.rfind("m/model.json: invalid JSON: [2:", 0), 0u) << msg;
}

TEST(ModelDescriptionTest, DuplicateFields) {
  Expected<ModelDescription> desc = parseModelDescriptionFromString(
      R"({"weights": "a", "weights": "b"})", kPath);
  ASSERT_FALSE(bool(desc));
  EXPECT_EQ(toString(desc.takeError()),
            "m/model.json: duplicate field 'weights'");
  desc = parseModelDescriptionFromString(
      R"({"x": [{"a": 1}, {"a": 2}], "architecture": {"n": {"k": 1},
          "d_model": 4, "d_model": 8}})",
      kPath);
  ASSERT_FALSE(bool(desc));
  EXPECT_EQ(toString(desc.takeError()),
            "m/model.json: duplicate field 'architecture.d_model'");
}

TEST(ModelDescriptionTest, FindDuplicateJsonKey) {
  EXPECT_EQ(findDuplicateJsonKey(R"({"a": {"b": 1, "c": "b"}, "b": [1]})"),
            std::nullopt);
  EXPECT_EQ(findDuplicateJsonKey(R"({"a\"b": 1, "q": [{"x": {}, "x": 2}]})"),
            "q[].x");
  EXPECT_EQ(findDuplicateJsonKey(R"([{"k": "v"}, {"k": "v", "k": 1}])"),
            "[].k");
  // Keys are compared decoded: an escape does not make a key another one.
  EXPECT_EQ(findDuplicateJsonKey(R"({"weights": 1, "w\u0065ights": 2})"),
            "weights");
  EXPECT_EQ(findDuplicateJsonKey(R"({"a": {"d_model": 1, "d\u005fmodel": 2}})"),
            "a.d_model");
  EXPECT_EQ(findDuplicateJsonKey(R"({"a\"b": 1, "a\u0022b": 2})"), "a\"b");
  EXPECT_EQ(findDuplicateJsonKey(R"({"\ud83d\ude00": 1, "x": 2})"),
            std::nullopt);
}

TEST(ModelDescriptionTest, TopLevelNotObject) {
  Expected<ModelDescription> desc =
      parseModelDescriptionFromString("[1, 2]", kPath);
  ASSERT_FALSE(bool(desc));
  EXPECT_EQ(toString(desc.takeError()),
            "m/model.json: expected a JSON object at top level, got [1,2]");
}

TEST(ModelDescriptionTest, UnknownFields) {
  EXPECT_EQ(errorOf([](json::Object &o) { o["extra"] = 1; }),
            "m/model.json: unknown field 'extra'");
  EXPECT_EQ(errorOf([](json::Object &o) { sub(o, "architecture")["foo"] = 1; }),
            "m/model.json: unknown field 'architecture.foo'");
  EXPECT_EQ(errorOf([](json::Object &o) { sub(o, "source")["lang"] = "de"; }),
            "m/model.json: unknown field 'source.lang'");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "special_tokens")["mask"] = 4; }),
      "m/model.json: unknown field 'special_tokens.mask'");
}

TEST(ModelDescriptionTest, MissingFields) {
  const char *topLevel[] = {"format", "version", "architecture",
                            "source", "target",  "special_tokens",
                            "weights"};
  for (const char *key : topLevel)
    EXPECT_EQ(errorOf([&](json::Object &o) { o.erase(key); }),
              std::string("m/model.json: missing field '") + key + "'");
  const char *arch[] = {"d_model",
                        "num_heads",
                        "num_encoder_layers",
                        "num_decoder_layers",
                        "d_ff",
                        "max_len",
                        "activation",
                        "norm",
                        "layer_norm_eps",
                        "embedding_scale",
                        "positional_encoding"};
  for (const char *key : arch)
    EXPECT_EQ(
        errorOf([&](json::Object &o) { sub(o, "architecture").erase(key); }),
        std::string("m/model.json: missing field 'architecture.") + key + "'");
  EXPECT_EQ(errorOf([](json::Object &o) { sub(o, "source").erase("vocab"); }),
            "m/model.json: missing field 'source.vocab'");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "target").erase("tokenizer"); }),
      "m/model.json: missing field 'target.tokenizer'");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "special_tokens").erase("unk"); }),
      "m/model.json: missing field 'special_tokens.unk'");
}

TEST(ModelDescriptionTest, WrongTypes) {
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["d_model"] = "abc";
            }),
            "m/model.json: field 'architecture.d_model': expected a positive "
            "integer, got \"abc\"");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "architecture")["d_ff"] = 2.5; }),
      "m/model.json: field 'architecture.d_ff': expected a positive "
      "integer, got 2.5");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["embedding_scale"] = "yes";
            }),
            "m/model.json: field 'architecture.embedding_scale': expected "
            "true or false, got \"yes\"");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["layer_norm_eps"] = "small";
            }),
            "m/model.json: field 'architecture.layer_norm_eps': expected a "
            "positive number, got \"small\"");
  EXPECT_EQ(errorOf([](json::Object &o) { o["architecture"] = 5; }),
            "m/model.json: field 'architecture': expected an object, got 5");
  EXPECT_EQ(errorOf([](json::Object &o) { o["weights"] = json::Array{}; }),
            "m/model.json: field 'weights': expected a non-empty string, got "
            "[]");
  EXPECT_EQ(errorOf([](json::Object &o) { sub(o, "source")["vocab"] = ""; }),
            "m/model.json: field 'source.vocab': expected a non-empty string, "
            "got \"\"");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "special_tokens")["pad"] = "0"; }),
      "m/model.json: field 'special_tokens.pad': expected a "
      "non-negative integer, got \"0\"");
}

TEST(ModelDescriptionTest, OutOfRangeValues) {
  // (num_decoder_layers may be 0: an encoder-only model, see EncoderOnly.)
  for (const char *key :
       {"d_model", "num_heads", "num_encoder_layers", "d_ff", "max_len"}) {
    EXPECT_EQ(
        errorOf([&](json::Object &o) { sub(o, "architecture")[key] = 0; }),
        std::string("m/model.json: field 'architecture.") + key +
            "': expected a positive integer, got 0");
  }
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["num_encoder_layers"] = -1;
            }),
            "m/model.json: field 'architecture.num_encoder_layers': expected "
            "a positive integer, got -1");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["layer_norm_eps"] = 0;
            }),
            "m/model.json: field 'architecture.layer_norm_eps': expected a "
            "positive number, got 0");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "special_tokens")["bos"] = -1; }),
      "m/model.json: field 'special_tokens.bos': expected a "
      "non-negative integer, got -1");
}

TEST(ModelDescriptionTest, BadEnumValues) {
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["activation"] = "tanh";
            }),
            "m/model.json: field 'architecture.activation': expected \"relu\", "
            "\"gelu\" or \"silu\", got \"tanh\"");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "architecture")["norm"] = "mid"; }),
      "m/model.json: field 'architecture.norm': expected \"post\" or "
      "\"pre\", got \"mid\"");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["positional_encoding"] = "learned";
            }),
            "m/model.json: field 'architecture.positional_encoding': expected "
            "\"sinusoidal\" or \"table\", got \"learned\"");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "source")["tokenizer"] = "bpe"; }),
      "m/model.json: field 'source.tokenizer': expected \"char\", "
      "\"word\" or \"sentencepiece\", got \"bpe\"");
  EXPECT_EQ(errorOf([](json::Object &o) { o["format"] = "onnx"; }),
            "m/model.json: field 'format': expected \"tfm-model\", got "
            "\"onnx\"");
  EXPECT_EQ(errorOf([](json::Object &o) { o["version"] = 2; }),
            "m/model.json: field 'version': unsupported version 2 (expected "
            "1)");
}

TEST(ModelDescriptionTest, ConvertedModelFields) {
  // What the Marian converter writes: silu, position tables, no bos, the
  // decoder starting at pad, only pad never generated, ids through vocab.
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    sub(o, "architecture")["activation"] = "silu";
    sub(o, "architecture")["positional_encoding"] = "table";
    o["special_tokens"] = json::Object{{"eos", 0},
                                       {"unk", 1},
                                       {"pad", 6},
                                       {"decoder_start", 6},
                                       {"never_generate", json::Array{6}}};
    for (const char *side : {"source", "target"})
      o[side] = json::Object{{"vocab", "vocab.txt"},
                             {"tokenizer", "sentencepiece"},
                             {"model", "x.spm"},
                             {"piece_ids", "vocab"}};
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_EQ(desc->arch.activation, Activation::Silu);
  EXPECT_TRUE(desc->arch.positionTables());
  EXPECT_FALSE(desc->special.hasBos);
  EXPECT_EQ(desc->special.decoderStart, 6);
  EXPECT_EQ(desc->special.neverGenerate, std::vector<int64_t>{6});
  EXPECT_TRUE(desc->source.piecesThroughVocab);
  EXPECT_TRUE(desc->target.piecesThroughVocab);

  // Defaults: start at bos, pad and bos never generated, the model's ids.
  Expected<ModelDescription> plain = parseEdited();
  ASSERT_TRUE(bool(plain));
  EXPECT_TRUE(plain->special.hasBos);
  EXPECT_EQ(plain->special.decoderStart, 1);
  EXPECT_EQ(plain->special.neverGenerate, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(plain->source.piecesThroughVocab);
  EXPECT_FALSE(plain->arch.positionTables());
}

TEST(ModelDescriptionTest, SentenceLevel) {
  Expected<ModelDescription> plain = parseEdited();
  ASSERT_TRUE(bool(plain));
  EXPECT_FALSE(plain->sentenceLevel);
  Expected<ModelDescription> desc =
      parseEdited([](json::Object &o) { o["sentence_level"] = true; });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_TRUE(desc->sentenceLevel);
  EXPECT_EQ(errorOf([](json::Object &o) { o["sentence_level"] = "yes"; }),
            "m/model.json: field 'sentence_level': expected true or false, "
            "got \"yes\"");
}

TEST(ModelDescriptionTest, DecodingDefaults) {
  Expected<ModelDescription> plain = parseEdited();
  ASSERT_TRUE(bool(plain));
  EXPECT_FALSE(plain->decoding.beamSize);
  EXPECT_FALSE(plain->decoding.lengthPenalty);
  Expected<ModelDescription> both = parseEdited([](json::Object &o) {
    o["decoding"] = json::Object{{"beam_size", 4}, {"length_penalty", 0.6}};
  });
  ASSERT_TRUE(bool(both)) << toString(both.takeError());
  EXPECT_EQ(both->decoding.beamSize, 4);
  EXPECT_EQ(both->decoding.lengthPenalty, 0.6);
  Expected<ModelDescription> one = parseEdited([](json::Object &o) {
    o["decoding"] = json::Object{{"length_penalty", 0}};
  });
  ASSERT_TRUE(bool(one)) << toString(one.takeError());
  EXPECT_FALSE(one->decoding.beamSize);
  EXPECT_EQ(one->decoding.lengthPenalty, 0.0);
  EXPECT_EQ(errorOf([](json::Object &o) {
              o["decoding"] = json::Object{{"beam_size", 0}};
            }),
            "m/model.json: field 'decoding.beam_size': expected a positive "
            "integer, got 0");
  EXPECT_EQ(errorOf([](json::Object &o) {
              o["decoding"] = json::Object{{"beam_size", 257}};
            }),
            "m/model.json: field 'decoding.beam_size': expected at most 256, "
            "got 257");
  EXPECT_EQ(errorOf([](json::Object &o) {
              o["decoding"] = json::Object{{"length_penalty", -1}};
            }),
            "m/model.json: field 'decoding.length_penalty': expected a number "
            ">= 0, got -1");
  EXPECT_EQ(errorOf([](json::Object &o) {
              o["decoding"] = json::Object{{"beam", 4}};
            }),
            "m/model.json: unknown field 'decoding.beam'");
  EXPECT_EQ(errorOf([](json::Object &o) { o["decoding"] = 4; }),
            "m/model.json: field 'decoding': expected an object, got 4");
}

TEST(ModelDescriptionTest, ConvertedModelFieldErrors) {
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens").erase("bos");
            }),
            "m/model.json: missing field 'special_tokens.bos'");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens")["never_generate"] = json::Array{0, 2};
            }),
            "m/model.json: field 'special_tokens.never_generate': id 2 is "
            "special_tokens.eos, which a search must be able to choose");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens")["never_generate"] = json::Array{0, 0};
            }),
            "m/model.json: field 'special_tokens.never_generate': id 0 is "
            "listed twice");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens")["never_generate"] = 0;
            }),
            "m/model.json: field 'special_tokens.never_generate': expected a "
            "list of token ids, got 0");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens")["never_generate"] = json::Array{-1};
            }),
            "m/model.json: field 'special_tokens.never_generate': expected "
            "non-negative integers, got -1");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "special_tokens")["decoder_start"] = "pad";
            }),
            "m/model.json: field 'special_tokens.decoder_start': expected a "
            "non-negative integer, got \"pad\"");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "source")["piece_ids"] = "vocab";
            }),
            "m/model.json: field 'source.piece_ids': only allowed with "
            "tokenizer \"sentencepiece\", not \"char\"");
  EXPECT_EQ(errorOf([](json::Object &o) {
              o["source"] = json::Object{{"vocab", "v"},
                                         {"tokenizer", "sentencepiece"},
                                         {"model", "x.spm"},
                                         {"piece_ids", "text"}};
            }),
            "m/model.json: field 'source.piece_ids': expected \"model\" or "
            "\"vocab\", got \"text\"");
}

TEST(ModelDescriptionTest, HeadsMustDivideDModel) {
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["d_model"] = 64;
              sub(o, "architecture")["num_heads"] = 3;
            }),
            "m/model.json: field 'architecture.num_heads': "
            "architecture.num_heads (3) does not divide architecture.d_model "
            "(64)");
}

TEST(ModelDescriptionTest, SentencePieceModelField) {
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    sub(o, "target")["tokenizer"] = "sentencepiece";
    sub(o, "target")["model"] = "spm/t.model";
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_EQ(desc->target.spmModelPath, currentDir() + "/m/spm/t.model");

  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "source")["tokenizer"] = "sentencepiece";
            }),
            "m/model.json: missing field 'source.model' (required by "
            "tokenizer \"sentencepiece\")");
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "source")["model"] = "x.model"; }),
      "m/model.json: field 'source.model': only allowed with tokenizer "
      "\"sentencepiece\", not \"char\"");
}

TEST(ModelDescriptionTest, SpecialTokensMustBeDistinct) {
  EXPECT_EQ(
      errorOf([](json::Object &o) { sub(o, "special_tokens")["eos"] = 1; }),
      "m/model.json: field 'special_tokens.eos': id 1 is also used by "
      "'special_tokens.bos'");
}

TEST(ModelDescriptionTest, BlockRecipes) {
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    json::Object &a = sub(o, "architecture");
    a.erase("norm");
    a["encoder_layer"] =
        "x = x + self_attn(x); x = x + ffn(norm1(x)); x = norm2(x)";
    a["decoder_layer"] = "x = x + self_attn(x); x = x + ffn(norm1(x)); "
                         "x = x + cross_attn(norm2(x)); x = norm3(x)";
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  const Architecture &a = desc->arch;
  EXPECT_FALSE(a.norm.has_value());
  EXPECT_EQ(a.layerRecipe(LayerKind::Encoder).str(),
            "x = x + self_attn(x); x = x + ffn(norm1(x)); x = norm2(x)");
  EXPECT_EQ(a.layerRecipe(LayerKind::Decoder).norms().size(), 3u);
  // No "norm" and no flags: no final norms.
  EXPECT_FALSE(a.finalNorm(LayerKind::Encoder));
  EXPECT_FALSE(a.finalNorm(LayerKind::Decoder));
}

TEST(ModelDescriptionTest, ShorthandAndFinalNormDefaults) {
  Expected<ModelDescription> pre = parseEdited(
      [](json::Object &o) { sub(o, "architecture")["norm"] = "pre"; });
  ASSERT_TRUE(bool(pre)) << toString(pre.takeError());
  EXPECT_TRUE(pre->arch.finalNorm(LayerKind::Encoder));
  EXPECT_EQ(pre->arch.layerRecipe(LayerKind::Encoder).str(),
            preNormRecipe(LayerKind::Encoder).str());
  // torch.nn.Transformer: post-norm layers with both final norms; a recipe
  // for one stack, the shorthand for the other.
  Expected<ModelDescription> mixed = parseEdited([](json::Object &o) {
    json::Object &a = sub(o, "architecture");
    a["encoder_final_norm"] = true;
    a["decoder_final_norm"] = false;
    a["encoder_layer"] = "x = norm2(x + ffn(norm1(x + self_attn(x))))";
  });
  ASSERT_TRUE(bool(mixed)) << toString(mixed.takeError());
  EXPECT_TRUE(mixed->arch.finalNorm(LayerKind::Encoder));
  EXPECT_FALSE(mixed->arch.finalNorm(LayerKind::Decoder));
  EXPECT_EQ(mixed->arch.layerRecipe(LayerKind::Decoder).str(),
            postNormRecipe(LayerKind::Decoder).str());
}

TEST(ModelDescriptionTest, RecipeErrors) {
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["encoder_layer"] = "x = ffn(x) +";
            }),
            "m/model.json: field 'architecture.encoder_layer': column 13: "
            "expected a value or a sublayer, found the end of the recipe");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["decoder_layer"] = 3;
            }),
            "m/model.json: field 'architecture.decoder_layer': expected a "
            "non-empty string, got 3");
  // "norm" may only be left out when every stack has a recipe.
  EXPECT_EQ(errorOf([](json::Object &o) {
              json::Object &a = sub(o, "architecture");
              a.erase("norm");
              a["encoder_layer"] = "x = x + self_attn(x) + ffn(x)";
            }),
            "m/model.json: missing field 'architecture.norm'");
}

TEST(ModelDescriptionTest, EncoderOnly) {
  Expected<ModelDescription> desc = parseEdited([](json::Object &o) {
    sub(o, "architecture")["num_decoder_layers"] = 0;
    o.erase("target");
  });
  ASSERT_TRUE(bool(desc)) << toString(desc.takeError());
  EXPECT_TRUE(desc->arch.encoderOnly());
  EXPECT_FALSE(desc->arch.finalNorm(LayerKind::Decoder));

  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["num_decoder_layers"] = 0;
            }),
            "m/model.json: field 'target': not allowed when "
            "architecture.num_decoder_layers is 0 (an encoder-only model)");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["num_decoder_layers"] = 0;
              sub(o, "architecture")["decoder_final_norm"] = true;
              o.erase("target");
            }),
            "m/model.json: field 'architecture.decoder_final_norm': not "
            "allowed when architecture.num_decoder_layers is 0");
  // A translation model still needs its target side.
  EXPECT_EQ(errorOf([](json::Object &o) { o.erase("target"); }),
            "m/model.json: missing field 'target'");
  EXPECT_EQ(errorOf([](json::Object &o) {
              sub(o, "architecture")["num_decoder_layers"] = -1;
            }),
            "m/model.json: field 'architecture.num_decoder_layers': expected "
            "a non-negative integer, got -1");
}

} // namespace
