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

def TfmMergeProjections : Pass<"tfm-merge-projections", "func::FuncOp"> {
  let summary = "merges linear layers that read the same input into one";
  let description = [{
    Linear layers without activation that read the same input of one
    position per row (`[rows, 1, d]`: a decoder step's) and whose weights
    and biases are function arguments (`tfm.weight`) become one
    `tfm.linear` over a packed weight — a new argument named
    `"w1|w2|..."`, the parts' rows concatenated, which the runtime builds
    once at load — followed by `tfm.slice`s. This merges the query, key and
    value projections of the decoder's self-attention into one matmul: one
    pass over the three weights for the step's few rows. Inputs of many
    positions per row (the encoder's) are left alone: there the slices
    would copy the merged output again, which costs more than reading the
    input once per projection. Arguments left unused are removed.
  }];
}

def TfmQuantize : Pass<"tfm-quantize", "func::FuncOp"> {
  let summary = "stores linear-layer weights as int8 (with scales), float16 or bfloat16";
  let description = [{
    Every `tfm.linear` whose weight is a function argument (`tfm.weight`)
    used only as linear weights gets that argument's element type changed:
    `i8` adds a float32 argument of one scale per output row, tagged
    `tfm.weight_scale` with the weight's name, passed to the linears as
    their `scale` operand; `f16` and `bf16` change the type only. The runtime
    quantizes (or converts) the float32 weights once at load, or takes
    pre-quantized int8 tensors from the weights file. The output projection
    (`linear.weight`) is included unless `output-projection=false`.
    Embedding tables stay float32: a lookup reads one row per token.
  }];
  let options = [
    Option<"computeType", "compute-type", "std::string", "\"int8\"",
           "the weights' storage type: int8 (the default), float16 or "
           "bfloat16">,
    Option<"outputProjection", "output-projection", "bool", "true",
           "also quantize the output projection (linear.weight)">,
  ];
}

def TfmHalfCaches : Pass<"tfm-half-caches", "ModuleOp"> {
  let summary = "keeps attention keys and values in float16";
  let description = [{
    A decoder step reads every cached key and value of its batch: at large
    batches that traffic, not arithmetic, bounds the attention kernels.
    This pass halves it. Every function argument whose uses are all
    key/value operands of `tfm.attention` (and, for a runtime-owned cache
    tagged `tfm.cache`, `tfm.cache_write`) becomes float16; a function
    result tagged `tfm.output` with the name of such an input (the encoder's
    cross-attention keys/values, which the runtime hands to `decode_step`)
    is rounded with `tfm.narrow` and becomes float16 too. Attention widens
    keys and values as it loads them; `tfm.cache_write` rounds what it
    stores. Queries, scores and sums stay float32. Part of the fused stage
    when keys and values are float16 (`--kv-type`: by default for the
    float16, bfloat16 and int8 compute types).
  }];
}

def TfmGreedyHead : Pass<"tfm-greedy-head", "ModuleOp"> {
  let summary = "adds decode_greedy: decode_step ending in the chosen tokens";
  let description = [{
    Greedy search reads one number per row from a decoder step's
    `[rows, 1, vocab]` logits: the id of the largest allowed one. This pass
    adds a function `decode_greedy`, a copy of `decode_step` whose output
    projection (the `tfm.linear` without activation whose result the step
    returns, with a float32, float16, bfloat16 or int8 weight, the last
    with its scale) becomes a
    `tfm.linear_argmax` returning the chosen id per row (`best_tokens`),
    so the logits are never written and not read again. Its three extra
    inputs say which ids are allowed: `never_ids` (ascending), `eos_id`,
    and `allow_eos` per row (0 while a row is shorter than the minimum
    length). `decode_step` stays for beam search and for greedy search
    with repetition guards, which need the logits. Nothing is added when
    there is no `decode_step` or its result is not such a projection (an
    int8 output projection). Part of the fused stage.
  }];
}

def TfmBeamHead : Pass<"tfm-beam-head", "ModuleOp"> {
  let summary = "adds decode_beam: decode_step ending in each row's best candidates";
  let description = [{
    Beam search reads, per hypothesis, the log-probabilities of its 2K best
    allowed ids from a decoder step's `[rows, 1, vocab]` logits. This pass
    adds a function `decode_beam`, a copy of `decode_step` whose output
    projection (as for `tfm-greedy-head`) becomes a `tfm.linear_topk`
    returning, per row, the `candidates` best allowed ids (`top_ids`) and
    their log-probabilities (`top_values`), so the logits are never
    written and not read again. Its inputs: `never_ids`, `eos_id`,
    `allow_eos` (as for decode_greedy) and `candidates` (2K). Beam search
    with repetition guards keeps `decode_step`. Nothing is added when
    there is no `decode_step` or its result is not such a projection.
    Part of the fused stage.
  }];
}

def TfmInstrumentProfile : Pass<"tfm-instrument-profile", "ModuleOp"> {
  let summary = "brackets every tfm op with calls of the runtime's profiler";
  let description = [{
    The profiled variant of a model (`tfmc profile`, `profile=True` in the
    APIs): every `tfm` op of every function with a body is preceded by
    `call @tfm_rt_profile_enter(id)` and followed by
    `call @tfm_rt_profile_exit(id, batch, rows, keys)`, where `rows` is
    batch x sequence of the op's result (of the written value for
    `tfm.cache_write`) and `keys` the key length an attention op reads (its
    `kv_length`, else the keys' sequence extent; 0 for other ops). The
    function body as a whole is bracketed the same way. The runtime reads a
    cycle counter in both calls and adds up calls, cycles and the dynamic
    extents per id.

    Ids index the module attribute `tfm.profile`, written by this pass: one
    dictionary per id with the function, the op's kind and name (its
    location, as `--emit=graph` shows it), a one-line description, and the
    coefficients of its cost per call, `flop = flop_rows * rows +
    flop_row_keys * rows * keys` and `bytes = bytes_call + bytes_rows * rows
    + bytes_row_keys * rows * keys + bytes_batch_keys * batch * keys`
    (docs/profile.md). Runs first in the fused -> loops lowering, only for
    the profiled variant; the plain pipeline never sees it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // DIALECTS_TFM_TRANSFORMS_PASSES_TD
