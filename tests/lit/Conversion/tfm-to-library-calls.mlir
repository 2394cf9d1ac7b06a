// RUN: tfm-opt %s --tfm-to-loops=use-library-calls=1 | FileCheck %s
// RUN: tfm-opt %s --tfm-to-loops="use-library-calls=1 library-min-rows=8" | FileCheck %s --check-prefix=DISPATCH

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.+]]: memref<?x?x8xf32>, %[[W:.+]]: memref<16x8xf32>, %[[B:.+]]: memref<16xf32>, %[[OUT:.+]]: memref<?x?x16xf32>)
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[GELU:.+]] = arith.constant 2 : i32
// CHECK-DAG: %[[XC:.+]] = memref.cast %[[X]] : memref<?x?x8xf32> to memref<?x?x?xf32>
// CHECK-DAG: %[[WC:.+]] = memref.cast %[[W]] : memref<16x8xf32> to memref<?x?xf32>
// CHECK-DAG: %[[YC:.+]] = memref.cast %[[OUT]] : memref<?x?x16xf32> to memref<?x?x?xf32>
// CHECK: call @tfm_rt_linear(%[[XC]], %[[WC]], %{{.+}}, %[[YC]], %[[GELU]])
// CHECK-NOT: memref.copy
// CHECK: func.func private @tfm_rt_linear({{.+}}) attributes {llvm.emit_c_interface}
func.func @linear(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = tfm.linear gelu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// DISPATCH-LABEL: func.func @linear
// DISPATCH: %[[ROWS:.+]] = arith.muli
// DISPATCH: %[[FEW:.+]] = arith.cmpi ult, %[[ROWS]], %c8
// DISPATCH: scf.if %[[FEW]] {
// DISPATCH-NEXT: call @tfm_linear_gelu
// DISPATCH: } else {
// DISPATCH: call @tfm_rt_linear
