//===- Model.cpp - a loaded, cross-checked model --------------------------===//

#include "frontends/model/Model.h"
#include "frontends/model/FileSupport.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <optional>
#include <sys/resource.h>
#include <unistd.h>

using namespace llvm;

namespace tfmc::frontend {

namespace {

void addLinear(std::vector<ExpectedTensor> &out, const std::string &prefix,
               int64_t outFeatures, int64_t inFeatures) {
  out.push_back({prefix + ".weight", {outFeatures, inFeatures}});
  out.push_back({prefix + ".bias", {outFeatures}});
}

void addNorm(std::vector<ExpectedTensor> &out, const std::string &prefix,
             int64_t d) {
  out.push_back({prefix + ".weight", {d}});
  out.push_back({prefix + ".bias", {d}});
}

void addAttention(std::vector<ExpectedTensor> &out, const std::string &prefix,
                  int64_t d) {
  for (const char *proj : {"query", "key", "value", "output"})
    addLinear(out, prefix + "." + proj + "_linear", d, d);
}

void addFeedForward(std::vector<ExpectedTensor> &out, const std::string &prefix,
                    const Architecture &arch) {
  addLinear(out, prefix + ".feed_forward.linear1", arch.dFF, arch.dModel);
  addLinear(out, prefix + ".feed_forward.linear2", arch.dModel, arch.dFF);
}

/// Embedding rows must equal the vocabulary size; checked before the generic
/// shape check so the message names the vocabulary file.
Error checkEmbeddingRows(const SafeTensorsFile &weights, StringRef tensor,
                         StringRef side, StringRef vocabPath,
                         int64_t vocabSize) {
  const TensorView *view = weights.find(tensor);
  if (!view || view->shape.size() != 2 || view->shape[0] == vocabSize)
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("{0}: tensor '{1}' has {2} rows but the {3} vocabulary '{4}' "
              "has {5} tokens",
              weights.path(), tensor, view->shape[0], side, vocabPath,
              vocabSize)
          .str());
}

Error checkSpecialTokens(const ModelDescription &desc, const Model &model) {
  const SpecialTokens &special = desc.special;
  std::vector<std::pair<std::string, int64_t>> ids = {
      {"pad", special.pad}, {"eos", special.eos}, {"unk", special.unk}};
  if (special.hasBos)
    ids.insert(ids.begin() + 1, {"bos", special.bos});
  std::tuple<StringRef, StringRef, int64_t> vocabs[] = {
      {"source", desc.source.vocabPath, model.sourceVocab.size()},
      {"target", desc.target.vocabPath, model.targetVocab.size()}};
  size_t sides = desc.arch.encoderOnly() ? 1 : 2;
  auto outOfRange = [&](StringRef name, int64_t id, StringRef side,
                        StringRef path, int64_t size) {
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: field 'special_tokens.{1}': id {2} is out of range "
                "for the {3} vocabulary '{4}' ({5} tokens)",
                desc.jsonPath, name, id, side, path, size)
            .str());
  };
  for (auto &[name, id] : ids)
    for (auto [side, path, size] : ArrayRef(vocabs).take_front(sides))
      if (id >= size)
        return outOfRange(name, id, side, path, size);
  if (desc.arch.encoderOnly())
    return Error::success();
  // Ids only the target side uses.
  auto [side, path, size] = vocabs[1];
  if (special.decoderStart >= size)
    return outOfRange("decoder_start", special.decoderStart, side, path, size);
  for (int64_t id : special.neverGenerate)
    if (id >= size)
      return outOfRange("never_generate", id, side, path, size);
  return Error::success();
}

/// The index of the first NaN or infinity, if any (exponent bits all set).
std::optional<int64_t> firstNonFinite(const TensorView &view) {
  int64_t n = view.numElements();
  const auto *bits = reinterpret_cast<const uint32_t *>(view.data);
  for (int64_t start = 0; start < n; start += 4096) {
    int64_t end = std::min(n, start + 4096);
    uint32_t any = 0;
    for (int64_t i = start; i < end; ++i)
      any |= (bits[i] & 0x7f800000u) == 0x7f800000u;
    if (!any)
      continue;
    for (int64_t i = start; i < end; ++i)
      if ((bits[i] & 0x7f800000u) == 0x7f800000u)
        return i;
  }
  return std::nullopt;
}

/// What the runtime allocates from the description alone (the positional
/// table, max_len x d_model floats) must fit the machine: a description
/// that asks for more is refused with the figure, not left to fail an
/// allocation.
Error checkMemory(const ModelDescription &d) {
  const Architecture &a = d.arch;
  if (a.positionTables()) // stored in the weights, not allocated
    return Error::success();
  double bytes = double(a.maxLen) * double(a.dModel) * sizeof(float);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double available = pages > 0 && pageSize > 0 ? double(pages) * pageSize : 0;
  const char *what = "this machine's";
  // A process limited below the machine (ulimit -v) would otherwise die in
  // the allocation ("LLVM ERROR: out of memory").
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (available <= 0 || double(limit.rlim_cur) < available)) {
    available = double(limit.rlim_cur);
    what = "this process's address-space limit of";
  }
  if (available > 0 && bytes > available / 2)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: architecture.max_len ({1}) x architecture.d_model ({2}) "
                "needs {3:f1} GB for positional encodings, more than half of "
                "{4} {5:f1} GB",
                d.jsonPath, a.maxLen, a.dModel, bytes / 1e9, what,
                available / 1e9)
            .str());
  return Error::success();
}

} // namespace

std::vector<ExpectedTensor> expectedTensors(const Architecture &arch,
                                            int64_t srcVocabSize,
                                            int64_t tgtVocabSize) {
  int64_t d = arch.dModel;
  std::vector<ExpectedTensor> out;
  out.push_back({"encoder_embedding.weight", {srcVocabSize, d}});
  if (!arch.encoderOnly())
    out.push_back({"decoder_embedding.weight", {tgtVocabSize, d}});
  if (arch.positionTables()) {
    out.push_back({"encoder_positions.weight", {arch.maxLen, d}});
    if (!arch.encoderOnly())
      out.push_back({"decoder_positions.weight", {arch.maxLen, d}});
  }
  std::vector<std::string> encoderNorms =
      arch.layerRecipe(LayerKind::Encoder).norms();
  for (int64_t i = 0; i < arch.numEncoderLayers; ++i) {
    std::string layer = "encoder_layers." + std::to_string(i);
    addAttention(out, layer + ".self_attention", d);
    addFeedForward(out, layer, arch);
    for (const std::string &norm : encoderNorms)
      addNorm(out, layer + "." + norm, d);
  }
  if (arch.finalNorm(LayerKind::Encoder))
    addNorm(out, "encoder_norm", d);
  if (arch.encoderOnly())
    return out;
  std::vector<std::string> decoderNorms =
      arch.layerRecipe(LayerKind::Decoder).norms();
  for (int64_t i = 0; i < arch.numDecoderLayers; ++i) {
    std::string layer = "decoder_layers." + std::to_string(i);
    addAttention(out, layer + ".masked_self_attention", d);
    addAttention(out, layer + ".enc_dec_attention", d);
    addFeedForward(out, layer, arch);
    for (const std::string &norm : decoderNorms)
      addNorm(out, layer + "." + norm, d);
  }
  if (arch.finalNorm(LayerKind::Decoder))
    addNorm(out, "decoder_norm", d);
  addLinear(out, "linear", tgtVocabSize, d);
  return out;
}

const TensorView &Model::weight(StringRef name) const {
  const TensorView *view = weights ? weights->find(name) : nullptr;
  assert(view && "weight not in the model");
  if (!view)
    report_fatal_error(Twine("tfm: no weight named '") + name + "'");
  return *view;
}

Expected<Model> loadModel(StringRef jsonPath, StringRef weightCacheDir) {
  Model model;
  Expected<ModelDescription> desc = parseModelDescription(jsonPath);
  if (!desc)
    return desc.takeError();
  model.desc = std::move(*desc);
  const ModelDescription &d = model.desc;

  Expected<Vocabulary> src = Vocabulary::load(d.source.vocabPath);
  if (!src)
    return src.takeError();
  model.sourceVocab = std::move(*src);
  if (!d.arch.encoderOnly()) {
    Expected<Vocabulary> tgt = Vocabulary::load(d.target.vocabPath);
    if (!tgt)
      return tgt.takeError();
    model.targetVocab = std::move(*tgt);
  }
  if (Error err = checkSpecialTokens(d, model))
    return std::move(err);

  Expected<std::unique_ptr<SafeTensorsFile>> weights =
      SafeTensorsFile::open(d.weightsPath, weightCacheDir);
  if (!weights)
    return weights.takeError();
  model.weights = std::move(*weights);
  const SafeTensorsFile &file = *model.weights;

  if (Error err =
          checkEmbeddingRows(file, "encoder_embedding.weight", "source",
                             d.source.vocabPath, model.sourceVocab.size()))
    return std::move(err);
  if (!d.arch.encoderOnly())
    if (Error err =
            checkEmbeddingRows(file, "decoder_embedding.weight", "target",
                               d.target.vocabPath, model.targetVocab.size()))
      return std::move(err);

  auto fail = [&](const Twine &message) -> Error {
    return createStringError(inconvertibleErrorCode(),
                             file.path() + ": " + message);
  };
  std::vector<ExpectedTensor> expected = expectedTensors(
      d.arch, model.sourceVocab.size(), model.targetVocab.size());
  StringSet<> expectedNames;
  std::vector<StringRef> missing;
  for (const ExpectedTensor &e : expected) {
    expectedNames.insert(e.name);
    const TensorView *view = file.find(e.name);
    if (!view) {
      missing.push_back(e.name);
      continue;
    }
    if (view->shape != e.shape)
      return fail("tensor '" + e.name + "': expected shape " +
                  formatShape(e.shape) + ", got " + formatShape(view->shape));
  }
  if (!missing.empty()) {
    std::string more =
        missing.size() == 1
            ? ""
            : formatv(" (and {0} more)", missing.size() - 1).str();
    return fail("missing tensor '" + missing.front() + "'" + more);
  }
  for (const TensorView &view : file.tensors()) {
    // The scales of an expected I8 weight belong to it.
    StringRef name = view.name;
    if (name.consume_back("_scale") && expectedNames.contains(name))
      if (const TensorView *owner = file.find(name);
          owner && owner->dtype == "I8")
        continue;
    if (!expectedNames.contains(view.name))
      return fail("unexpected tensor '" + view.name + "'");
  }
  // A NaN or infinity in a weight would only show as garbage output.
  for (const TensorView &view : file.tensors())
    if (std::optional<int64_t> bad = firstNonFinite(view))
      return fail(formatv("tensor '{0}': element {1} is {2}", view.name, *bad,
                          std::isnan(view.data[*bad]) ? "NaN" : "infinite")
                      .str());
  if (Error err = checkMemory(d))
    return std::move(err);
  return model;
}

} // namespace tfmc::frontend
