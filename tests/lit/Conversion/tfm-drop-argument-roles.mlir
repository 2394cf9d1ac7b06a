// RUN: tfm-opt %s --tfm-drop-argument-roles | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.+}}: memref<?x8xf32>, %{{.+}}: memref<?x8xf32> {llvm.noalias})
// CHECK-NOT: tfm.
func.func @step(%x: memref<?x8xf32> {tfm.input = "x"}, %y: memref<?x8xf32> {tfm.output = "y", llvm.noalias}) {
  return
}
