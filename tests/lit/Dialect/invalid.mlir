// RUN: tfm-opt %s -split-input-file -verify-diagnostics

func.func @embedding_width(%ids: tensor<?x?xi32>, %t: tensor<40x8xf32>) {
  // expected-error @+1 {{result width 16 does not match the table width 8}}
  %e = tfm.embedding %ids, %t scale 1.0 : (tensor<?x?xi32>, tensor<40x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @embedding_rows(%ids: tensor<2x3xi32>, %t: tensor<40x8xf32>) {
  // expected-error @+1 {{result rows must match the ids shape}}
  %e = tfm.embedding %ids, %t scale 1.0 : (tensor<2x3xi32>, tensor<40x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @positional_width(%x: tensor<?x?x8xf32>, %pe: tensor<64x4xf32>) {
  // expected-error @+1 {{table width 4 does not match the input width 8}}
  %p = tfm.positional_encoding %x, %pe : tensor<?x?x8xf32>, tensor<64x4xf32>
  return
}

// -----

func.func @linear_in(%x: tensor<?x?x8xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{linear weight has 4 input features, expected 8}}
  %y = tfm.linear none %x, %w, %b : tensor<?x?x8xf32>, tensor<16x4xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_out(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{linear weight has 16 output features, expected 12}}
  %y = tfm.linear none %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x12xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<15xf32>) {
  // expected-error @+1 {{linear bias has 15 elements, expected 16}}
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<15xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_rows(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{result rows must match the input rows}}
  %y = tfm.linear relu %x, %w, %b : tensor<2x3x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<2x5x16xf32>
  return
}

// -----

func.func @norm_width(%x: tensor<?x?x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{weight has 4 elements, expected 8}}
  %n = tfm.layer_norm %x, %g, %g eps 1.0e-5 : tensor<?x?x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be positive}}
  %n = tfm.add_layer_norm %x, %x, %g, %g eps 0.0 : tensor<?x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @norm_eps_inf(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{epsilon must be positive and finite}}
  %n = tfm.layer_norm %x, %g, %g eps 0x7FF0000000000000 : tensor<?x?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @mha_heads(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{heads (3) must divide the model dimension (8)}}
  %a = tfm.multi_head_attention none %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 3
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_padding_needs_lengths(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{padding mask requires key_lengths}}
  %a = tfm.multi_head_attention padding %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_lengths_without_mask(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %l: tensor<?xi32>) {
  // expected-error @+1 {{key_lengths given but the mask kind is none}}
  %a = tfm.multi_head_attention none %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 key_lengths(%l)
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_lengths_rows(%x: tensor<2x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %l: tensor<3xi32>) {
  // expected-error @+1 {{key_lengths has 3 rows, expected 2}}
  %a = tfm.multi_head_attention padding %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 key_lengths(%l)
      : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<3xi32>) -> tensor<2x?x8xf32>
  return
}

// -----

func.func @mha_kv_width(%x: tensor<?x?x8xf32>, %m: tensor<?x?x4xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{key_value width 4 does not match the query width 8}}
  %a = tfm.multi_head_attention none %x, %m weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2
      : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_kv_batch(%x: tensor<2x?x8xf32>, %m: tensor<3x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{query and key_value batch sizes differ}}
  %a = tfm.multi_head_attention none %x, %m weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2
      : (tensor<2x?x8xf32>, tensor<3x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  return
}

// -----

func.func @mha_weight(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8x4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{value weight has 4 input features, expected 8}}
  %a = tfm.multi_head_attention none %x, %x weights(%w, %b, %w, %b, %v, %b, %w, %b) heads 2
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_cache_width(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %c: memref<?x?x4xf32>, %s: index) {
  // expected-error @+1 {{cache width 4 does not match the model width 8}}
  %a = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 cache(%c, %c) at %s
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, memref<?x?x4xf32>, memref<?x?x4xf32>, index) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_cache_types(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %c: memref<?x?x8xf32>, %d: memref<2x?x8xf32>, %s: index) {
  // expected-error @+1 {{key and value caches must have the same type}}
  %a = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 cache(%c, %d) at %s
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, memref<?x?x8xf32>, memref<2x?x8xf32>, index) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @mha_cache_needs_position(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %c: memref<?x?x8xf32>) {
  // expected-error @+1 {{a cache needs both caches and a position}}
  %a = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 cache(%c, %c)
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @attention_dynamic_width(%q: tensor<?x?x?xf32>) {
  // expected-error @+1 {{model dimension must be static}}
  %o = tfm.attention none %q, %q, %q heads 2 scale 1.0 : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return
}

// -----

func.func @attention_kv_width(%q: tensor<?x?x8xf32>, %k: tensor<?x?x4xf32>) {
  // expected-error @+1 {{key/value width 4 does not match the query width 8}}
  %o = tfm.attention none %q, %k, %k heads 2 scale 1.0 : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @attention_kv_lengths(%q: tensor<?x?x8xf32>, %k: tensor<?x5x8xf32>, %v: tensor<?x6x8xf32>) {
  // expected-error @+1 {{keys and values have different lengths}}
  %o = tfm.attention none %q, %k, %v heads 2 scale 1.0 : (tensor<?x?x8xf32>, tensor<?x5x8xf32>, tensor<?x6x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x?x8xf32>, %k: tensor<3x?x8xf32>) {
  // expected-error @+1 {{query and key/value batch sizes differ}}
  %o = tfm.attention none %q, %k, %k heads 2 scale 1.0 : (tensor<2x?x8xf32>, tensor<3x?x8xf32>, tensor<3x?x8xf32>) -> tensor<2x?x8xf32>
  return
}

// -----

func.func @attention_key_rows_count(%q: tensor<2x1x8xf32>, %k: tensor<3x?x8xf32>, %l: tensor<2xi32>, %r: tensor<4xi32>) {
  // expected-error @+1 {{key_rows has 4 rows, expected 2}}
  %o = tfm.attention padding %q, %k, %k heads 2 scale 1.0 key_lengths(%l) key_rows(%r) : (tensor<2x1x8xf32>, tensor<3x?x8xf32>, tensor<3x?x8xf32>, tensor<2xi32>, tensor<4xi32>) -> tensor<2x1x8xf32>
  return
}

// -----

func.func @attention_key_rows_kv(%q: tensor<2x1x8xf32>, %k: tensor<3x?x8xf32>, %v: tensor<4x?x8xf32>, %l: tensor<2xi32>, %r: tensor<2xi32>) {
  // expected-error @+1 {{keys and values have different row counts}}
  %o = tfm.attention padding %q, %k, %v heads 2 scale 1.0 key_lengths(%l) key_rows(%r) : (tensor<2x1x8xf32>, tensor<3x?x8xf32>, tensor<4x?x8xf32>, tensor<2xi32>, tensor<2xi32>) -> tensor<2x1x8xf32>
  return
}

// -----

func.func @attention_offset(%q: tensor<?x?x8xf32>, %s: index) {
  // expected-error @+1 {{query_offset only applies to a causal mask}}
  %o = tfm.attention none %q, %q, %q heads 2 scale 1.0 query_offset(%s) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, index) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @attention_heads_positive(%q: tensor<?x?x8xf32>) {
  // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint}}
  %o = tfm.attention none %q, %q, %q heads 0 scale 1.0 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @cache_write_width(%x: tensor<?x?x8xf32>, %c: memref<?x?x4xf32>, %s: index) {
  // expected-error @+1 {{value width 8 does not match the cache width 4}}
  tfm.cache_write %x, %c[%s] : tensor<?x?x8xf32>, memref<?x?x4xf32>
  return
}

// -----

func.func @cache_write_batch(%x: tensor<2x?x8xf32>, %c: memref<3x?x8xf32>, %s: index) {
  // expected-error @+1 {{value and cache batch sizes differ}}
  tfm.cache_write %x, %c[%s] : tensor<2x?x8xf32>, memref<3x?x8xf32>
  return
}

// -----

func.func @slice_range(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{features [6, 10) are outside the input's 8}}
  %s = tfm.slice %x[6] : tensor<?x?x8xf32> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @linear_i8_without_scale(%x: tensor<?x?x8xf32>, %w: tensor<16x8xi8>, %b: tensor<16xf32>) {
  // expected-error @+1 {{an i8 weight needs a 'scale' operand}}
  %h = tfm.linear none %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_scale_for_f16(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf16>, %b: tensor<16xf32>) {
  // expected-error @+1 {{a 'scale' operand is only for i8 weights, not 'f16'}}
  %h = tfm.linear none %x, %w, %b scale %b : tensor<?x?x8xf32>, tensor<16x8xf16>, tensor<16xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_scale_rows(%x: tensor<?x?x8xf32>, %w: tensor<16x8xi8>, %b: tensor<16xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{scale has 8 elements, expected one per output row (16)}}
  %h = tfm.linear none %x, %w, %b scale %s : tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32>, tensor<8xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @linear_i4(%x: tensor<?x?x8xf32>, %w: tensor<16x8xi4>, %b: tensor<16xf32>) {
  // expected-error @+1 {{operand #1 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type or 8-bit signless integer values}}
  %h = tfm.linear none %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xi4>, tensor<16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @attention_mixed_kv(%q: tensor<?x1x8xf32>, %k: tensor<?x?x8xf16>, %v: tensor<?x?x8xf32>) {
  // expected-error @+1 {{keys and values must have the same element type}}
  %a = tfm.attention none %q, %k, %v heads 1 scale 0.35 : (tensor<?x1x8xf32>, tensor<?x?x8xf16>, tensor<?x?x8xf32>) -> tensor<?x1x8xf32>
  return
}

// -----

func.func @narrow_shape(%x: tensor<?x2x8xf32>) {
  // expected-error @+1 {{result shape must match the input shape}}
  %h = tfm.narrow %x : tensor<?x2x8xf32> -> tensor<?x3x8xf16>
  return
}

// -----

func.func @cache_i8(%x: tensor<?x1x8xf32>, %c: memref<?x?x8xi8>, %p: index) {
  // expected-error @+1 {{operand #1 must be 3D memref of 32-bit float or 16-bit float values}}
  tfm.cache_write %x, %c[%p] : tensor<?x1x8xf32>, memref<?x?x8xi8>
  return
}

// -----

func.func @linear_argmax_positions(%x: tensor<?x2x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error@+1 {{one position per row}}
  %t = tfm.linear_argmax %x, %w, %b never %n eos %e allow %a : tensor<?x2x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}

// -----

func.func @linear_argmax_rows(%x: tensor<3x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<2xi32>) -> tensor<3xi32> {
  // expected-error@+1 {{one entry per input row}}
  %t = tfm.linear_argmax %x, %w, %b never %n eos %e allow %a : tensor<3x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<2xi32> -> tensor<3xi32>
  return %t : tensor<3xi32>
}

// -----

func.func @linear_topk_positions(%x: tensor<?x2x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>, %k: index) -> tensor<?x?xi32> {
  // expected-error@+1 {{one position per row}}
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<?x2x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %i : tensor<?x?xi32>
}

// -----

func.func @linear_topk_rows(%x: tensor<3x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<3xi32>, %k: index) -> tensor<2x?xi32> {
  // expected-error@+1 {{one row per input row}}
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<3x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<3xi32> -> tensor<3x?xf32>, tensor<2x?xi32>
  return %i : tensor<2x?xi32>
}

// -----

func.func @linear_topk_candidates(%x: tensor<3x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<3xi32>, %k: index) -> tensor<3x8xi32> {
  // expected-error@+1 {{as many candidates}}
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<3x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<3xi32> -> tensor<3x6xf32>, tensor<3x8xi32>
  return %i : tensor<3x8xi32>
}

// -----

func.func @linear_topk_weight(%x: tensor<3x1x4xf32>, %w: tensor<10x5xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<3xi32>, %k: index) -> tensor<3x?xi32> {
  // expected-error@+1 {{'tfm.linear_topk' op}}
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<3x1x4xf32>, tensor<10x5xf32>, tensor<10xf32>, tensor<?xi32>, tensor<3xi32> -> tensor<3x?xf32>, tensor<3x?xi32>
  return %i : tensor<3x?xi32>
}

// -----

func.func @linear_argmax_i8_without_scale(%x: tensor<?x1x4xf32>, %w: tensor<10x4xi8>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error@+1 {{an i8 weight needs a 'scale' operand}}
  %t = tfm.linear_argmax %x, %w, %b never %n eos %e allow %a : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}

// -----

func.func @linear_argmax_float_with_scale(%x: tensor<?x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %s: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error@+1 {{a 'scale' operand is only for i8 weights}}
  %t = tfm.linear_argmax %x, %w, %b scale %s never %n eos %e allow %a : tensor<?x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32>, tensor<10xf32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}

// -----

func.func @linear_argmax_scale_rows(%x: tensor<?x1x4xf32>, %w: tensor<10x4xi8>, %b: tensor<10xf32>, %s: tensor<9xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error@+1 {{scale has 9 elements, expected one per output row (10)}}
  %t = tfm.linear_argmax %x, %w, %b scale %s never %n eos %e allow %a : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32>, tensor<9xf32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}
