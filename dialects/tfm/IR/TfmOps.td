//===- TfmOps.td - tfm operations --------------------------*- tablegen -*-===//
#ifndef DIALECTS_TFM_IR_TFMOPS_TD
#define DIALECTS_TFM_IR_TFMOPS_TD

include "dialects/tfm/IR/TfmDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Activations are [batch, sequence, features]; weights keep the PyTorch
// nn.Linear layout [out, in].
def Tfm_Activations : 3DTensorOf<[F32]>;
def Tfm_Matrix : 2DTensorOf<[F32]>;
// A linear layer's weight: float32, IEEE half, bfloat16, or int8 with
// per-row scales.
def Tfm_LinearWeight : 2DTensorOf<[F32, F16, BF16, I8]>;
def Tfm_Vector : 1DTensorOf<[F32]>;
def Tfm_TokenIds : 2DTensorOf<[I32]>;
def Tfm_Lengths : 1DTensorOf<[I32]>;
// Keys/values kept for attention: float32, or IEEE half to halve the bytes
// each decoder step reads (see tfm-half-caches).
def Tfm_StoredKeys : 3DTensorOf<[F32, F16]>;
def Tfm_Cache : MemRefRankOf<[F32, F16], [3]>;
def Tfm_KeysOrCache : AnyTypeOf<[Tfm_StoredKeys, Tfm_Cache]>;

//===----------------------------------------------------------------------===//
// Embedding and positions
//===----------------------------------------------------------------------===//

def Tfm_EmbeddingOp : Tfm_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup with a constant scale";
  let description = [{
    `result[b, t, :] = table[ids[b, t], :] * scale`. Ids outside the table
    are clamped into it (the runtime rejects them before a call).

    ```mlir
    %e = tfm.embedding %ids, %table scale 8.0
        : (tensor<?x?xi32>, tensor<8000x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_TokenIds:$ids, Tfm_Matrix:$table, F32Attr:$scale);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $ids `,` $table `scale` $scale attr-dict `:`
    `(` type($ids) `,` type($table) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_PositionalEncodingOp : Tfm_Op<"positional_encoding",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "adds sinusoidal position vectors";
  let description = [{
    `result[b, t, :] = input[b, t, :] + table[offset + t, :]`, where `table`
    holds the sinusoidal encoding `pe[p, 2i] = sin(p / 10000^(2i/d))`,
    `pe[p, 2i+1] = cos(...)` (computed once in double precision by the
    runtime). `offset` (default 0) is the position of the first element,
    e.g. the decoding step.

    ```mlir
    %x = tfm.positional_encoding %e, %pe offset %step
        : tensor<?x?x64xf32>, tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input, Tfm_Matrix:$table,
                       Optional<Index>:$offset);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $input `,` $table (`offset` $offset^)? attr-dict `:`
    type($input) `,` type($table)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

def Tfm_LinearOp : Tfm_Op<"linear", [Pure]> {
  let summary = "y = act(x · Wᵀ + b)";
  let description = [{
    A fully connected layer over the last dimension with the weight in
    `[out, in]` layout and a fused activation (`none`, `relu`, `gelu` in
    its exact erf form, or `silu`, x · sigmoid(x)).

    ```mlir
    %h = tfm.linear relu %x, %w1, %b1
        : tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>
          -> tensor<?x?x128xf32>
    ```

    The weight may be stored in a smaller type (`tfm-quantize`); the
    arithmetic stays float32 unless said otherwise:
    * `f16`: IEEE half weights, widened to float32 in the kernel.
    * `bf16`: bfloat16 weights (the upper half of a float32) times the
      input rounded to bfloat16 (to nearest, ties to even; subnormal
      operands read as zeros), products summed in float32: what
      `vdpbf16ps` and AMX compute.
    * `i8`: symmetric per-output-row quantization, `W[n, k] ≈ scale[n] ·
      Wq[n, k]` with `Wq` in [-127, 127]; the `scale` operand (float32, one
      per output row) is required. The kernel quantizes each input row
      dynamically (symmetric, per row), multiplies in integers with int32
      accumulation and dequantizes with both scales before the bias and the
      activation.

    ```mlir
    %h = tfm.linear relu %x, %w1q, %b1 scale %s1
        : tensor<?x?x64xf32>, tensor<128x64xi8>, tensor<128xf32>,
          tensor<128xf32> -> tensor<?x?x128xf32>
    ```
  }];
  let arguments = (ins Tfm_Activation:$activation, Tfm_Activations:$input,
                       Tfm_LinearWeight:$weight, Tfm_Vector:$bias,
                       Optional<Tfm_Vector>:$scale);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $activation $input `,` $weight `,` $bias (`scale` $scale^)? attr-dict `:`
    type($input) `,` type($weight) `,` type($bias) (`,` type($scale)^)?
    `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Activation":$activation, "Value":$input,
                   "Value":$weight, "Value":$bias), [{
      build($_builder, $_state, result, activation, input, weight, bias,
            Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Tfm_LinearArgmaxOp : Tfm_Op<"linear_argmax", [Pure]> {
  let summary = "the best output of a linear layer per row, without the outputs";
  let description = [{
    Greedy decoding's last step fused into the output projection (see
    `tfm-greedy-head`): for each row b of the one-position input,

    `result[b] = the id n of the largest (x[b, 0] · W[n]ᵀ + bias[n])`

    over the allowed ids, scanning them in order: ids listed in `never`
    (ascending) are never chosen, nor `eos` where `allow_eos[b]` is 0; the
    first allowed id is taken, then an id replaces it only when its value
    is strictly greater (ties keep the lower id, a NaN never replaces, a
    first value that is NaN stays). -1 when no id is allowed. Each value is
    computed exactly as `tfm.linear` computes it on the same kernel path
    (an `i8` weight with its `scale` operand as `tfm.linear` takes them), so
    the choice is the one a search would make over `tfm.linear`'s logits;
    the `[rows, out]` values themselves are never stored.

    ```mlir
    %t = tfm.linear_argmax %h, %w, %b never %never eos %eos allow %allow
        : tensor<?x1x64xf32>, tensor<8000x64xf32>, tensor<8000xf32>,
          tensor<?xi32>, tensor<?xi32> -> tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input, 2DTensorOf<[F32, F16, BF16, I8]>:$weight,
                       Tfm_Vector:$bias, 1DTensorOf<[I32]>:$never,
                       Index:$eos, 1DTensorOf<[I32]>:$allow_eos,
                       Optional<Tfm_Vector>:$scale);
  let results = (outs 1DTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`scale` $scale^)? `never` $never `eos` $eos
    `allow` $allow_eos attr-dict `:` type($input) `,` type($weight) `,`
    type($bias) `,` type($never) `,` type($allow_eos) (`,` type($scale)^)?
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_LinearTopkOp : Tfm_Op<"linear_topk", [Pure]> {
  let summary = "each row's best log-probabilities of a linear layer, without the outputs";
  let description = [{
    Beam search's candidates fused into the output projection (see
    `tfm-beam-head`): for each row b of the one-position input, with
    `z[n] = x[b, 0] · W[n]ᵀ + bias[n]`, the `count` allowed ids of largest
    z[n] (ids in `never` never, `eos` only where `allow_eos[b]` is
    non-zero; ties: the lower id first) go to `ids[b, 0..count)`, best
    first, and `values[b, i] = z[ids[b, i]] - log Σₙ exp(z[n])` (float32,
    the sum over every id). Entries past the last allowed id hold id -1
    and value -inf. The sum is taken over fixed chunks of 256 ids, in the
    runtime's TopKScan, which a search over `tfm.linear`'s outputs uses
    too: each value is bit for bit what that search computes. The
    `[rows, out]` outputs themselves are never stored.

    ```mlir
    %v, %i = tfm.linear_topk %h, %w, %b never %never eos %eos allow %allow
        count %k : tensor<?x1x64xf32>, tensor<8000x64xf32>, tensor<8000xf32>,
                   tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input, 2DTensorOf<[F32, F16, BF16, I8]>:$weight,
                       Tfm_Vector:$bias, 1DTensorOf<[I32]>:$never,
                       Index:$eos, 1DTensorOf<[I32]>:$allow_eos, Index:$count,
                       Optional<Tfm_Vector>:$scale);
  let results = (outs 2DTensorOf<[F32]>:$values, 2DTensorOf<[I32]>:$ids);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`scale` $scale^)? `never` $never `eos` $eos
    `allow` $allow_eos `count` $count attr-dict `:` type($input) `,`
    type($weight) `,` type($bias) `,` type($never) `,` type($allow_eos)
    (`,` type($scale)^)? `->` type($values) `,` type($ids)
  }];
  let hasVerifier = 1;
}

def Tfm_SliceOp : Tfm_Op<"slice", [Pure]> {
  let summary = "a contiguous range of the features";
  let description = [{
    `result[b, t, i] = input[b, t, offset + i]` for `i < size(result, 2)`:
    splits the output of a merged projection.

    ```mlir
    %k = tfm.slice %qkv[512] : tensor<?x?x1536xf32> -> tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_NarrowOp : Tfm_Op<"narrow", [Pure]> {
  let summary = "rounds activations to IEEE half for storage";
  let description = [{
    `result[b, t, i] = half(input[b, t, i])`, rounding to nearest even
    (values beyond half's range become infinities). Produces keys/values
    that are stored between functions as float16 (tfm-half-caches).

    ```mlir
    %h = tfm.narrow %k : tensor<?x?x512xf32> -> tensor<?x?x512xf16>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input);
  let results = (outs 3DTensorOf<[F16]>:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_AddOp : Tfm_Op<"add", [Pure, SameOperandsAndResultType, Commutative]> {
  let summary = "residual addition";
  let description = [{
    Elementwise `lhs + rhs`.

    ```mlir
    %r = tfm.add %x, %y : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$lhs, Tfm_Activations:$rhs);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tfm_LayerNormOp : Tfm_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["weight", "bias"]>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * weight + bias` with the biased
    variance of each row.

    ```mlir
    %n = tfm.layer_norm %x, %g, %b eps 1.0e-05
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input, Tfm_Vector:$weight,
                       Tfm_Vector:$bias, F64Attr:$epsilon);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $epsilon attr-dict `:`
    type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Tfm_AddLayerNormOp : Tfm_Op<"add_layer_norm",
    [Pure, AllTypesMatch<["input", "residual", "result"]>,
     AllTypesMatch<["weight", "bias"]>]> {
  let summary = "fused residual addition and layer normalisation";
  let description = [{
    `layer_norm(input + residual)` in one pass over each row; produced by
    `tfm-fuse-residual-layer-norm`.

    ```mlir
    %n = tfm.add_layer_norm %x, %res, %g, %b eps 1.0e-05
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$input, Tfm_Activations:$residual,
                       Tfm_Vector:$weight, Tfm_Vector:$bias, F64Attr:$epsilon);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $weight `,` $bias `eps` $epsilon attr-dict `:`
    type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tfm_MultiHeadAttentionOp : Tfm_Op<"multi_head_attention",
    [AttrSizedOperandSegments, AllTypesMatch<["query", "result"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "multi-head attention with projections, mask and KV cache";
  let description = [{
    Projects `query` with the query weights and `key_value` with the key and
    value weights, splits the `d_model` columns into `heads` heads, computes
    `softmax(q · kᵀ / sqrt(d_head))` under the mask per head, weights the
    values, concatenates the heads and applies the output projection.

    Mask kinds: `none`; `padding` (key `j` of row `b` is hidden when
    `j >= key_lengths[b]`); `causal` (key `j` is hidden when it lies after
    the query's position, and, with `key_lengths`, past the row's length).

    With `cache(%k, %v) at %pos` (incremental decoding), the projected keys
    and values of `key_value` are written into the runtime-owned caches
    `[batch, capacity, d_model]` at positions `pos ..`, query `t` has
    position `pos + t`, and attention runs over cache entries
    `0 .. pos + len(key_value)`.

    ```mlir
    %a = tfm.multi_head_attention causal %x, %x
        weights(%wq, %bq, %wk, %bk, %wv, %bv, %wo, %bo) heads 8
        cache(%kc, %vc) at %step
        : (tensor<?x1x512xf32>, tensor<?x1x512xf32>, tensor<512x512xf32>,
           tensor<512xf32>, ..., memref<?x?x512xf32>, memref<?x?x512xf32>,
           index) -> tensor<?x1x512xf32>
    ```
  }];
  let arguments = (ins Tfm_MaskKind:$mask_kind, Tfm_Activations:$query,
                       Tfm_Activations:$key_value,
                       Tfm_Matrix:$query_weight, Tfm_Vector:$query_bias,
                       Tfm_Matrix:$key_weight, Tfm_Vector:$key_bias,
                       Tfm_Matrix:$value_weight, Tfm_Vector:$value_bias,
                       Tfm_Matrix:$output_weight, Tfm_Vector:$output_bias,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       Optional<Tfm_Lengths>:$key_lengths,
                       Optional<Tfm_Cache>:$key_cache,
                       Optional<Tfm_Cache>:$value_cache,
                       Optional<Index>:$cache_position);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $mask_kind $query `,` $key_value
    `weights` `(` $query_weight `,` $query_bias `,` $key_weight `,` $key_bias
    `,` $value_weight `,` $value_bias `,` $output_weight `,` $output_bias `)`
    `heads` $num_heads
    (`key_lengths` `(` $key_lengths^ `)`)?
    (`cache` `(` $key_cache^ `,` $value_cache `)`)?
    (`at` $cache_position^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_AttentionOp : Tfm_Op<"attention",
    [AttrSizedOperandSegments, AllTypesMatch<["query", "result"]>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "fused attention core: scores, mask, online softmax, values";
  let description = [{
    For every row `b`, head `h` and query `t`: the scores
    `scale * q[b, t, h] · k[b, j, h]` over the visible keys, their softmax
    and the weighted sum of `v[b, j, h]`, heads concatenated in order. The
    mask is an index test (no mask tensor): keys `j >= kv_length` are never
    visible; `padding` hides `j >= key_lengths[b]`; `causal` hides
    `j > query_offset + t`. A query with no visible key yields zeros.
    Keys and values are tensors or runtime-owned caches (memrefs) read in
    place. With `key_rows`, query row `b` attends to the keys and values of
    row `key_rows[b]` (clamped to the rows there are), so hypotheses of one
    source (beam search) share one copy of its encoder keys/values; without
    it, row `b` reads row `b`. The lowering computes the softmax online
    (running max and sum), so no `[batch, heads, q_len, k_len]` buffer ever
    exists.

    ```mlir
    %o = tfm.attention padding %q, %k, %v heads 8 scale 0.125
        key_lengths(%len)
        : (tensor<?x1x512xf32>, tensor<?x?x512xf32>, tensor<?x?x512xf32>,
           tensor<?xi32>) -> tensor<?x1x512xf32>
    ```
  }];
  let arguments = (ins Tfm_MaskKind:$mask_kind, Tfm_Activations:$query,
                       Tfm_KeysOrCache:$key, Tfm_KeysOrCache:$value,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       F32Attr:$scale,
                       Optional<Tfm_Lengths>:$key_lengths,
                       Optional<Tfm_Lengths>:$key_rows,
                       Optional<Index>:$query_offset,
                       Optional<Index>:$kv_length);
  let results = (outs Tfm_Activations:$result);
  let assemblyFormat = [{
    $mask_kind $query `,` $key `,` $value `heads` $num_heads `scale` $scale
    (`key_lengths` `(` $key_lengths^ `)`)?
    (`key_rows` `(` $key_rows^ `)`)?
    (`query_offset` `(` $query_offset^ `)`)?
    (`kv_length` `(` $kv_length^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_CacheWriteOp : Tfm_Op<"cache_write",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "writes new keys or values into a KV cache";
  let description = [{
    `cache[b, position + t, :] = value[b, t, :]` for every row and step of
    `value`, rounded to half when the cache holds float16. The cache is
    runtime-owned; its capacity bounds the positions.

    ```mlir
    tfm.cache_write %k, %cache[%step] : tensor<?x1x512xf32>, memref<?x?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_Activations:$value, Tfm_Cache:$cache,
                       Index:$position);
  let assemblyFormat = [{
    $value `,` $cache `[` $position `]` attr-dict `:`
    type($value) `,` type($cache)
  }];
  let hasVerifier = 1;
}

#endif // DIALECTS_TFM_IR_TFMOPS_TD
