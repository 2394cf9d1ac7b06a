//===- KeyValueType.cpp - how attention keys and values are stored --------===//
#include "runtime/session/KeyValueType.h"

#include "llvm/Support/ErrorHandling.h"

namespace tfmc::runtime {

llvm::StringRef stringifyKeyValueType(KeyValueType type) {
  switch (type) {
  case KeyValueType::Auto:
    return "auto";
  case KeyValueType::Float32:
    return "float32";
  case KeyValueType::Float16:
    return "float16";
  }
  llvm_unreachable("unknown key/value type");
}

std::optional<KeyValueType> parseKeyValueType(llvm::StringRef name) {
  if (name.empty())
    return KeyValueType::Auto;
  for (KeyValueType t :
       {KeyValueType::Auto, KeyValueType::Float32, KeyValueType::Float16})
    if (name == stringifyKeyValueType(t))
      return t;
  return std::nullopt;
}

bool halfKeysValues(KeyValueType type, frontend::ComputeType compute) {
  if (type == KeyValueType::Auto)
    return compute != frontend::ComputeType::Float32;
  return type == KeyValueType::Float16;
}

} // namespace tfmc::runtime
