//===- FunctionBuffers.h - the entry functions' own buffers -----*- C++ -*-===//
//
// Internal to compiler/Conversion/TfmToLoops: after the conversion, where
// the buffers of op results live in an entry function (tfm-to-loops runs
// forwardResults, then freeBuffers).
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_CONVERSION_TFMTOLOOPS_FUNCTIONBUFFERS_H
#define COMPILER_CONVERSION_TFMTOLOOPS_FUNCTIONBUFFERS_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tfm::loops {

/// A result computed into a buffer of the function's own and then copied
/// into its destination argument (the return's copies) is computed in the
/// destination instead, where the buffer has the destination's type and
/// every use of it (through memref.cast views) comes before the copy: the
/// copy and the buffer go. (The copy already took both to have one shape.)
/// The encoder's cross-attention keys and values of every decoder layer
/// were such copies: 48 MB at a batch of 64 base-model sentences, and the
/// buffers they came from.
void forwardResults(ModuleOp module);

/// Frees every buffer allocated by the lowering right after its last use in
/// the block that allocated it (uses through memref.cast views count), so a
/// function's peak memory is its live intermediate buffers, not all of them.
/// Lowered tfm ops sit directly in function bodies, so every use lies in
/// (or is nested in an op of) that block.
void freeBuffers(ModuleOp module);

} // namespace mlir::tfm::loops

#endif // COMPILER_CONVERSION_TFMTOLOOPS_FUNCTIONBUFFERS_H
