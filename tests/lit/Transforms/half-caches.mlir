// RUN: tfm-opt %s -split-input-file --tfm-half-caches | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-half-caches --tfm-to-loops | FileCheck %s --check-prefix=LOOPS

// The encoder's cross-attention keys/values (results named like the decoder
// step's inputs) are narrowed to float16; the step's inputs and its
// self-attention caches become float16; queries and results stay float32.
// CHECK-LABEL: func.func @encode
// CHECK-SAME: -> (tensor<?x?x8xf16> {tfm.output = "cross_key.0"}, tensor<?x?x8xf16> {tfm.output = "cross_value.0"})
// CHECK: %[[K:.+]] = tfm.narrow %{{.+}} : tensor<?x?x8xf32> -> tensor<?x?x8xf16>
// CHECK: %[[V:.+]] = tfm.narrow %{{.+}} : tensor<?x?x8xf32> -> tensor<?x?x8xf16>
// CHECK: return %[[K]], %[[V]] : tensor<?x?x8xf16>, tensor<?x?x8xf16>
// CHECK-LABEL: func.func @decode_step
// CHECK-SAME: tensor<?x?x8xf16> {tfm.input = "cross_key.0"}
// CHECK-SAME: tensor<?x?x8xf16> {tfm.input = "cross_value.0"}
// CHECK-SAME: memref<?x?x8xf16> {tfm.cache = "self_key.0"}
// CHECK-SAME: memref<?x?x8xf16> {tfm.cache = "self_value.0"}
// CHECK-SAME: tensor<?x1x8xf32> {tfm.input = "query"}
// CHECK: tfm.cache_write %{{.+}}, %{{.+}}[%{{.+}}] : tensor<?x1x8xf32>, memref<?x?x8xf16>
// CHECK: tfm.attention causal {{.+}} : (tensor<?x1x8xf32>, memref<?x?x8xf16>, memref<?x?x8xf16>, index, index) -> tensor<?x1x8xf32>
// CHECK: tfm.attention padding {{.+}} : (tensor<?x1x8xf32>, tensor<?x?x8xf16>, tensor<?x?x8xf16>, tensor<?xi32>) -> tensor<?x1x8xf32>

// The loops widen float16 keys/values as they load them (explicit vectors:
// the head size 8 fills one AVX2 register) and round what the cache
// receives.
// LOOPS-LABEL: func.func private @tfm_narrow.DxDx8.DxDx8f16
// LOOPS: arith.truncf %{{.+}} : f32 to f16
// LOOPS-LABEL: func.func private @tfm_cache_write.DxDx8.DxDx8f16.i
// LOOPS: arith.truncf %{{.+}} : f32 to f16
// LOOPS: memref.store %{{.+}} : memref<?x?x8xf16>
// LOOPS-LABEL: func.func private @tfm_attention_causal_h1.DxDx8.DxDx8f16.DxDx8f16
// LOOPS: vector.load %{{.+}} : memref<?x?x8xf16>, vector<8xf16>
// LOOPS: arith.extf %{{.+}} : vector<8xf16> to vector<8xf32>
// LOOPS: vector.fma
func.func @encode(%memory: tensor<?x?x8xf32> {tfm.input = "memory"},
                  %w: tensor<16x8xf32> {tfm.weight = "kv.weight"},
                  %b: tensor<16xf32> {tfm.weight = "kv.bias"})
    -> (tensor<?x?x8xf32> {tfm.output = "cross_key.0"},
        tensor<?x?x8xf32> {tfm.output = "cross_value.0"}) {
  %kv = tfm.linear none %memory, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  %k = tfm.slice %kv[0] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  %v = tfm.slice %kv[8] : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
  return %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

func.func @decode_step(%ck: tensor<?x?x8xf32> {tfm.input = "cross_key.0"},
                       %cv: tensor<?x?x8xf32> {tfm.input = "cross_value.0"},
                       %sk: memref<?x?x8xf32> {tfm.cache = "self_key.0"},
                       %sv: memref<?x?x8xf32> {tfm.cache = "self_value.0"},
                       %q: tensor<?x1x8xf32> {tfm.input = "query"},
                       %lengths: tensor<?xi32> {tfm.input = "src_lengths"},
                       %step: index {tfm.input = "step"})
    -> (tensor<?x1x8xf32> {tfm.output = "out"}) {
  %c1 = arith.constant 1 : index
  tfm.cache_write %q, %sk[%step] : tensor<?x1x8xf32>, memref<?x?x8xf32>
  tfm.cache_write %q, %sv[%step] : tensor<?x1x8xf32>, memref<?x?x8xf32>
  %n = arith.addi %step, %c1 : index
  %s = tfm.attention causal %q, %sk, %sv heads 1 scale 0.35 query_offset(%step) kv_length(%n) : (tensor<?x1x8xf32>, memref<?x?x8xf32>, memref<?x?x8xf32>, index, index) -> tensor<?x1x8xf32>
  %c = tfm.attention padding %s, %ck, %cv heads 1 scale 0.35 key_lengths(%lengths) : (tensor<?x1x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x1x8xf32>
  return %c : tensor<?x1x8xf32>
}

// -----

// Keys that feed something else (here a residual) stay float32, and so
// does their partner at the attention.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: tensor<?x?x8xf32> {tfm.input = "k"}
// CHECK-SAME: tensor<?x?x8xf32> {tfm.input = "v"}
// CHECK-NOT: f16
func.func @shared(%q: tensor<?x?x8xf32> {tfm.input = "q"},
                  %k: tensor<?x?x8xf32> {tfm.input = "k"},
                  %v: tensor<?x?x8xf32> {tfm.input = "v"})
    -> (tensor<?x?x8xf32> {tfm.output = "out"}) {
  %a = tfm.attention none %q, %k, %v heads 1 scale 0.35 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %r = tfm.add %a, %k : tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}
