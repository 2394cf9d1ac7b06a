// RUN: tfm-opt %s | tfm-opt | FileCheck %s
// RUN: tfm-opt %s --mlir-print-op-generic | tfm-opt | FileCheck %s

// CHECK-LABEL: func.func @blocks
func.func @blocks(%ids: tensor<?x?xi32>, %table: tensor<40x8xf32>,
                  %pe: tensor<64x8xf32>, %w: tensor<16x8xf32>,
                  %b: tensor<16xf32>, %g: tensor<8xf32>, %beta: tensor<8xf32>,
                  %step: index) -> tensor<?x?x8xf32> {
  // CHECK: tfm.embedding %{{.*}}, %{{.*}} scale 2.000000e+00 : (tensor<?x?xi32>, tensor<40x8xf32>) -> tensor<?x?x8xf32>
  %e = tfm.embedding %ids, %table scale 2.0 : (tensor<?x?xi32>, tensor<40x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.positional_encoding %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<64x8xf32>
  %p = tfm.positional_encoding %e, %pe : tensor<?x?x8xf32>, tensor<64x8xf32>
  // CHECK: tfm.positional_encoding %{{.*}}, %{{.*}} offset %{{.*}} : tensor<?x?x8xf32>, tensor<64x8xf32>
  %p2 = tfm.positional_encoding %p, %pe offset %step : tensor<?x?x8xf32>, tensor<64x8xf32>
  // CHECK: tfm.linear gelu %{{.*}} : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  %h = tfm.linear gelu %p2, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  // CHECK: tfm.slice %{{.*}}[8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  %sl = tfm.slice %h[8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  // CHECK: tfm.add
  %s = tfm.add %p, %sl : tensor<?x?x8xf32>
  // CHECK: tfm.layer_norm %{{.*}} eps 1.000000e-05 : tensor<?x?x8xf32>, tensor<8xf32>
  %n = tfm.layer_norm %s, %g, %beta eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  // CHECK: tfm.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<?x?x8xf32>, tensor<8xf32>
  %n2 = tfm.add_layer_norm %n, %s, %g, %beta eps 1.0e-6 : tensor<?x?x8xf32>, tensor<8xf32>
  return %n2 : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%x: tensor<?x?x8xf32>, %mem: tensor<?x?x8xf32>,
                     %w: tensor<8x8xf32>, %b: tensor<8xf32>,
                     %len: tensor<?xi32>, %kc: memref<?x?x8xf32>,
                     %vc: memref<?x?x8xf32>, %step: index)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  // CHECK: tfm.multi_head_attention padding %{{.*}}, %{{.*}} weights(%{{.*}}) heads 2 key_lengths(%{{.*}}) :
  %a = tfm.multi_head_attention padding %x, %mem weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 2 key_lengths(%len)
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.multi_head_attention causal %{{.*}} heads 4 cache(%{{.*}}, %{{.*}}) at %{{.*}} :
  %c = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads 4 cache(%kc, %vc) at %step
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, index) -> tensor<?x?x8xf32>
  // CHECK: tfm.cache_write %{{.*}}, %{{.*}}[%{{.*}}] : tensor<?x?x8xf32>, memref<?x?x8xf32>
  tfm.cache_write %x, %kc[%step] : tensor<?x?x8xf32>, memref<?x?x8xf32>
  // CHECK: tfm.attention causal %{{.*}}, %{{.*}}, %{{.*}} heads 2 scale 5.000000e-01 query_offset(%{{.*}}) kv_length(%{{.*}}) :
  %o = tfm.attention causal %x, %kc, %vc heads 2 scale 0.5 query_offset(%step) kv_length(%step)
      : (tensor<?x?x8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, index, index) -> tensor<?x?x8xf32>
  // CHECK: tfm.attention padding %{{.*}}, %{{.*}}, %{{.*}} heads 2 scale 5.000000e-01 key_lengths(%{{.*}}) key_rows(%{{.*}}) :
  %o3 = tfm.attention padding %x, %mem, %mem heads 2 scale 0.5 key_lengths(%len) key_rows(%len)
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.attention none %{{.*}}, %{{.*}}, %{{.*}} heads 1 scale 1.000000e+00 :
  %o2 = tfm.attention none %x, %mem, %mem heads 1 scale 1.0
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %a, %c, %o, %o2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
