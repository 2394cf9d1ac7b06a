// RUN: tfm-opt %s --tfm-lower-to-loops | tfm-opt --tfm-lower-to-loops | FileCheck %s
// RUN: tfm-opt %s --tfm-lower-to-loops | tfm-opt --tfm-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// Stage-3 IR (`--emit=loops`, a dump's 03-loops.mlir) lowered once more:
// a buffer already freed is not freed again (the second run had put a
// second memref.dealloc after every first one: a double free in the
// compiled code).
// CHECK-LABEL: func.func @early_free
// CHECK: %[[A:.+]] = memref.alloc
// CHECK: memref.dealloc %[[A]]
// CHECK-NOT: memref.dealloc
// CHECK: return
// LLVM-LABEL: llvm.func @early_free
// LLVM: llvm.call @free
// LLVM-NOT: llvm.call @free
// LLVM: llvm.return
func.func @early_free(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %z = tfm.linear relu %y, %w, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}
