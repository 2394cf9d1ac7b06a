// RUN: tfm-opt %s -split-input-file --tfm-beam-head | FileCheck %s

// decode_step stays; decode_beam is its copy whose output projection ends
// in each row's best candidates and their log-probabilities, with four
// inputs: which ids are allowed, and how many candidates.
// CHECK-LABEL: func.func @decode_step
// CHECK: tfm.linear none
// CHECK: return {{.*}} : tensor<?x1x10xf32>
// CHECK-LABEL: func.func @decode_beam
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x1x4xf32> {tfm.input = "hidden"}
// CHECK-SAME: %[[W:[^:]+]]: tensor<10x4xf32> {tfm.weight = "linear.weight"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<10xf32> {tfm.weight = "linear.bias"}
// CHECK-SAME: %[[NEVER:[^:]+]]: tensor<?xi32> {tfm.input = "never_ids"}
// CHECK-SAME: %[[EOS:[^:]+]]: index {tfm.input = "eos_id"}
// CHECK-SAME: %[[ALLOW:[^:]+]]: tensor<?xi32> {tfm.input = "allow_eos"}
// CHECK-SAME: %[[K:[^:]+]]: index {tfm.input = "candidates"}
// CHECK-SAME: -> (tensor<?x?xf32> {tfm.output = "top_values"}, tensor<?x?xi32> {tfm.output = "top_ids"})
// CHECK-NOT: tfm.linear none
// CHECK: %[[V:.+]], %[[I:.+]] = tfm.linear_topk %[[X]], %[[W]], %[[B]] never %[[NEVER]] eos %[[EOS]] allow %[[ALLOW]] count %[[K]]
// CHECK-NEXT: return %[[V]], %[[I]] : tensor<?x?xf32>, tensor<?x?xi32>
func.func @decode_step(%x: tensor<?x1x4xf32> {tfm.input = "hidden"},
                       %w: tensor<10x4xf32> {tfm.weight = "linear.weight"},
                       %b: tensor<10xf32> {tfm.weight = "linear.bias"})
    -> (tensor<?x1x10xf32> {tfm.output = "logits"}) {
  %l = tfm.linear none %x, %w, %b : tensor<?x1x4xf32>, tensor<10x4xf32>, tensor<10xf32> -> tensor<?x1x10xf32>
  return %l : tensor<?x1x10xf32>
}

// -----

// bfloat16 and float16 output projections are fused too.
// CHECK-LABEL: func.func @decode_beam
// CHECK: tfm.linear_topk {{.*}} tensor<10x4xbf16>
func.func @decode_step(%x: tensor<?x1x4xf32>, %w: tensor<10x4xbf16>, %b: tensor<10xf32>)
    -> tensor<?x1x10xf32> {
  %l = tfm.linear none %x, %w, %b : tensor<?x1x4xf32>, tensor<10x4xbf16>, tensor<10xf32> -> tensor<?x1x10xf32>
  return %l : tensor<?x1x10xf32>
}

// -----

// An int8 output projection is fused with its scales.
// CHECK-LABEL: func.func @decode_beam
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x1x4xf32>, %[[W:[^:]+]]: tensor<10x4xi8>, %[[B:[^:]+]]: tensor<10xf32>, %[[S:[^:]+]]: tensor<10xf32>
// CHECK-NOT: tfm.linear none
// CHECK: tfm.linear_topk %[[X]], %[[W]], %[[B]] scale %[[S]] never {{.*}} : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32>, tensor<10xf32> -> tensor<?x?xf32>, tensor<?x?xi32>
func.func @decode_step(%x: tensor<?x1x4xf32>, %w: tensor<10x4xi8>, %b: tensor<10xf32>, %s: tensor<10xf32>)
    -> tensor<?x1x10xf32> {
  %l = tfm.linear none %x, %w, %b scale %s : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<10xf32> -> tensor<?x1x10xf32>
  return %l : tensor<?x1x10xf32>
}

// -----

// Not fused: the step does not end in a projection without activation.
// CHECK-LABEL: func.func @decode_step
// CHECK-NOT: decode_beam
func.func @decode_step(%x: tensor<?x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>)
    -> tensor<?x1x10xf32> {
  %l = tfm.linear relu %x, %w, %b : tensor<?x1x4xf32>, tensor<10x4xf32>, tensor<10xf32> -> tensor<?x1x10xf32>
  return %l : tensor<?x1x10xf32>
}
