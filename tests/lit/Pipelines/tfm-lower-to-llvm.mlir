// RUN: tfm-opt %s --tfm-lower-to-llvm | FileCheck %s

// The whole ladder ends in the LLVM dialect with a C interface per entry;
// GELU's erf is a polynomial (tfm-approximate-math), not a libm call.
// CHECK-NOT: tfm.
// CHECK-NOT: @erff
// CHECK-DAG: llvm.func @step(
// CHECK-DAG: llvm.func @_mlir_ciface_step(
// CHECK-DAG: llvm.func @tfm_linear_gelu
// CHECK-DAG: llvm.intr.fma
func.func @step(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> attributes {llvm.emit_c_interface} {
  %h = tfm.linear gelu %x, %w, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %b eps 1.0e-5 : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}
