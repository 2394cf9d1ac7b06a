//===- Importer.cpp - model description -> tfm module ---------------------===//
#include "frontends/importer/Importer.h"

#include "dialects/tfm/IR/TfmOps.h"
#include "frontends/model/Model.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <functional>
#include <string>

using namespace mlir;
using namespace tfmc::frontend;
namespace tfm = mlir::tfm;

namespace {

/// Builds one function whose weight arguments are added on first use, in
/// use order.
class FunctionBuilder {
public:
  FunctionBuilder(ModuleOp module, StringRef name,
                  const llvm::StringMap<ExpectedTensor> &shapes)
      : b(module.getContext()), shapes(shapes) {
    b.setInsertionPointToEnd(module.getBody());
    func = b.create<func::FuncOp>(NameLoc::get(b.getStringAttr(name)), name,
                                  b.getFunctionType({}, {}));
    entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
  }

  OpBuilder &builder() { return b; }

  Value input(StringRef name, Type type) {
    return addArgument(type, kInputAttr, name);
  }
  Value cache(StringRef name, Type type) {
    return addArgument(type, kCacheAttr, name);
  }
  Value weight(const std::string &name) {
    auto it = weights.find(name);
    if (it != weights.end())
      return it->second;
    const ExpectedTensor &t = shapes.find(name)->second;
    Value v = addArgument(RankedTensorType::get(t.shape, b.getF32Type()),
                          kWeightAttr, name);
    weights[name] = v;
    return v;
  }

  void finish(ArrayRef<std::pair<std::string, Value>> outputs) {
    SmallVector<Value> values;
    SmallVector<Type> types;
    for (auto &[name, v] : outputs) {
      values.push_back(v);
      types.push_back(v.getType());
    }
    b.create<func::ReturnOp>(func.getLoc(), values);
    func.setType(b.getFunctionType(entry->getArgumentTypes(), types));
    for (auto [i, attrs] : llvm::enumerate(argAttrs))
      func.setArgAttrs(i, attrs);
    for (auto [i, out] : llvm::enumerate(outputs))
      func.setResultAttr(i, kOutputAttr, b.getStringAttr(out.first));
    func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  }

private:
  Value addArgument(Type type, StringRef attr, StringRef name) {
    Value v = entry->addArgument(type, func.getLoc());
    argAttrs.push_back(
        b.getDictionaryAttr(b.getNamedAttr(attr, b.getStringAttr(name))));
    return v;
  }

  OpBuilder b;
  const llvm::StringMap<ExpectedTensor> &shapes;
  func::FuncOp func;
  Block *entry = nullptr;
  llvm::StringMap<Value> weights;
  SmallVector<DictionaryAttr> argAttrs;
};

/// Emits the Transformer's layers into a FunctionBuilder.
class ModelEmitter {
public:
  ModelEmitter(FunctionBuilder &fb, const Architecture &arch)
      : fb(fb), b(fb.builder()), arch(arch) {
    auto f32 = b.getF32Type();
    activations = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, arch.dModel}, f32);
    positionalTable = RankedTensorType::get({arch.maxLen, arch.dModel}, f32);
    lengthsType = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    idsType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic}, b.getI32Type());
    cacheType = MemRefType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, arch.dModel}, f32);
  }

  RankedTensorType activations, positionalTable, lengthsType, idsType;
  MemRefType cacheType;
  Value sinusoid;

  Location loc(const std::string &name) {
    return NameLoc::get(b.getStringAttr(name));
  }

  /// The position vectors of one side: the runtime's sinusoidal table (an
  /// input, shared by both sides) or the side's stored table (a weight).
  Value positions(LayerKind side) {
    if (arch.positionTables())
      return fb.weight(side == LayerKind::Encoder ? "encoder_positions.weight"
                                                  : "decoder_positions.weight");
    if (!sinusoid)
      sinusoid = fb.input("positional_table", positionalTable);
    return sinusoid;
  }

  Value embed(Value ids, const std::string &table, Value pe, Value offset) {
    float scale = arch.embeddingScale
                      ? static_cast<float>(std::sqrt(double(arch.dModel)))
                      : 1.0f;
    auto type = RankedTensorType::get(
        {cast<ShapedType>(ids.getType()).getDimSize(0),
         cast<ShapedType>(ids.getType()).getDimSize(1), arch.dModel},
        b.getF32Type());
    Value e = b.create<tfm::EmbeddingOp>(loc(table), type, ids,
                                         fb.weight(table + ".weight"),
                                         b.getF32FloatAttr(scale));
    return b.create<tfm::PositionalEncodingOp>(loc("positional_encoding"), e,
                                               pe, offset);
  }

  Value linear(Value x, const std::string &prefix,
               tfm::Activation act = tfm::Activation::none) {
    Value w = fb.weight(prefix + ".weight");
    auto xType = cast<ShapedType>(x.getType());
    auto type =
        RankedTensorType::get({xType.getDimSize(0), xType.getDimSize(1),
                               cast<ShapedType>(w.getType()).getDimSize(0)},
                              b.getF32Type());
    return b.create<tfm::LinearOp>(loc(prefix), type, act, x, w,
                                   fb.weight(prefix + ".bias"));
  }

  Value layerNorm(Value x, const std::string &prefix) {
    return b.create<tfm::LayerNormOp>(
        loc(prefix), x, fb.weight(prefix + ".weight"),
        fb.weight(prefix + ".bias"), b.getF64FloatAttr(arch.layerNormEps));
  }

  Value feedForward(Value x, const std::string &prefix) {
    auto act = arch.activation == Activation::Gelu   ? tfm::Activation::gelu
               : arch.activation == Activation::Silu ? tfm::Activation::silu
                                                     : tfm::Activation::relu;
    return linear(linear(x, prefix + ".linear1", act), prefix + ".linear2");
  }

  Value attention(Value query, Value keyValue, const std::string &prefix,
                  tfm::MaskKind mask, Value keyLengths, Value keyCache = {},
                  Value valueCache = {}, Value position = {}) {
    auto w = [&](const char *what) { return fb.weight(prefix + "." + what); };
    return b.create<tfm::MultiHeadAttentionOp>(
        loc(prefix), query.getType(), mask, query, keyValue,
        w("query_linear.weight"), w("query_linear.bias"),
        w("key_linear.weight"), w("key_linear.bias"), w("value_linear.weight"),
        w("value_linear.bias"), w("output_linear.weight"),
        w("output_linear.bias"), static_cast<uint64_t>(arch.numHeads),
        keyLengths, keyCache, valueCache, position);
  }

  /// Cross-attention over keys/values the encoder computed (decode_step):
  /// `keyRows` names the source row each query row (hypothesis) reads.
  Value cachedCrossAttention(Value query, const std::string &prefix, Value keys,
                             Value values, Value keyLengths, Value keyRows) {
    Value q = linear(query, prefix + ".query_linear");
    auto scale = static_cast<float>(1.0 / std::sqrt(double(arch.headDim())));
    Value a = b.create<tfm::AttentionOp>(
        loc(prefix), q.getType(),
        tfm::MaskKindAttr::get(b.getContext(), tfm::MaskKind::padding), q, keys,
        values, b.getI64IntegerAttr(arch.numHeads), b.getF32FloatAttr(scale),
        keyLengths, keyRows, Value(), Value());
    return linear(a, prefix + ".output_linear");
  }

  /// One layer wired by its recipe: values are evaluated statement by
  /// statement; self_attn and cross_attn are the caller's (masks and caches
  /// differ per function), ffn and normK are the layer's own.
  Value layer(Value x, const LayerRecipe &recipe, const std::string &prefix,
              llvm::function_ref<Value(Value)> selfAttention,
              llvm::function_ref<Value(Value)> crossAttention) {
    llvm::StringMap<Value> values;
    values["x"] = x;
    // Residual sums are numbered in the layer's order (`N.residual1`,
    // `N.residual2`, ...): a profile's rows tell them apart.
    int residuals = 0;
    std::function<Value(int)> eval = [&](int index) -> Value {
      const RecipeNode &n = recipe.nodes[index];
      switch (n.kind) {
      case RecipeNode::Kind::Variable:
        return values.lookup(n.name);
      case RecipeNode::Kind::SelfAttention:
        return selfAttention(eval(n.operands[0]));
      case RecipeNode::Kind::CrossAttention:
        return crossAttention(eval(n.operands[0]));
      case RecipeNode::Kind::FeedForward:
        return feedForward(eval(n.operands[0]), prefix + ".feed_forward");
      case RecipeNode::Kind::Norm:
        return layerNorm(eval(n.operands[0]), prefix + "." + n.name);
      case RecipeNode::Kind::Add: {
        Value sum = eval(n.operands[0]);
        for (int o : llvm::ArrayRef(n.operands).drop_front()) {
          // The operand first: the sums inside it are numbered before.
          Value operand = eval(o);
          sum = b.create<tfm::AddOp>(
              loc(prefix + ".residual" + std::to_string(++residuals)), sum,
              operand);
        }
        return sum;
      }
      }
      llvm_unreachable("unknown recipe node");
    };
    for (const LayerRecipe::Statement &s : recipe.statements)
      values[s.target] = eval(s.value);
    return values.lookup("x");
  }

  Value encoder(Value srcIds, Value srcLengths, Value pe) {
    Value x = embed(srcIds, "encoder_embedding", pe, Value());
    LayerRecipe recipe = arch.layerRecipe(LayerKind::Encoder);
    for (int64_t i = 0; i < arch.numEncoderLayers; ++i) {
      std::string p = "encoder_layers." + std::to_string(i);
      x = layer(x, recipe, p,
                [&](Value y) {
                  return attention(y, y, p + ".self_attention",
                                   tfm::MaskKind::padding, srcLengths);
                },
                {});
    }
    if (arch.finalNorm(LayerKind::Encoder))
      x = layerNorm(x, "encoder_norm");
    return x;
  }

  Value finalDecoderNorm(Value y) {
    if (arch.finalNorm(LayerKind::Decoder))
      return layerNorm(y, "decoder_norm");
    return y;
  }

private:
  FunctionBuilder &fb;
  OpBuilder &b;
  const Architecture &arch;
};

std::string layerName(int64_t i) {
  return "decoder_layers." + std::to_string(i);
}

void buildEncode(ModuleOp module, const Architecture &arch,
                 const llvm::StringMap<ExpectedTensor> &shapes) {
  FunctionBuilder fb(module, "encode", shapes);
  ModelEmitter m(fb, arch);
  Value srcIds = fb.input("src_ids", m.idsType);
  Value srcLengths = fb.input("src_lengths", m.lengthsType);
  Value memory = m.encoder(srcIds, srcLengths, m.positions(LayerKind::Encoder));
  SmallVector<std::pair<std::string, Value>> outputs;
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string p = layerName(i) + ".enc_dec_attention";
    std::string n = std::to_string(i);
    outputs.emplace_back("cross_key." + n, m.linear(memory, p + ".key_linear"));
    outputs.emplace_back("cross_value." + n,
                         m.linear(memory, p + ".value_linear"));
  }
  fb.finish(outputs);
}

void buildEncoderStates(ModuleOp module, const Architecture &arch,
                        const llvm::StringMap<ExpectedTensor> &shapes) {
  FunctionBuilder fb(module, "encode_states", shapes);
  ModelEmitter m(fb, arch);
  Value srcIds = fb.input("src_ids", m.idsType);
  Value srcLengths = fb.input("src_lengths", m.lengthsType);
  fb.finish({{"states", m.encoder(srcIds, srcLengths,
                                   m.positions(LayerKind::Encoder))}});
}

void buildDecodeStep(ModuleOp module, const Architecture &arch,
                     const llvm::StringMap<ExpectedTensor> &shapes) {
  FunctionBuilder fb(module, "decode_step", shapes);
  ModelEmitter m(fb, arch);
  OpBuilder &b = fb.builder();
  auto tokensType =
      RankedTensorType::get({ShapedType::kDynamic, 1}, b.getI32Type());
  Value tokens = fb.input("tokens", tokensType);
  Value step = fb.input("step", b.getIndexType());
  Value srcLengths = fb.input("src_lengths", m.lengthsType);
  Value crossRows = fb.input("cross_rows", m.lengthsType);
  Value pe = m.positions(LayerKind::Decoder);
  SmallVector<Value> crossKeys, crossValues, selfKeys, selfValues;
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string n = std::to_string(i);
    crossKeys.push_back(fb.input("cross_key." + n, m.activations));
    crossValues.push_back(fb.input("cross_value." + n, m.activations));
  }
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string n = std::to_string(i);
    selfKeys.push_back(fb.cache("self_key." + n, m.cacheType));
    selfValues.push_back(fb.cache("self_value." + n, m.cacheType));
  }
  Value y = m.embed(tokens, "decoder_embedding", pe, step);
  LayerRecipe recipe = arch.layerRecipe(LayerKind::Decoder);
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string p = layerName(i);
    y = m.layer(
        y, recipe, p,
        [&](Value x) {
          return m.attention(x, x, p + ".masked_self_attention",
                             tfm::MaskKind::causal, Value(), selfKeys[i],
                             selfValues[i], step);
        },
        [&](Value x) {
          return m.cachedCrossAttention(x, p + ".enc_dec_attention",
                                        crossKeys[i], crossValues[i],
                                        srcLengths, crossRows);
        });
  }
  y = m.finalDecoderNorm(y);
  fb.finish({{"logits", m.linear(y, "linear")}});
}

void buildForward(ModuleOp module, const Architecture &arch,
                  const llvm::StringMap<ExpectedTensor> &shapes) {
  FunctionBuilder fb(module, "forward", shapes);
  ModelEmitter m(fb, arch);
  Value srcIds = fb.input("src_ids", m.idsType);
  Value srcLengths = fb.input("src_lengths", m.lengthsType);
  Value tgtIds = fb.input("tgt_ids", m.idsType);
  Value tgtLengths = fb.input("tgt_lengths", m.lengthsType);
  Value memory = m.encoder(srcIds, srcLengths, m.positions(LayerKind::Encoder));
  Value y = m.embed(tgtIds, "decoder_embedding",
                    m.positions(LayerKind::Decoder), Value());
  LayerRecipe recipe = arch.layerRecipe(LayerKind::Decoder);
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string p = layerName(i);
    y = m.layer(
        y, recipe, p,
        [&](Value x) {
          return m.attention(x, x, p + ".masked_self_attention",
                             tfm::MaskKind::causal, tgtLengths);
        },
        [&](Value x) {
          return m.attention(x, memory, p + ".enc_dec_attention",
                             tfm::MaskKind::padding, srcLengths);
        });
  }
  y = m.finalDecoderNorm(y);
  fb.finish({{"logits", m.linear(y, "linear")}});
}

} // namespace

OwningOpRef<ModuleOp>
tfmc::frontend::importModel(MLIRContext &context, const Architecture &arch,
                            int64_t sourceVocabSize, int64_t targetVocabSize,
                            const ImportOptions &options) {
  context.loadDialect<mlir::tfm::TfmDialect, func::FuncDialect,
                      arith::ArithDialect, tensor::TensorDialect>();
  llvm::StringMap<ExpectedTensor> shapes;
  for (ExpectedTensor &t :
       expectedTensors(arch, sourceVocabSize, targetVocabSize))
    shapes[t.name] = t;
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(NameLoc::get(b.getStringAttr("model")));
  (*module)->setAttr("tfm.d_model", b.getI64IntegerAttr(arch.dModel));
  (*module)->setAttr("tfm.max_len", b.getI64IntegerAttr(arch.maxLen));
  // An encoder-only model has nothing but its encoder states.
  bool decoder = !arch.encoderOnly();
  if (options.encode && decoder)
    buildEncode(*module, arch, shapes);
  if (options.decodeStep && decoder)
    buildDecodeStep(*module, arch, shapes);
  if (options.forward && decoder)
    buildForward(*module, arch, shapes);
  if (options.encoderStates)
    buildEncoderStates(*module, arch, shapes);
  return module;
}
