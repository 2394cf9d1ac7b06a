//===- TestFiles.cpp - temp dirs and tiny model files for tests -----------===//

#include "TestFiles.h"

#include "frontends/model/Model.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>

using namespace llvm;

namespace tfmc::frontend::test {

TempDir::TempDir() {
  SmallString<128> out;
  if (std::error_code ec = sys::fs::createUniqueDirectory("tfm-frontend", out))
    report_fatal_error(Twine("cannot create temp dir: ") + ec.message());
  dir = out.str().str();
}

TempDir::~TempDir() { sys::fs::remove_directories(dir); }

std::string TempDir::file(StringRef name) const {
  SmallString<128> out(dir);
  sys::path::append(out, name);
  return out.str().str();
}

std::string TempDir::write(StringRef name, StringRef contents) const {
  std::string path = file(name);
  sys::fs::create_directories(sys::path::parent_path(path));
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    report_fatal_error(Twine("cannot write ") + path + ": " + ec.message());
  os << contents;
  return path;
}

std::string f32Bytes(ArrayRef<float> values) {
  std::string out(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    support::endian::write32le(&out[4 * i], bits);
  }
  return out;
}

std::string u16Bytes(ArrayRef<uint16_t> values) {
  std::string out(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i)
    support::endian::write16le(&out[2 * i], values[i]);
  return out;
}

std::string safeTensorsRaw(StringRef header, StringRef data) {
  std::string out(8, '\0');
  support::endian::write64le(&out[0], header.size());
  out += header;
  out += data;
  return out;
}

std::string safeTensorsBytes(ArrayRef<RawTensor> tensors, size_t headerPadding,
                             const json::Object *metadata) {
  json::Object header;
  std::string data;
  for (const RawTensor &t : tensors) {
    json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    header[t.name] = json::Object{
        {"dtype", t.dtype},
        {"shape", std::move(shape)},
        {"data_offsets", json::Array{int64_t(data.size()),
                                     int64_t(data.size() + t.bytes.size())}}};
    data += t.bytes;
  }
  if (metadata)
    header["__metadata__"] = json::Object(*metadata);
  std::string text = toText(header) + std::string(headerPadding, ' ');
  return safeTensorsRaw(text, data);
}

std::string toText(const json::Object &obj) {
  return formatv("{0}", json::Value(json::Object(obj))).str();
}

std::string vocabText(int64_t size, StringRef prefix) {
  std::string out;
  for (int64_t i = 0; i < size; ++i)
    out += (prefix + Twine(i) + "\n").str();
  return out;
}

json::Object tinyDescription(StringRef norm) {
  return json::Object{
      {"format", "tfm-model"},
      {"version", 1},
      {"architecture", json::Object{{"d_model", 4},
                                    {"num_heads", 2},
                                    {"num_encoder_layers", 1},
                                    {"num_decoder_layers", 2},
                                    {"d_ff", 8},
                                    {"max_len", 16},
                                    {"activation", "relu"},
                                    {"norm", norm},
                                    {"layer_norm_eps", 1e-5},
                                    {"embedding_scale", false},
                                    {"positional_encoding", "sinusoidal"}}},
      {"source", json::Object{{"vocab", "src.vocab"}, {"tokenizer", "char"}}},
      {"target", json::Object{{"vocab", "tgt.vocab"}, {"tokenizer", "word"}}},
      {"special_tokens",
       json::Object{{"pad", 0}, {"bos", 1}, {"eos", 2}, {"unk", 3}}},
      {"weights", "model.safetensors"}};
}

Architecture tinyArchitecture(NormPlacement norm) {
  Architecture arch;
  arch.dModel = 4;
  arch.numHeads = 2;
  arch.numEncoderLayers = 1;
  arch.numDecoderLayers = 2;
  arch.dFF = 8;
  arch.maxLen = 16;
  arch.norm = norm;
  return arch;
}

std::string writeTinyModel(const TempDir &dir,
                           const TinyModelOptions &options) {
  json::Object desc = tinyDescription(options.norm);
  if (options.editDescription)
    options.editDescription(desc);
  std::string jsonPath = dir.write("model.json", toText(desc));
  dir.write("src.vocab", vocabText(options.srcVocab, "s"));
  dir.write("tgt.vocab", vocabText(options.tgtVocab, "t"));

  // The weights follow the (edited) description when it parses (recipes,
  // encoder-only), else the tiny architecture.
  NormPlacement norm =
      options.norm == "pre" ? NormPlacement::Pre : NormPlacement::Post;
  Architecture arch = tinyArchitecture(norm);
  Expected<ModelDescription> parsed =
      parseModelDescriptionFromString(toText(desc), jsonPath);
  if (parsed)
    arch = parsed->arch;
  else
    consumeError(parsed.takeError());
  std::vector<RawTensor> tensors;
  for (const ExpectedTensor &e :
       expectedTensors(arch, options.srcVocab, options.tgtVocab)) {
    int64_t n = 1;
    for (int64_t d : e.shape)
      n *= d;
    std::vector<float> values(n);
    for (int64_t k = 0; k < n; ++k)
      values[k] = float(tensors.size()) + float(k) / 1000.0f;
    tensors.push_back({e.name, "F32", e.shape, f32Bytes(values)});
  }
  if (options.editTensors)
    options.editTensors(tensors);
  dir.write("model.safetensors", safeTensorsBytes(tensors));
  return jsonPath;
}

} // namespace tfmc::frontend::test
