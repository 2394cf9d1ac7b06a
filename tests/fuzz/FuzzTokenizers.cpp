//===- FuzzTokenizers.cpp - char/word tokenize and detokenize -------------===//
#include "FuzzSupport.h"

#include "runtime/tokenizers/Tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const auto vocab = *tfmc::frontend::Vocabulary::fromTokens(
      {"<pad>", "<s>", "</s>", "<unk>", "a", "b", "我", "你", ".", "'s", "\""},
      "v");
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  for (const char *kind : {"char", "word"}) {
    auto tokenizer = tfmc::runtime::Tokenizer::create(kind, vocab, 3, "");
    if (!tokenizer)
      std::abort();
    auto encoded = (*tokenizer)->tokenize(text);
    if (!encoded) {
      tfmc::fuzz::consume(encoded.takeError());
      continue;
    }
    for (int32_t id : encoded->ids)
      if (id < 0 || id >= vocab.size())
        std::abort();
    (void)(*tokenizer)->decode(encoded->ids, encoded->unknownSpans);
  }
  // Any id sequence detokenizes.
  std::vector<int32_t> ids;
  for (size_t i = 0; i < size; ++i)
    ids.push_back(data[i] % vocab.size());
  auto word = tfmc::runtime::Tokenizer::create("word", vocab, 3, "");
  (void)(*word)->decode(ids, {});
  return 0;
}
