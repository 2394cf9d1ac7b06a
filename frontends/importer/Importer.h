//===- Importer.h - model description -> tfm module -------------*- C++ -*-===//
//
// Builds the functions the runtime calls, in the `tfm` dialect:
//   encode(src_ids, src_lengths, positional_table, weights...)
//       -> (cross_key.L, cross_value.L for every decoder layer L)
//   decode_step(tokens, step, src_lengths, cross_rows, positional_table,
//               cross_key.L, cross_value.L..., self_key.L, self_value.L...,
//               weights...) -> logits [batch, 1, target vocab]
//       (cross_rows[b]: the row of cross_key/cross_value hypothesis b reads)
//   forward(src_ids, src_lengths, tgt_ids, tgt_lengths, positional_table,
//           weights...) -> logits [batch, target length, target vocab]
//   encode_states(src_ids, src_lengths, positional_table, weights...)
//       -> states [batch, source length, d_model] (the encoder output)
// Each layer is built from its block recipe (Architecture::layerRecipe).
// Weights are function arguments tagged `tfm.weight = "<tensor name>"`;
// inputs are tagged `tfm.input`, KV caches `tfm.cache`, results
// `tfm.output`. Batch and sequence dimensions are dynamic.
//
//===----------------------------------------------------------------------===//
#ifndef FRONTENDS_IMPORTER_IMPORTER_H
#define FRONTENDS_IMPORTER_IMPORTER_H

#include "dialects/tfm/IR/TfmDialect.h"
#include "frontends/model/ModelDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace tfmc::frontend {

/// Which functions to build. Encoder-only models (no decoder layers) have
/// only encode_states; the other three are skipped for them.
struct ImportOptions {
  bool encode = true;
  bool decodeStep = true;
  bool forward = true;
  bool encoderStates = false;
};

/// Attribute names on function arguments and results.
inline constexpr const char *kWeightAttr = mlir::tfm::kWeightArgAttr.data();
/// Added by tfm-quantize: the per-row scales of the named int8 weight.
inline constexpr const char *kWeightScaleAttr =
    mlir::tfm::kWeightScaleArgAttr.data();
inline constexpr const char *kInputAttr = mlir::tfm::kInputArgAttr.data();
inline constexpr const char *kCacheAttr = mlir::tfm::kCacheArgAttr.data();
inline constexpr const char *kOutputAttr =
    mlir::tfm::kOutputResultAttr.data();

/// The context must have the tfm, func, arith and tensor dialects loaded or
/// registered.
mlir::OwningOpRef<mlir::ModuleOp>
importModel(mlir::MLIRContext &context, const Architecture &arch,
            int64_t sourceVocabSize, int64_t targetVocabSize,
            const ImportOptions &options = {});

} // namespace tfmc::frontend

#endif // FRONTENDS_IMPORTER_IMPORTER_H
