//===- OpGraph.h - the fused graph as a picture -----------------*- C++ -*-===//
//
// `tfmc compile --emit=graph`: each function of a module drawn as a
// Graphviz graph, one node per `tfm` op (its kind, layer name, shapes,
// compute type, and what the fusion passes made of it), edges for values,
// the function's inputs and KV caches as separate nodes, its results as
// exit nodes. MLIR's own -view-op-graph draws every op (constants,
// tensor.dim, returns) with generic labels; this view keeps to the model's
// ops and names them as the model does (docs/ir-stages.md).
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_PIPELINES_OPGRAPH_H
#define COMPILER_PIPELINES_OPGRAPH_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tfm {

/// The module's functions as one DOT digraph (a cluster per function).
std::string printOpGraph(ModuleOp module);

/// The number of nodes printOpGraph draws for `tfm` ops: every op of the
/// tfm dialect in the module.
int64_t countTfmOps(ModuleOp module);

/// Renders DOT as SVG with Graphviz's `dot` (found on PATH). Fails with
/// a message when `dot` is not installed or fails.
llvm::Expected<std::string> renderSvg(llvm::StringRef dot);

} // namespace mlir::tfm

#endif // COMPILER_PIPELINES_OPGRAPH_H
