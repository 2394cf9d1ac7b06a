//===- ModelTest.cpp - expected tensors and cross-checked loading ---------===//

#include "TestFiles.h"

#include "frontends/model/Model.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace llvm;
using namespace tfmc::frontend;
using namespace tfmc::frontend::test;

namespace {

const ExpectedTensor *findExpected(const std::vector<ExpectedTensor> &all,
                                   StringRef name) {
  for (const ExpectedTensor &e : all)
    if (e.name == name)
      return &e;
  return nullptr;
}

size_t indexOf(const std::vector<ExpectedTensor> &all, StringRef name) {
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].name == name)
      return i;
  return all.size();
}

TEST(ExpectedTensorsTest, PostNormCountsAndShapes) {
  Architecture arch = tinyArchitecture(NormPlacement::Post);
  std::vector<ExpectedTensor> all = expectedTensors(arch, 7, 9);
  // Per encoder layer: 8 attention + 4 feed-forward + 4 norm = 16; per
  // decoder layer: 16 attention + 4 feed-forward + 6 norm = 26.
  EXPECT_EQ(all.size(), 2u + 16 * 1 + 26 * 2 + 2);
  StringSet<> names;
  for (const ExpectedTensor &e : all)
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
  EXPECT_EQ(all.front().name, "encoder_embedding.weight");
  EXPECT_EQ(all.front().shape, (std::vector<int64_t>{7, 4}));
  EXPECT_EQ(all[1].name, "decoder_embedding.weight");
  EXPECT_EQ(all[1].shape, (std::vector<int64_t>{9, 4}));
  EXPECT_EQ(all.back().name, "linear.bias");
  EXPECT_EQ(all.back().shape, (std::vector<int64_t>{9}));
  EXPECT_EQ(all[all.size() - 2].name, "linear.weight");
  EXPECT_EQ(all[all.size() - 2].shape, (std::vector<int64_t>{9, 4}));

  struct {
    const char *name;
    std::vector<int64_t> shape;
  } cases[] = {
      {"encoder_layers.0.self_attention.query_linear.weight", {4, 4}},
      {"encoder_layers.0.self_attention.output_linear.bias", {4}},
      {"encoder_layers.0.feed_forward.linear1.weight", {8, 4}},
      {"encoder_layers.0.feed_forward.linear1.bias", {8}},
      {"encoder_layers.0.feed_forward.linear2.weight", {4, 8}},
      {"encoder_layers.0.feed_forward.linear2.bias", {4}},
      {"encoder_layers.0.norm2.weight", {4}},
      {"decoder_layers.1.masked_self_attention.key_linear.weight", {4, 4}},
      {"decoder_layers.1.enc_dec_attention.value_linear.bias", {4}},
      {"decoder_layers.1.feed_forward.linear2.weight", {4, 8}},
      {"decoder_layers.1.norm3.bias", {4}},
  };
  for (const auto &c : cases) {
    const ExpectedTensor *e = findExpected(all, c.name);
    ASSERT_TRUE(e) << c.name;
    EXPECT_EQ(e->shape, c.shape) << c.name;
  }
  EXPECT_FALSE(findExpected(all, "encoder_norm.weight"));
  EXPECT_FALSE(findExpected(all, "decoder_norm.weight"));
  EXPECT_FALSE(findExpected(all, "encoder_layers.0.norm3.weight"));
  EXPECT_FALSE(findExpected(all, "decoder_layers.2.norm1.weight"));
}

TEST(ExpectedTensorsTest, PreNormAddsFinalNorms) {
  Architecture arch = tinyArchitecture(NormPlacement::Pre);
  std::vector<ExpectedTensor> all = expectedTensors(arch, 7, 9);
  EXPECT_EQ(all.size(), 2u + 16 * 1 + 26 * 2 + 2 + 4);
  ASSERT_TRUE(findExpected(all, "encoder_norm.weight"));
  EXPECT_EQ(findExpected(all, "decoder_norm.bias")->shape,
            (std::vector<int64_t>{4}));
  // Canonical order: encoder_norm right after the encoder layers,
  // decoder_norm right before the output projection.
  EXPECT_EQ(indexOf(all, "encoder_norm.weight"),
            indexOf(all, "encoder_layers.0.norm2.bias") + 1);
  EXPECT_LT(indexOf(all, "encoder_norm.bias"),
            indexOf(all, "decoder_layers.0.masked_self_attention."
                         "query_linear.weight"));
  EXPECT_EQ(indexOf(all, "decoder_norm.bias") + 1,
            indexOf(all, "linear.weight"));
}

TEST(ExpectedTensorsTest, LayerCountsScale) {
  Architecture arch = tinyArchitecture(NormPlacement::Post);
  arch.numEncoderLayers = 6;
  arch.numDecoderLayers = 3;
  EXPECT_EQ(expectedTensors(arch, 5, 5).size(), 2u + 16 * 6 + 26 * 3 + 2);
}

TEST(ExpectedTensorsTest, RecipeNormsAndFinalNorms) {
  Architecture arch = tinyArchitecture(NormPlacement::Post);
  arch.norm = std::nullopt;
  arch.encoderLayer = *parseLayerRecipe(
      "h = norm4(x); x = norm7(x + self_attn(h) + ffn(h))", LayerKind::Encoder);
  arch.decoderLayer =
      *parseLayerRecipe("x = x + self_attn(x); x = x + ffn(norm1(x)); "
                        "x = x + cross_attn(norm2(x)); x = norm3(x)",
                        LayerKind::Decoder);
  arch.decoderFinalNormFlag = true;
  std::vector<ExpectedTensor> all = expectedTensors(arch, 7, 9);
  EXPECT_NE(findExpected(all, "encoder_layers.0.norm4.weight"), nullptr);
  EXPECT_NE(findExpected(all, "encoder_layers.0.norm7.bias"), nullptr);
  EXPECT_EQ(findExpected(all, "encoder_layers.0.norm1.weight"), nullptr);
  EXPECT_EQ(findExpected(all, "encoder_norm.weight"), nullptr);
  EXPECT_NE(findExpected(all, "decoder_layers.1.norm3.weight"), nullptr);
  EXPECT_NE(findExpected(all, "decoder_norm.bias"), nullptr);
  EXPECT_EQ(all.size(), 2u + 16 * 1 + 26 * 2 + 2 + 2);
}

TEST(ExpectedTensorsTest, EncoderOnlyHasNoDecoderSide) {
  Architecture arch = tinyArchitecture(NormPlacement::Post);
  arch.numDecoderLayers = 0;
  std::vector<ExpectedTensor> all = expectedTensors(arch, 7, 0);
  EXPECT_EQ(all.size(), 1u + 16 * 1);
  for (const ExpectedTensor &e : all)
    EXPECT_TRUE(StringRef(e.name).starts_with("encoder_")) << e.name;
}

class ModelTest : public ::testing::Test {
protected:
  std::string loadError(const TinyModelOptions &options) {
    Expected<Model> model = loadModel(writeTinyModel(dir, options));
    if (model)
      return "";
    return toString(model.takeError());
  }
  std::string weightsPath() const { return dir.file("model.safetensors"); }

  TempDir dir;
};

TEST_F(ModelTest, LoadsPostNormModel) {
  Expected<Model> model = loadModel(writeTinyModel(dir));
  ASSERT_TRUE(bool(model)) << toString(model.takeError());
  EXPECT_EQ(model->sourceVocab.size(), 7);
  EXPECT_EQ(model->targetVocab.size(), 9);
  EXPECT_EQ(model->targetVocab.token(3), "t3");
  EXPECT_EQ(model->desc.weightsPath, weightsPath());
  EXPECT_EQ(model->weights->tensors().size(), 72u);
  const TensorView &emb = model->weight("decoder_embedding.weight");
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{9, 4}));
  EXPECT_FLOAT_EQ(emb.data[0], 1.0f);
  EXPECT_FLOAT_EQ(emb.data[5], 1.005f);
  const TensorView &bias = model->weight("linear.bias");
  EXPECT_FLOAT_EQ(bias.data[8], 71.008f);
}

TEST_F(ModelTest, LoadsPreNormModel) {
  TinyModelOptions options;
  options.norm = "pre";
  Expected<Model> model = loadModel(writeTinyModel(dir, options));
  ASSERT_TRUE(bool(model)) << toString(model.takeError());
  EXPECT_EQ(model->desc.arch.norm, NormPlacement::Pre);
  EXPECT_EQ(model->weight("encoder_norm.weight").shape,
            (std::vector<int64_t>{4}));
}

TEST_F(ModelTest, LoadsEncoderOnlyModel) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) {
    (*o.getObject("architecture"))["num_decoder_layers"] = 0;
    o.erase("target");
  };
  Expected<Model> model = loadModel(writeTinyModel(dir, options));
  ASSERT_TRUE(bool(model)) << toString(model.takeError());
  EXPECT_TRUE(model->desc.arch.encoderOnly());
  EXPECT_EQ(model->targetVocab.size(), 0);
  EXPECT_EQ(model->weights->tensors().size(), 17u);
  // Decoder weights in an encoder-only file are unexpected.
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.push_back(
        {"linear.bias", "F32", {9}, f32Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0})});
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": unexpected tensor 'linear.bias'");
}

TEST_F(ModelTest, NonFiniteWeightsAreReported) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    for (RawTensor &t : tensors)
      if (t.name == "encoder_layers.0.norm2.bias")
        t.bytes = f32Bytes({0, 1, std::nanf(""), 3});
  };
  EXPECT_EQ(loadError(options),
            weightsPath() +
                ": tensor 'encoder_layers.0.norm2.bias': element 2 is NaN");
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    for (RawTensor &t : tensors)
      if (t.name == "linear.bias")
        t.bytes = f32Bytes({0, 0, 0, 0, 0, 0, 0, 0, -INFINITY});
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": tensor 'linear.bias': element 8 is infinite");
}

TEST_F(ModelTest, DescriptionsNeedingMoreMemoryThanTheMachineAreRefused) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) {
    (*o.getObject("architecture"))["max_len"] = int64_t(1) << 50;
  };
  std::string error = loadError(options);
  EXPECT_NE(error.find("architecture.max_len (1125899906842624) x "
                       "architecture.d_model (4) needs"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("GB for positional encodings, more than half of this "
                       "machine's"),
            std::string::npos)
      << error;
}

TEST_F(ModelTest, AcceptsHalfPrecisionWeights) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    RawTensor &t = tensors.back(); // linear.bias [9]
    t.dtype = "F16";
    t.bytes = u16Bytes({0x3C00, 0, 0, 0, 0, 0, 0, 0, 0xC000});
  };
  Expected<Model> model = loadModel(writeTinyModel(dir, options));
  ASSERT_TRUE(bool(model)) << toString(model.takeError());
  const TensorView &bias = model->weight("linear.bias");
  EXPECT_EQ(bias.dtype, "F16");
  EXPECT_EQ(bias.data[0], 1.0f);
  EXPECT_EQ(bias.data[8], -2.0f);
}

TEST_F(ModelTest, MissingTensor) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.pop_back();
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": missing tensor 'linear.bias'");
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.erase(tensors.begin() + 2, tensors.begin() + 5);
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": missing tensor 'encoder_layers.0.self_attention."
                            "query_linear.weight' (and 2 more)");
}

TEST_F(ModelTest, UnexpectedTensor) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.push_back({"foo", "F32", {1}, f32Bytes({0})});
  };
  EXPECT_EQ(loadError(options), weightsPath() + ": unexpected tensor 'foo'");
  // Final norms only exist with pre-norm.
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.push_back(
        {"encoder_norm.weight", "F32", {4}, f32Bytes({1, 1, 1, 1})});
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": unexpected tensor 'encoder_norm.weight'");
}

TEST_F(ModelTest, WrongShape) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    for (RawTensor &t : tensors)
      if (t.name == "encoder_layers.0.norm1.weight")
        t.shape = {2, 2};
  };
  EXPECT_EQ(loadError(options), weightsPath() +
                                    ": tensor 'encoder_layers.0.norm1.weight': "
                                    "expected shape [4], got [2, 2]");
}

TEST_F(ModelTest, VocabSizeMustMatchEmbeddingRows) {
  TinyModelOptions options;
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors[0].shape = {8, 4};
    tensors[0].bytes = f32Bytes(std::vector<float>(32, 0.0f));
  };
  EXPECT_EQ(loadError(options),
            weightsPath() +
                ": tensor 'encoder_embedding.weight' has 8 rows "
                "but the source vocabulary '" +
                dir.file("src.vocab") + "' has 7 tokens");
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors[1].shape = {3, 4};
    tensors[1].bytes = f32Bytes(std::vector<float>(12, 0.0f));
  };
  EXPECT_EQ(loadError(options),
            weightsPath() +
                ": tensor 'decoder_embedding.weight' has 3 rows "
                "but the target vocabulary '" +
                dir.file("tgt.vocab") + "' has 9 tokens");
}

TEST_F(ModelTest, SpecialTokensMustFitVocabularies) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) {
    (*o.getObject("special_tokens"))["unk"] = 8;
  };
  EXPECT_EQ(loadError(options),
            dir.file("model.json") +
                ": field 'special_tokens.unk': id 8 is out of range for the "
                "source vocabulary '" +
                dir.file("src.vocab") + "' (7 tokens)");
}

TEST_F(ModelTest, PositionTablesAreWeights) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) {
    (*o.getObject("architecture"))["positional_encoding"] = "table";
  };
  Expected<Model> model = loadModel(writeTinyModel(dir, options));
  ASSERT_TRUE(bool(model)) << toString(model.takeError());
  EXPECT_EQ(model->weight("encoder_positions.weight").shape,
            (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(model->weight("decoder_positions.weight").shape,
            (std::vector<int64_t>{16, 4}));

  // A table with the wrong number of rows, and one that is missing.
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    for (RawTensor &t : tensors)
      if (t.name == "decoder_positions.weight") {
        t.shape = {8, 4};
        t.bytes.resize(8 * 4 * sizeof(float));
      }
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": tensor 'decoder_positions.weight': expected "
                            "shape [16, 4], got [8, 4]");
  options.editTensors = [](std::vector<RawTensor> &tensors) {
    llvm::erase_if(tensors, [](const RawTensor &t) {
      return t.name == "encoder_positions.weight";
    });
  };
  EXPECT_EQ(loadError(options),
            weightsPath() + ": missing tensor 'encoder_positions.weight'");
  // A sinusoidal model has no tables.
  TinyModelOptions plain;
  plain.editTensors = [](std::vector<RawTensor> &tensors) {
    tensors.push_back({"encoder_positions.weight", "F32", {16, 4},
                       std::string(16 * 4 * sizeof(float), '\0')});
  };
  EXPECT_EQ(loadError(plain),
            weightsPath() + ": unexpected tensor 'encoder_positions.weight'");
}

TEST_F(ModelTest, DecoderStartAndNeverGeneratedIdsMustFitTheTarget) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) {
    (*o.getObject("special_tokens"))["decoder_start"] = 9;
  };
  EXPECT_EQ(loadError(options),
            dir.file("model.json") +
                ": field 'special_tokens.decoder_start': id 9 is out of range "
                "for the target vocabulary '" +
                dir.file("tgt.vocab") + "' (9 tokens)");
  options.editDescription = [](json::Object &o) {
    (*o.getObject("special_tokens"))["never_generate"] = json::Array{0, 12};
  };
  EXPECT_EQ(loadError(options),
            dir.file("model.json") +
                ": field 'special_tokens.never_generate': id 12 is out of "
                "range for the target vocabulary '" +
                dir.file("tgt.vocab") + "' (9 tokens)");
  // Without bos (Marian) the ids left are checked as before.
  options.editDescription = [](json::Object &o) {
    json::Object &special = *o.getObject("special_tokens");
    special.erase("bos");
    special["decoder_start"] = 0;
  };
  EXPECT_EQ(loadError(options), "");
}

TEST_F(ModelTest, MissingFiles) {
  std::string jsonPath = writeTinyModel(dir);
  ASSERT_FALSE(sys::fs::remove(dir.file("tgt.vocab")));
  Expected<Model> model = loadModel(jsonPath);
  ASSERT_FALSE(bool(model));
  EXPECT_EQ(toString(model.takeError()),
            dir.file("tgt.vocab") +
                ": cannot open file: No such file or directory");

  writeTinyModel(dir);
  ASSERT_FALSE(sys::fs::remove(weightsPath()));
  model = loadModel(jsonPath);
  ASSERT_FALSE(bool(model));
  EXPECT_EQ(toString(model.takeError()),
            weightsPath() + ": cannot open file: No such file or directory");

  model = loadModel(dir.file("missing.json"));
  ASSERT_FALSE(bool(model));
  EXPECT_EQ(toString(model.takeError()),
            dir.file("missing.json") +
                ": cannot open file: No such file or directory");
}

TEST_F(ModelTest, DescriptionErrorsPropagate) {
  TinyModelOptions options;
  options.editDescription = [](json::Object &o) { o.erase("weights"); };
  EXPECT_EQ(loadError(options),
            dir.file("model.json") + ": missing field 'weights'");
}

TEST_F(ModelTest, InvalidVocabularyPropagates) {
  std::string jsonPath = writeTinyModel(dir);
  dir.write("src.vocab", "a\nb\na\n");
  Expected<Model> model = loadModel(jsonPath);
  ASSERT_FALSE(bool(model));
  EXPECT_EQ(toString(model.takeError()),
            dir.file("src.vocab") +
                ": line 3: duplicate token \"a\" (first on line 1)");
}

} // namespace
