// RUN: tfm-opt %s -split-input-file --tfm-to-loops | FileCheck %s

// Destination-passing style: the result becomes a trailing argument that
// keeps the result's attributes; the op becomes a call to an outlined
// kernel, which writes the result there (no buffer of its own, no copy).
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: memref<?x?x8xf32>, %[[W:.+]]: memref<16x8xf32>, %[[B:.+]]: memref<16xf32>, %[[OUT:.+]]: memref<?x?x16xf32> {tfm.output = "y"})
// CHECK-NOT: memref.alloc
// CHECK: call @tfm_linear_relu.DxDx8.16x8.16.DxDx16(%[[X]], %[[W]], %[[B]], %[[OUT]])
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK: func.func private @tfm_linear_relu.DxDx8.16x8.16.DxDx16
// CHECK-SAME: passthrough = ["noinline"]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for {{.+}} iter_args
// CHECK: arith.mulf {{.+}} fastmath<reassoc,contract>
// CHECK: arith.maximumf
func.func @linear(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<?x?x16xf32> {tfm.output = "y"}) {
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// A result returned twice is computed in the last destination and copied
// from there into the first; an argument returned as it is is copied.
// CHECK-LABEL: func.func @returned_twice
// CHECK-SAME: %[[X:[^:]+]]: memref<?x?x8xf32>, %{{[^:]+}}: memref<16x8xf32>, %{{[^:]+}}: memref<16xf32>, %[[Y0:[^:]+]]: memref<?x?x16xf32>, %[[Y1:[^:]+]]: memref<?x?x16xf32>, %[[XOUT:[^:]+]]: memref<?x?x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @tfm_linear_relu{{[^(]*}}(%[[X]], %{{.+}}, %{{.+}}, %[[Y1]])
// CHECK: memref.copy %[[Y1]], %[[Y0]]
// CHECK: memref.copy %[[X]], %[[XOUT]]
// CHECK-NEXT: return
func.func @returned_twice(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y, %y, %x : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// Two layers with the same shapes share one kernel.
// CHECK-LABEL: func.func @shared_kernel
// CHECK: call @[[K:tfm_add_layer_norm[^(]+]](
// CHECK: call @[[K]](
// CHECK-COUNT-1: func.func private @tfm_add_layer_norm
// CHECK-NOT: func.func private @tfm_add_layer_norm
func.func @shared_kernel(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %a = tfm.add_layer_norm %x, %x, %g, %g eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  %b = tfm.add_layer_norm %a, %x, %g, %g eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  return %b : tensor<?x?x8xf32>
}

// -----

// Attention: masks are loop bounds (key lengths, causal position, cached
// length), the softmax is online over blocks of 16 keys (running max/sum
// carried by the block loop, the block's scores in a 16-float scratch row),
// and no buffer of rank 4 ([batch, heads, q_len, k_len]) exists anywhere.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: memref.alloc{{.*}}memref<?x?x?x?x
// CHECK: func.func private @tfm_attention_causal_h2
// CHECK: %[[SCORES:.+]] = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// CHECK: memref.load %{{.+}} : memref<?xi32>
// CHECK: arith.minsi
// CHECK: scf.for {{.+}} step %c16 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (f32, f32)
// CHECK: memref.store %{{.+}}, %[[SCORES]]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: memref.store %{{.+}}, %[[SCORES]]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref<?x?x?x?x
func.func @attention(%q: tensor<?x?x8xf32>, %k: memref<?x?x8xf32>, %l: tensor<?xi32>, %p: index) -> tensor<?x?x8xf32> {
  %o = tfm.attention causal %q, %k, %k heads 2 scale 0.5 key_lengths(%l) query_offset(%p) kv_length(%p)
      : (tensor<?x?x8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, tensor<?xi32>, index, index) -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// -----

// With key_rows, query row b reads the keys/values of row key_rows[b]
// (beam hypotheses sharing their source's encoder keys/values): the row is
// loaded, clamped to the key rows there are, and used as the keys' and the
// values' row index (head size 8: the explicit-vector kernel).
// CHECK-LABEL: func.func @attention_key_rows
// CHECK: call @tfm_attention_padding_h1_rows.DxDx8.DxDx8.DxDx8.Di32.Di32.i.i.DxDx8
// CHECK: func.func private @tfm_attention_padding_h1_rows
// CHECK-SAME: %[[K:[^:]+]]: memref<?x?x8xf32>, %[[V:[^:]+]]: memref<?x?x8xf32>, %[[LEN:[^:]+]]: memref<?xi32>, %[[ROWS:[^:]+]]: memref<?xi32>
// CHECK: scf.for %[[B:.+]] = %{{.+}} to
// CHECK: %[[KEYROWS:.+]] = memref.dim %[[K]], %c0
// CHECK: %[[LAST:.+]] = arith.addi %[[KEYROWS]], %c-1
// CHECK: %[[R:.+]] = memref.load %[[ROWS]][%[[B]]]
// CHECK: %[[RI:.+]] = arith.index_cast %[[R]]
// CHECK: %[[LO:.+]] = arith.maxsi %[[RI]], %c0
// CHECK: %[[KB:.+]] = arith.minsi %[[LO]], %[[LAST]]
// CHECK: vector.load %[[K]][%[[KB]],
// CHECK: vector.load %[[V]][%[[KB]],
func.func @attention_key_rows(%q: tensor<?x1x8xf32>, %k: tensor<?x?x8xf32>, %l: tensor<?xi32>, %r: tensor<?xi32>) -> tensor<?x1x8xf32> {
  %o = tfm.attention padding %q, %k, %k heads 1 scale 0.5 key_lengths(%l) key_rows(%r)
      : (tensor<?x1x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1x8xf32>
  return %o : tensor<?x1x8xf32>
}

// -----

// Head sizes that are a multiple of 8: the keys and values are read in
// memory order (every head's score of key j from its one contiguous row, into
// a [heads, keys] scratch buffer freed after the kernel's loops), each head's
// softmax runs over its whole score row in vectors of 8, the value rows are
// prefetched while the keys are scored and the next row's keys while the
// values are summed, and still no [batch, heads, q_len, k_len] buffer.
// CHECK-LABEL: func.func @attention_memory_order
// CHECK-NOT: memref<?x?x?x?x
// CHECK: func.func private @tfm_attention_causal_h2
// CHECK: %[[SCORES:.+]] = memref.alloc(%{{.+}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.prefetch %{{.+}}, read, locality<3>, data
// CHECK-COUNT-2: vector.fma
// CHECK: memref.store %{{.+}}, %[[SCORES]]
// CHECK: vector.reduction <maximumf>
// CHECK: math.exp %{{.+}} : vector<8xf32>
// CHECK: memref.prefetch
// CHECK: vector.fma
// CHECK: memref.dealloc %[[SCORES]]
// CHECK-NOT: memref<?x?x?x?x
func.func @attention_memory_order(%q: tensor<?x?x16xf32>, %k: memref<?x?x16xf32>, %p: index) -> tensor<?x?x16xf32> {
  %o = tfm.attention causal %q, %k, %k heads 2 scale 0.5 query_offset(%p) kv_length(%p)
      : (tensor<?x?x16xf32>, memref<?x?x16xf32>, memref<?x?x16xf32>, index, index) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @cache_write
// CHECK-SAME: (%[[V:.+]]: memref<?x1x8xf32>, %[[C:.+]]: memref<?x?x8xf32>, %[[P:.+]]: index)
// The step's [B, 1, D] shape is generalised so the kernel is shared with
// [B, T, D] callers.
// CHECK: %[[VC:.+]] = memref.cast %[[V]] : memref<?x1x8xf32> to memref<?x?x8xf32>
// CHECK: call @tfm_cache_write.DxDx8.DxDx8.i(%[[VC]], %[[C]], %[[P]])
func.func @cache_write(%v: tensor<?x1x8xf32>, %c: memref<?x?x8xf32>, %p: index) {
  tfm.cache_write %v, %c[%p] : tensor<?x1x8xf32>, memref<?x?x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @embed
// CHECK: call @tfm_embedding_scaled.DxDi32.40x8.DxDx8
// CHECK: call @tfm_positional_encoding.DxDx8.64x8.i.DxDx8
// CHECK: func.func private @tfm_embedding_scaled
// CHECK: arith.index_cast
// CHECK: arith.maxsi
// CHECK: arith.minsi
func.func @embed(%ids: tensor<?x?xi32>, %t: tensor<40x8xf32>, %pe: tensor<64x8xf32>) -> tensor<?x?x8xf32> {
  %e = tfm.embedding %ids, %t scale 2.0 : (tensor<?x?xi32>, tensor<40x8xf32>) -> tensor<?x?x8xf32>
  %p = tfm.positional_encoding %e, %pe : tensor<?x?x8xf32>, tensor<64x8xf32>
  return %p : tensor<?x?x8xf32>
}

// -----

// A buffer is freed right after its last use, not at the end of the
// function: peak memory is the live intermediates only. The last layer
// writes the result argument.
// CHECK-LABEL: func.func @early_free
// CHECK-SAME: %[[OUT:[^:]+]]: memref<?x?x8xf32>)
// CHECK: %[[A:.+]] = memref.alloc
// CHECK: call @tfm_linear_relu{{[^(]*}}(%{{.+}}, %{{.+}}, %{{.+}}, %[[A]])
// CHECK: call @tfm_linear_relu{{[^(]*}}(%[[A]], %{{.+}}, %{{.+}}, %[[OUT]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: return
func.func @early_free(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %z = tfm.linear relu %y, %w, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK: call @tfm_slice_at8.DxDx24.DxDx8
// CHECK: func.func private @tfm_slice_at8.DxDx24.DxDx8
func.func @slice(%x: tensor<?x?x24xf32>) -> tensor<?x?x8xf32> {
  %s = tfm.slice %x[8] : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// silu (x * sigmoid(x), Marian's "swish"): x / (1 + exp(-x)) after the bias.
// CHECK-LABEL: func.func @linear_silu
// CHECK: call @tfm_linear_silu.DxDx8.16x8.16.DxDx16(
// CHECK: func.func private @tfm_linear_silu.DxDx8.16x8.16.DxDx16
// CHECK: arith.addf
// CHECK: %[[NEG:.+]] = arith.subf %{{.+}}, %[[X:[^ ]+]]
// CHECK: %[[E:.+]] = math.exp %[[NEG]]
// CHECK: %[[D:.+]] = arith.addf %{{.+}}, %[[E]]
// CHECK: arith.divf %[[X]], %[[D]]
func.func @linear_silu(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> (tensor<?x?x16xf32> {tfm.output = "y"}) {
  %y = tfm.linear silu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
