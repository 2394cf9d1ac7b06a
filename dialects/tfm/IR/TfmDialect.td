//===- TfmDialect.td - the tfm dialect ---------------------*- tablegen -*-===//
//
// Building blocks of encoder-decoder translation Transformers.
//
//===----------------------------------------------------------------------===//
#ifndef DIALECTS_TFM_IR_TFMDIALECT_TD
#define DIALECTS_TFM_IR_TFMDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let summary = "encoder-decoder translation Transformer building blocks";
  let description = [{
    The `tfm` dialect models the blocks of the classic "Attention Is All You
    Need" translation Transformer on tensors: token embedding, sinusoidal
    positional encoding, linear layers with a fused activation, multi-head
    attention with an explicit mask kind and an optional KV cache, layer
    normalisation and residual additions. Weights are function arguments;
    the KV cache is runtime-owned state passed as memrefs.

    After `tfm` fusion the graph holds one op per fused kernel
    (`tfm.attention`, `tfm.linear` with activation, `tfm.add_layer_norm`),
    which `tfm-to-loops` lowers to buffers and loops.
  }];
  let cppNamespace = "::mlir::tfm";
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def Tfm_Activation : I32EnumAttr<"Activation", "activation after a linear layer", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"gelu", 2>,  // exact erf form
    I32EnumAttrCase<"silu", 3>   // x * sigmoid(x) ("swish")
  ]> {
  let cppNamespace = "::mlir::tfm";
}

def Tfm_MaskKind : I32EnumAttr<"MaskKind", "which keys an attention query may see", [
    // Every key is visible.
    I32EnumAttrCase<"none", 0>,
    // Key j of row b is hidden when j >= key_lengths[b].
    I32EnumAttrCase<"padding", 1>,
    // Key j is hidden when j > the query's position; with key_lengths also
    // when j >= key_lengths[b].
    I32EnumAttrCase<"causal", 2>
  ]> {
  let cppNamespace = "::mlir::tfm";
}

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

#endif // DIALECTS_TFM_IR_TFMDIALECT_TD
