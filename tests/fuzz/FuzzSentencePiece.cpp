//===- FuzzSentencePiece.cpp - SentencePiece model loading ----------------===//
#include "FuzzSupport.h"

#include "runtime/tokenizers/Tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = tfmc::fuzz::writeInput(data, size, ".spm");
  static const auto vocab = *tfmc::frontend::Vocabulary::fromTokens(
      {"<pad>", "<s>", "</s>", "<unk>", "a", "b"}, "v");
  auto tokenizer =
      tfmc::runtime::Tokenizer::create("sentencepiece", vocab, 3, path);
  if (!tokenizer) {
    tfmc::fuzz::consume(tokenizer.takeError());
    return 0;
  }
  auto encoded = (*tokenizer)->tokenize("ab ba");
  if (!encoded)
    tfmc::fuzz::consume(encoded.takeError());
  return 0;
}
