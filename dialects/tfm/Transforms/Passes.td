//===- Passes.td - tfm-to-tfm passes -----------------------*- tablegen -*-===//
#ifndef DIALECTS_TFM_TRANSFORMS_PASSES_TD
#define DIALECTS_TFM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmLowerMultiHeadAttention
    : Pass<"tfm-lower-multi-head-attention", "func::FuncOp"> {
  let summary = "splits multi-head attention into projections and the fused attention core";
  let description = [{
    Rewrites every `tfm.multi_head_attention` into `tfm.linear` projections
    for queries, keys and values, `tfm.cache_write` of the new keys and
    values when the op carries a KV cache, one `tfm.attention` (scores,
    mask, online softmax and weighted values in a single kernel) and the
    output `tfm.linear`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TfmFuseResidualLayerNorm
    : Pass<"tfm-fuse-residual-layer-norm", "func::FuncOp"> {
  let summary = "fuses a residual addition into the layer norm that consumes it";
  let description = [{
    `tfm.layer_norm(tfm.add(x, y))` becomes `tfm.add_layer_norm(x, y)` when
    the sum has no other use, so the sum is never written to memory.
  }];
}

#endif // DIALECTS_TFM_TRANSFORMS_PASSES_TD
