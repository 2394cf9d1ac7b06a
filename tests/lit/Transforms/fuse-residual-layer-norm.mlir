// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-fuse-residual-layer-norm))' | FileCheck %s

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x8xf32>, %[[Y:.+]]: tensor<?x?x8xf32>, %[[G:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.+]] = tfm.add_layer_norm %[[X]], %[[Y]], %[[G]], %[[B]] eps 1.000000e-05
// CHECK-NEXT: return %[[N]]
func.func @fused(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %s = tfm.add %x, %y : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %b eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// The sum has another use (pre-norm residual stream): nothing to fuse.
// CHECK-LABEL: func.func @shared_sum
// CHECK: tfm.add
// CHECK: tfm.layer_norm
// CHECK-NOT: tfm.add_layer_norm
func.func @shared_sum(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s = tfm.add %x, %y : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %b eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  return %n, %s : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
