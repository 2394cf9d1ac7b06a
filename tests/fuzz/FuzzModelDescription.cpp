//===- FuzzModelDescription.cpp - model.json parser -----------------------===//
#include "FuzzSupport.h"

#include "frontends/model/ModelDescription.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto desc = tfmc::frontend::parseModelDescriptionFromString(text, "m.json");
  if (!desc)
    tfmc::fuzz::consume(desc.takeError());
  return 0;
}
