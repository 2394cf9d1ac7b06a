//===- QuantizedModel.h - write a model with pre-quantized weights -*- C++ -*-===//
//
// `tfmc quantize`: a copy of a model whose linear-layer weights are stored
// as I8 + "_scale" tensors (docs/model-format.md, pre-quantized weights),
// quantized exactly as `--compute-type int8` does at load, and whose
// model.json names "compute_type": "int8". The vocabularies and
// SentencePiece models are copied beside it.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_IO_QUANTIZEDMODEL_H
#define RUNTIME_IO_QUANTIZEDMODEL_H

#include "frontends/model/Model.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace tfmc::runtime {

struct QuantizedModelSummary {
  int64_t quantizedTensors = 0;
  uint64_t bytesBefore = 0, bytesAfter = 0;
};

/// Whether `name` (a tensor of `model`) is a linear layer's weight that
/// int8 compute stores quantized: a matrix named "….weight" other than the
/// embeddings, the output projection only with `outputProjection`.
bool isQuantizableWeight(const frontend::TensorView &tensor,
                         bool outputProjection);

/// Writes DIR/model.json, DIR/model.safetensors and copies of the
/// vocabulary and SentencePiece files; DIR is created if needed and must
/// not be the model's own directory.
llvm::Expected<QuantizedModelSummary>
writeQuantizedModel(const frontend::Model &model, llvm::StringRef dir,
                    bool outputProjection);

} // namespace tfmc::runtime

#endif // RUNTIME_IO_QUANTIZEDMODEL_H
