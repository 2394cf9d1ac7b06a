//===- FuzzIdLine.cpp - --ids input lines ---------------------------------===//
#include "FuzzSupport.h"

#include "runtime/session/Translator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef line(reinterpret_cast<const char *>(data), size);
  auto ids = tfmc::runtime::parseIdLine(line, 1000);
  if (!ids) {
    tfmc::fuzz::consume(ids.takeError());
    return 0;
  }
  for (int32_t id : *ids)
    if (id < 0 || id >= 1000)
      std::abort();
  return 0;
}
