//===- FuzzVocabulary.cpp - vocabulary files ------------------------------===//
#include "FuzzSupport.h"

#include "frontends/model/Vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = tfmc::fuzz::writeInput(data, size, ".vocab");
  auto vocab = tfmc::frontend::Vocabulary::load(path);
  if (!vocab)
    tfmc::fuzz::consume(vocab.takeError());
  return 0;
}
