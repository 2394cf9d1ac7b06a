//===- Model.h - a loaded, cross-checked model ------------------*- C++ -*-===//
#ifndef FRONTENDS_MODEL_MODEL_H
#define FRONTENDS_MODEL_MODEL_H

#include "frontends/model/ModelDescription.h"
#include "frontends/model/SafeTensors.h"
#include "frontends/model/Vocabulary.h"

#include <memory>
#include <string>
#include <vector>

namespace tfmc::frontend {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

/// Every tensor the architecture needs, in a fixed canonical order
/// (encoder_embedding, decoder_embedding, encoder layers with the norms of
/// their recipe, encoder_norm if the encoder has a final norm, decoder
/// layers, decoder_norm likewise, linear; no decoder side when
/// encoder-only), with shapes.
std::vector<ExpectedTensor> expectedTensors(const Architecture &arch,
                                            int64_t srcVocabSize,
                                            int64_t tgtVocabSize);

struct Model {
  ModelDescription desc;
  Vocabulary sourceVocab, targetVocab;
  std::unique_ptr<SafeTensorsFile> weights;

  const TensorView &weight(llvm::StringRef name) const; // must exist
};

/// parseModelDescription + vocab files + weights, cross-checked: missing or
/// extra tensors, wrong shapes, vocab size != embedding rows, etc. With a
/// `weightCacheDir`, the float32 copies of float16/bfloat16 weights go
/// through the weight cache there (SafeTensorsFile::open).
llvm::Expected<Model> loadModel(llvm::StringRef jsonPath,
                                llvm::StringRef weightCacheDir = "");

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_MODEL_H
