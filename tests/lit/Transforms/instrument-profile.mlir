// RUN: tfm-opt %s --tfm-instrument-profile | FileCheck %s
// RUN: tfm-opt %s --tfm-instrument-profile --tfm-to-loops | FileCheck %s --check-prefix=LOOPS

// The table: the function first, then its ops in order, each with its cost
// coefficients (a linear: 2*16*8 FLOP per row; its weight, bias read once a
// call; input and output rows; attention: 4*8 FLOP per row and key, keys
// and values read once per batch row).
// CHECK: module attributes {tfm.profile = [
// CHECK-SAME: {arithmetic = "float32", bytes_batch_keys = 0 : i64, bytes_call = 0 : i64, bytes_row_keys = 0 : i64, bytes_rows = 0 : i64, detail = "", flop_row_keys = 0 : i64, flop_rows = 0 : i64, function = "step", kind = "function", name = "step"}
// CHECK-SAME: {arithmetic = "float32", bytes_batch_keys = 0 : i64, bytes_call = 576 : i64, bytes_row_keys = 0 : i64, bytes_rows = 96 : i64, detail = "relu, weight 16x8 f32", flop_row_keys = 0 : i64, flop_rows = 256 : i64, function = "step", kind = "tfm.linear", name = "layer.ffn"}
// CHECK-SAME: {arithmetic = "float32", bytes_batch_keys = 0 : i64, bytes_call = 0 : i64, bytes_row_keys = 0 : i64, bytes_rows = 64 : i64, detail = "d 8", flop_row_keys = 0 : i64, flop_rows = 0 : i64, function = "step", kind = "tfm.slice", name = ""}
// CHECK-SAME: {arithmetic = "float32", bytes_batch_keys = 0 : i64, bytes_call = 0 : i64, bytes_row_keys = 0 : i64, bytes_rows = 64 : i64, detail = "", flop_row_keys = 0 : i64, flop_rows = 0 : i64, function = "step", kind = "tfm.cache_write", name = ""}
// CHECK-SAME: {arithmetic = "float32", bytes_batch_keys = 64 : i64, bytes_call = 0 : i64, bytes_row_keys = 0 : i64, bytes_rows = 64 : i64, detail = "causal mask, 2 heads, KV cache", flop_row_keys = 32 : i64, flop_rows = 0 : i64, function = "step", kind = "tfm.attention", name = "layer.self_attention"}
// CHECK-SAME: ]}
// CHECK: func.func private @tfm_rt_profile_enter(i64)
// CHECK: func.func private @tfm_rt_profile_exit(i64, i64, i64, i64)
// CHECK-LABEL: func.func @step
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[F:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @tfm_rt_profile_enter(%[[F]])
// CHECK: call @tfm_rt_profile_enter(%c1_i64)
// CHECK-NEXT: %[[H:.+]] = tfm.linear relu
// CHECK: %[[B:.+]] = tensor.dim %[[H]], %c0
// CHECK: %[[T:.+]] = tensor.dim %[[H]], %c1
// CHECK: %[[R:.+]] = arith.muli %{{.+}}, %{{.+}} : i64
// CHECK-NEXT: call @tfm_rt_profile_exit(%c1_i64, %{{.+}}, %[[R]], %[[ZERO]])
// CHECK: call @tfm_rt_profile_enter(%c2_i64)
// CHECK-NEXT: tfm.slice
// CHECK: call @tfm_rt_profile_exit(%c2_i64,
// CHECK: call @tfm_rt_profile_enter(%c3_i64)
// CHECK-NEXT: tfm.cache_write %[[V:.+]], %{{.+}}[
// CHECK: tensor.dim %[[V]], %c0
// CHECK: call @tfm_rt_profile_exit(%c3_i64,
// The keys an attention op reads: its kv_length.
// CHECK: call @tfm_rt_profile_enter(%c4_i64)
// CHECK-NEXT: tfm.attention
// CHECK: %[[K:.+]] = arith.index_cast %arg3 : index to i64
// CHECK-NEXT: call @tfm_rt_profile_exit(%c4_i64, %{{.+}}, %{{.+}}, %[[K]])
// CHECK: call @tfm_rt_profile_exit(%[[F]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
// CHECK-NEXT: return

// Linear layers with int8 or bfloat16 weights say so (their roofline is
// set against that arithmetic's rate); float16 weights multiply in float32.
// RUN: tfm-opt %s --split-input-file --tfm-instrument-profile | FileCheck %s --check-prefix=ARITH
// ARITH: {arithmetic = "int8", {{.*}} detail = "none, weight 10x4 i8"
// ARITH-SAME: {arithmetic = "bfloat16", {{.*}} detail = "none, weight 10x4 bf16"
// ARITH-SAME: {arithmetic = "float32", {{.*}} detail = "none, weight 10x4 f16"

// The calls survive the lowering around the kernels that replace the ops.
// LOOPS-LABEL: func.func @step
// LOOPS: call @tfm_rt_profile_enter(%c1_i64)
// LOOPS: memref.alloc
// LOOPS: call @tfm_linear_relu
// LOOPS: call @tfm_rt_profile_exit(%c1_i64,
// LOOPS: call @tfm_rt_profile_enter(%c4_i64)
// LOOPS: call @tfm_attention_causal
// LOOPS: call @tfm_rt_profile_exit(%c4_i64,
// LOOPS: call @tfm_rt_profile_exit(%c0_i64{{.*}}, %c0_i64
func.func @step(%x: tensor<?x1x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>,
                %p: index, %c: memref<?x?x8xf32>) -> (tensor<?x1x8xf32> {tfm.output = "y"}) {
  %h = tfm.linear relu %x, %w, %b : tensor<?x1x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x1x16xf32> loc("layer.ffn")
  %k = tfm.slice %h[8] : tensor<?x1x16xf32> -> tensor<?x1x8xf32>
  tfm.cache_write %k, %c[%p] : tensor<?x1x8xf32>, memref<?x?x8xf32>
  %o = tfm.attention causal %x, %c, %c heads 2 scale 0.5 query_offset(%p) kv_length(%p)
      : (tensor<?x1x8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, index, index) -> tensor<?x1x8xf32> loc("layer.self_attention")
  return %o : tensor<?x1x8xf32>
}

// -----

func.func @types(%x: tensor<?x1x4xf32>, %w8: tensor<10x4xi8>, %s: tensor<10xf32>,
                 %wb: tensor<10x4xbf16>, %wh: tensor<10x4xf16>, %b: tensor<10xf32>)
    -> (tensor<?x1x10xf32>, tensor<?x1x10xf32>, tensor<?x1x10xf32>) {
  %a = tfm.linear none %x, %w8, %b scale %s : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<10xf32> -> tensor<?x1x10xf32>
  %c = tfm.linear none %x, %wb, %b : tensor<?x1x4xf32>, tensor<10x4xbf16>, tensor<10xf32> -> tensor<?x1x10xf32>
  %d = tfm.linear none %x, %wh, %b : tensor<?x1x4xf32>, tensor<10x4xf16>, tensor<10xf32> -> tensor<?x1x10xf32>
  return %a, %c, %d : tensor<?x1x10xf32>, tensor<?x1x10xf32>, tensor<?x1x10xf32>
}
