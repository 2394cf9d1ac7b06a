//===- Vocabulary.cpp - one token per line, line index = id ---------------===//

#include "frontends/model/Vocabulary.h"
#include "frontends/model/FileSupport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace tfmc::frontend {

Expected<Vocabulary> Vocabulary::fromTokens(std::vector<std::string> tokens,
                                            StringRef origin) {
  auto fail = [&](size_t id, const Twine &message) -> Error {
    return createStringError(inconvertibleErrorCode(), origin + ": line " +
                                                           Twine(id + 1) +
                                                           ": " + message);
  };
  if (tokens.empty())
    return createStringError(inconvertibleErrorCode(),
                             origin + ": vocabulary is empty");
  Vocabulary vocab;
  for (size_t id = 0; id < tokens.size(); ++id) {
    StringRef token = tokens[id];
    size_t badOffset = 0;
    if (!json::isUTF8(token, &badOffset))
      return fail(id,
                  formatv("invalid UTF-8 at byte {0}", badOffset + 1).str());
    if (token.empty())
      return fail(id, "empty token");
    auto [it, inserted] = vocab.index.try_emplace(token, id);
    if (!inserted)
      return fail(id, formatv("duplicate token \"{0}\" (first on line {1})",
                              token, it->second + 1)
                          .str());
  }
  vocab.tokens = std::move(tokens);
  return vocab;
}

Expected<Vocabulary> Vocabulary::load(StringRef path) {
  auto buffer = openFile(path);
  if (!buffer)
    return buffer.takeError();
  StringRef text = (*buffer)->getBuffer();
  // A UTF-8 byte order mark is not part of the first token.
  text.consume_front("\xEF\xBB\xBF");
  std::vector<std::string> tokens;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    line.consume_back("\r");
    tokens.push_back(line.str());
    text = rest;
  }
  return fromTokens(std::move(tokens), path);
}

std::optional<int64_t> Vocabulary::lookup(StringRef token) const {
  auto it = index.find(token);
  if (it == index.end())
    return std::nullopt;
  return it->second;
}

} // namespace tfmc::frontend
