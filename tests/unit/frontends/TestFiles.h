//===- TestFiles.h - temp dirs and tiny model files for tests ---*- C++ -*-===//
#ifndef TESTS_UNIT_FRONTENDS_TESTFILES_H
#define TESTS_UNIT_FRONTENDS_TESTFILES_H

#include "frontends/model/ModelDescription.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tfmc::frontend::test {

/// A fresh directory, removed with everything in it on destruction.
class TempDir {
public:
  TempDir();
  ~TempDir();
  const std::string &path() const { return dir; }
  /// `dir`/`name`.
  std::string file(llvm::StringRef name) const;
  /// Writes `contents` to `dir`/`name` (creating parent dirs); returns it.
  std::string write(llvm::StringRef name, llvm::StringRef contents) const;

private:
  std::string dir;
};

/// One tensor for the safetensors writer; `bytes` is the raw payload.
struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::string f32Bytes(llvm::ArrayRef<float> values);
std::string u16Bytes(llvm::ArrayRef<uint16_t> values);

/// A safetensors file: tensors laid out back to back in the given order,
/// with the header padded by `headerPadding` spaces.
std::string safeTensorsBytes(llvm::ArrayRef<RawTensor> tensors,
                             size_t headerPadding = 0,
                             const llvm::json::Object *metadata = nullptr);
/// A safetensors file from a raw header text and data section.
std::string safeTensorsRaw(llvm::StringRef header, llvm::StringRef data);

/// A valid model.json object for the tiny model written by writeTinyModel.
llvm::json::Object tinyDescription(llvm::StringRef norm = "post");
std::string toText(const llvm::json::Object &obj);

/// "tok0\ntok1\n...".
std::string vocabText(int64_t size, llvm::StringRef prefix);

struct TinyModelOptions {
  std::string norm = "post";
  int64_t srcVocab = 7, tgtVocab = 9;
  /// Edits the JSON description before it is written.
  std::function<void(llvm::json::Object &)> editDescription;
  /// Edits the tensor list before the weights are written.
  std::function<void(std::vector<RawTensor> &)> editTensors;
};

/// Writes model.json, src.vocab, tgt.vocab and model.safetensors (F32, value
/// of element k of the n-th tensor = n + k / 1000) into `dir`; returns the
/// model.json path.
std::string writeTinyModel(const TempDir &dir,
                           const TinyModelOptions &options = {});

/// The architecture of tinyDescription().
Architecture tinyArchitecture(NormPlacement norm = NormPlacement::Post);

} // namespace tfmc::frontend::test

#endif // TESTS_UNIT_FRONTENDS_TESTFILES_H
