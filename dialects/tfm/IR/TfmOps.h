//===- TfmOps.h - tfm operations --------------------------------*- C++ -*-===//
#ifndef DIALECTS_TFM_IR_TFMOPS_H
#define DIALECTS_TFM_IR_TFMOPS_H

#include "dialects/tfm/IR/TfmDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/tfm/IR/TfmOps.h.inc"

#include <string>

namespace mlir::tfm {

/// The name the model gives an op: the importer's NameLoc (the first of a
/// fused location), e.g. "decoder_layers.0.self_attention"; "" when none.
std::string modelNameOf(Operation *op);

/// How many projections a merged linear holds (tfm-merge-projections slices
/// its result once per part); 0 or 1 for a plain one.
int64_t mergedProjectionCount(LinearOp linear);

} // namespace mlir::tfm

#endif // DIALECTS_TFM_IR_TFMOPS_H
