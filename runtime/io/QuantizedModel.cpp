//===- QuantizedModel.cpp - write a model with pre-quantized weights ------===//
#include "runtime/io/QuantizedModel.h"

#include "frontends/model/FileSupport.h"
#include "frontends/model/Float16.h"
#include "frontends/model/SafeTensorsWriter.h"
#include "runtime/kernels/Quantize.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <deque>

using namespace llvm;
using namespace tfmc;
using namespace tfmc::runtime;

static Error error(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

bool tfmc::runtime::isQuantizableWeight(const frontend::TensorView &tensor,
                                        bool outputProjection) {
  StringRef name = tensor.name;
  if (tensor.shape.size() != 2 || !name.ends_with(".weight"))
    return false;
  // Tables that are looked up, not multiplied: int8 compute keeps them
  // float (a converted model's position tables went int8 here, and its
  // translations differed from --compute-type int8 on the float file).
  if (name == "encoder_embedding.weight" ||
      name == "decoder_embedding.weight" ||
      name == "encoder_positions.weight" || name == "decoder_positions.weight")
    return false;
  return outputProjection || name != "linear.weight";
}

/// Copies `from` to DIR/`name`, returning `name` (for model.json).
static Expected<std::string> copyBeside(StringRef from, StringRef dir,
                                        StringRef name) {
  SmallString<256> to(dir);
  sys::path::append(to, name);
  // A file already in DIR (a vocabulary there, the model elsewhere) stays:
  // copying a file onto itself truncates it first.
  bool same = false;
  if (!sys::fs::equivalent(from, to, same) && same)
    return name.str();
  if (std::error_code ec = sys::fs::copy_file(from, to))
    return error(formatv("cannot copy '{0}' to '{1}': {2}", from, to,
                         ec.message()));
  return name.str();
}

Expected<QuantizedModelSummary>
tfmc::runtime::writeQuantizedModel(const frontend::Model &model,
                                   StringRef dir, bool outputProjection) {
  if (std::error_code ec = sys::fs::create_directories(dir))
    return error(formatv("{0}: cannot create directory: {1}", dir,
                         ec.message()));
  SmallString<256> real, source;
  if (!sys::fs::real_path(dir, real) &&
      !sys::fs::real_path(model.desc.directory, source) && real == source)
    return error(formatv("{0}: the output directory is the model's own; "
                         "choose another",
                         dir));

  QuantizedModelSummary summary;
  std::deque<std::vector<char>> storage; // stable addresses for the writer
  std::vector<frontend::TensorBytes> tensors;
  auto bytesOf = [&](const void *data, size_t size) {
    storage.emplace_back(static_cast<const char *>(data),
                         static_cast<const char *>(data) + size);
    return ArrayRef<char>(storage.back());
  };
  const frontend::SafeTensorsFile &file = *model.weights;
  for (const frontend::TensorView &view : file.tensors()) {
    // The scales of pre-quantized weights travel with their weight.
    StringRef name = view.name;
    if (name.consume_back("_scale"))
      if (const frontend::TensorView *owner = file.find(name);
          owner && owner->dtype == "I8")
        continue;
    int64_t n = view.numElements();
    summary.bytesBefore += view.dtype == "F32"   ? 4 * n
                           : view.dtype == "I8" ? n + 4 * view.shape[0]
                                                : 2 * n;
    if (view.int8 || isQuantizableWeight(view, outputProjection)) {
      int64_t rows = view.shape[0], cols = view.shape[1];
      QuantizedMatrix q;
      if (view.int8) {
        q.values.assign(view.int8, view.int8 + n);
        q.scales.assign(view.int8Scales, view.int8Scales + rows);
      } else {
        q = quantizeRows(view.data, rows, cols);
      }
      tensors.push_back({view.name, "I8", view.shape,
                         bytesOf(q.values.data(), q.values.size())});
      tensors.push_back({view.name + "_scale", "F32", {rows},
                         bytesOf(q.scales.data(), 4 * q.scales.size())});
      ++summary.quantizedTensors;
      continue;
    }
    if (view.dtype == "F16") {
      // Halves widen exactly, so narrowing gives the stored bits back.
      std::vector<uint16_t> halves(n);
      for (int64_t i = 0; i < n; ++i)
        halves[i] = tfmc::floatToHalf(view.data[i]);
      tensors.push_back({view.name, "F16", view.shape,
                         bytesOf(halves.data(), 2 * halves.size())});
    } else {
      tensors.push_back(
          {view.name, "F32", view.shape, bytesOf(view.data, 4 * n)});
    }
  }
  for (const frontend::TensorBytes &t : tensors)
    summary.bytesAfter += t.bytes.size();
  SmallString<256> weights(dir);
  sys::path::append(weights, "model.safetensors");
  if (Error e = frontend::writeSafeTensors(weights, tensors))
    return std::move(e);

  // model.json: the original, with the weights, compute type and copied
  // vocabulary/SentencePiece files.
  auto text = frontend::openFile(model.desc.jsonPath);
  if (!text)
    return text.takeError();
  Expected<json::Value> root = json::parse((*text)->getBuffer());
  if (!root)
    return root.takeError();
  json::Object &top = *root->getAsObject();
  top["weights"] = "model.safetensors";
  top["compute_type"] = "int8";
  struct Side {
    const char *key;
    const frontend::SideSpec &spec;
  };
  for (Side side : {Side{"source", model.desc.source},
                    Side{"target", model.desc.target}}) {
    json::Object *o = top.getObject(side.key);
    if (!o)
      continue;
    auto vocab = copyBeside(side.spec.vocabPath, dir,
                            std::string(side.key) + ".vocab");
    if (!vocab)
      return vocab.takeError();
    (*o)["vocab"] = *vocab;
    if (!side.spec.spmModelPath.empty()) {
      auto spm = copyBeside(side.spec.spmModelPath, dir,
                            std::string(side.key) + ".spm");
      if (!spm)
        return spm.takeError();
      (*o)["model"] = *spm;
    }
  }
  SmallString<256> json(dir);
  sys::path::append(json, "model.json");
  std::error_code ec;
  raw_fd_ostream out(json, ec);
  if (ec)
    return error(formatv("{0}: cannot write: {1}", json, ec.message()));
  out << formatv("{0:2}", json::Value(std::move(top))) << "\n";
  out.close();
  if (std::error_code ec = frontend::takeWriteError(out))
    return error(formatv("{0}: cannot write: {1}", json, ec.message()));
  return summary;
}
