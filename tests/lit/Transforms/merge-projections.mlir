// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-merge-projections))' | FileCheck %s

// Three projections of one input of one position per row (a decoder
// step's) become one linear over a packed weight argument (named after its
// parts, built by the runtime) and three slices; the parts' arguments, now
// unused, are removed.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x1x8xf32>,
// CHECK-SAME: %[[W:[^:]+]]: tensor<24x8xf32> {tfm.weight = "q.weight|k.weight|v.weight"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<24xf32> {tfm.weight = "q.bias|k.bias|v.bias"}
// CHECK-NEXT: %[[M:.+]] = tfm.linear none %[[X]], %[[W]], %[[B]] : {{.+}} -> tensor<?x1x24xf32>
// CHECK-NEXT: %[[Q:.+]] = tfm.slice %[[M]][0] : tensor<?x1x24xf32> -> tensor<?x1x8xf32>
// CHECK-NEXT: %[[K:.+]] = tfm.slice %[[M]][8]
// CHECK-NEXT: %[[V:.+]] = tfm.slice %[[M]][16]
// CHECK-NEXT: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x1x8xf32>,
               %wq: tensor<8x8xf32> {tfm.weight = "q.weight"}, %bq: tensor<8xf32> {tfm.weight = "q.bias"},
               %wk: tensor<8x8xf32> {tfm.weight = "k.weight"}, %bk: tensor<8xf32> {tfm.weight = "k.bias"},
               %wv: tensor<8x8xf32> {tfm.weight = "v.weight"}, %bv: tensor<8xf32> {tfm.weight = "v.bias"})
    -> (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>) {
  %q = tfm.linear none %x, %wq, %bq : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  %k = tfm.linear none %x, %wk, %bk : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  %v = tfm.linear none %x, %wv, %bv : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  return %q, %k, %v : tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>
}

// -----

// Not merged: an activation, a lone projection, weights that are not tagged
// function arguments.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tfm.slice
// CHECK-COUNT-3: tfm.linear
func.func @untouched(%x: tensor<?x1x8xf32>, %y: tensor<?x1x8xf32>,
                     %w: tensor<8x8xf32> {tfm.weight = "w"}, %b: tensor<8xf32> {tfm.weight = "b"},
                     %u: tensor<8x8xf32>, %c: tensor<8xf32>)
    -> (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>) {
  %r = tfm.linear relu %x, %w, %b : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  %s = tfm.linear none %y, %w, %b : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  %t = tfm.linear none %x, %u, %c : tensor<?x1x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x1x8xf32>
  return %r, %s, %t : tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>
}

// -----

// Not merged: inputs of many positions per row (an encoder's), where the
// slices would copy the merged output again; the arguments stay.
// CHECK-LABEL: func.func @positions
// CHECK-SAME: {tfm.weight = "q.weight"}
// CHECK-NOT: tfm.slice
// CHECK-COUNT-2: tfm.linear none
// CHECK-NOT: tfm.slice
func.func @positions(%x: tensor<?x?x8xf32>,
                     %wq: tensor<8x8xf32> {tfm.weight = "q.weight"}, %bq: tensor<8xf32> {tfm.weight = "q.bias"},
                     %wk: tensor<8x8xf32> {tfm.weight = "k.weight"}, %bk: tensor<8xf32> {tfm.weight = "k.bias"})
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %q = tfm.linear none %x, %wq, %bq : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %k = tfm.linear none %x, %wk, %bk : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  return %q, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
