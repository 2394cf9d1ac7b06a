//===- KeyValueType.h - storage of attention keys/values --------*- C++ -*-===//
//
// A decoder step reads every cached key and value of its batch: the self
// caches and the cross-attention keys/values of the source. At large
// batches those bytes, not the arithmetic, bound the attention kernels;
// stored as IEEE half (tfm-half-caches) they are half as many. Auto keeps
// what each compute type has always had (float16 under float16, bfloat16
// and int8; float32 under float32); Float32 and Float16 choose either for
// any compute type (docs/quantization.md, "Keys and values").
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_KEYVALUETYPE_H
#define RUNTIME_SESSION_KEYVALUETYPE_H

#include "frontends/model/ModelDescription.h"

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace tfmc::runtime {

enum class KeyValueType { Auto, Float32, Float16 };

llvm::StringRef stringifyKeyValueType(KeyValueType type);
/// "auto" (or ""), "float32" or "float16"; std::nullopt otherwise.
std::optional<KeyValueType> parseKeyValueType(llvm::StringRef name);
/// Whether keys and values are stored as float16 when the linear layers
/// compute in `compute`.
bool halfKeysValues(KeyValueType type, frontend::ComputeType compute);

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_KEYVALUETYPE_H
