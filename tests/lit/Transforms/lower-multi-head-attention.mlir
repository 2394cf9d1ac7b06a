// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-lower-multi-head-attention))' | FileCheck %s

// Self-attention without a cache: three projections, the fused core with
// the key lengths, the output projection.
// CHECK-LABEL: func.func @self_attention
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x8xf32>, %[[W:.+]]: tensor<8x8xf32>, %[[B:.+]]: tensor<8xf32>, %[[L:.+]]: tensor<?xi32>)
// CHECK: %[[Q:.+]] = tfm.linear none %[[X]], %[[W]], %[[B]]
// CHECK: %[[K:.+]] = tfm.linear none %[[X]]
// CHECK: %[[V:.+]] = tfm.linear none %[[X]]
// CHECK: %[[A:.+]] = tfm.attention padding %[[Q]], %[[K]], %[[V]] heads 2 scale 5.000000e-01 key_lengths(%[[L]])
// CHECK: %[[O:.+]] = tfm.linear none %[[A]]
// CHECK: return %[[O]]
// CHECK-NOT: tfm.multi_head_attention
func.func @self_attention(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %l: tensor<?xi32>) -> tensor<?x?x8xf32> {
  %a = tfm.multi_head_attention padding %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 key_lengths(%l)
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// With a KV cache: the new keys/values are written at the position, the
// core reads the caches up to position + new steps, queries start there.
// CHECK-LABEL: func.func @cached
// CHECK-SAME: %[[KC:[^:]+]]: memref<?x?x8xf32>, %[[VC:[^:]+]]: memref<?x?x8xf32>, %[[P:[^:]+]]: index
// CHECK: %[[Q:.+]] = tfm.linear none
// CHECK: %[[K:.+]] = tfm.linear none
// CHECK: %[[V:.+]] = tfm.linear none
// CHECK: tfm.cache_write %[[K]], %[[KC]][%[[P]]]
// CHECK: tfm.cache_write %[[V]], %[[VC]][%[[P]]]
// CHECK: %[[N:.+]] = arith.addi %[[P]], %{{.+}} : index
// CHECK: tfm.attention causal %[[Q]], %[[KC]], %[[VC]] heads 4 scale 0.707106769 query_offset(%[[P]]) kv_length(%[[N]])
func.func @cached(%x: tensor<?x1x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %kc: memref<?x?x8xf32>, %vc: memref<?x?x8xf32>, %p: index) -> tensor<?x1x8xf32> {
  %a = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 4 cache(%kc, %vc) at %p
      : (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, index) -> tensor<?x1x8xf32>
  return %a : tensor<?x1x8xf32>
}
