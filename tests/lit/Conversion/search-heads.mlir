// RUN: tfm-opt %s -split-input-file --tfm-to-loops | FileCheck %s --check-prefix=LOOPS
// RUN: tfm-opt %s -split-input-file --tfm-to-loops="use-library-calls=1 library-min-rows=8" | FileCheck %s --check-prefix=LIB

// Beam search's candidates fused into the output projection. As loops: row
// by row, the linear loop kernel makes the row's logits into a one-row
// buffer, then the runtime's candidate scan (the TopKScan beam search uses
// over decode_step's logits) writes the row's values and ids straight into
// the [rows, count] result arguments.
// LOOPS-LABEL: func.func @topk
// LOOPS-SAME: %{{[^:]+}}: index, %{{[^:]+}}: memref<?xi32>, %{{[^:]+}}: index, %[[VALUES:[^:]+]]: memref<?x?xf32>, %[[IDS:[^:]+]]: memref<?x?xi32>)
// LOOPS: %[[LOGITS:.+]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x10xf32>
// LOOPS: scf.for %[[R:.+]] = %{{.+}} to
// LOOPS: call @tfm_linear_none
// LOOPS: %[[R64:.+]] = arith.index_cast %[[R]] : index to i64
// LOOPS: %[[VC:.+]] = memref.cast %[[VALUES]]
// LOOPS: %[[IC:.+]] = memref.cast %[[IDS]]
// LOOPS: call @tfm_rt_topk_scan(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[R64]], %[[VC]], %[[IC]]) : (memref<?x?x?xf32>, memref<?xi32>, i64, memref<?xi32>, i64, memref<?x?xf32>, memref<?x?xi32>) -> ()
// LOOPS-NOT: memref.copy
// LOOPS: func.func private @tfm_rt_topk_scan({{.+}}) attributes {llvm.emit_c_interface}
// With library calls: below 8 rows the same loops, from 8 the runtime's
// fused kernel (logits a cache-sized block at a time, never stored).
// LIB-LABEL: func.func @topk
// LIB: %[[FEW:.+]] = arith.cmpi ult, %{{.+}}, %c8
// LIB: scf.if %[[FEW]] {
// LIB: call @tfm_rt_topk_scan
// LIB: } else {
// LIB: call @tfm_rt_linear_topk(%{{.+}}) : (memref<?x?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?xi32>, i64, memref<?xi32>, memref<?x?xf32>, memref<?x?xi32>) -> ()
func.func @topk(%x: tensor<?x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>, %k: index) -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<?x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %v, %i : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// float16 and bfloat16 weights have their own library kernels.
// LIB-LABEL: func.func @topk_bf16
// LIB: call @tfm_rt_linear_topk_bf16
func.func @topk_bf16(%x: tensor<?x1x4xf32>, %w: tensor<10x4xbf16>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>, %k: index) -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %v, %i = tfm.linear_topk %x, %w, %b never %n eos %e allow %a count %k : tensor<?x1x4xf32>, tensor<10x4xbf16>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %v, %i : tensor<?x?xf32>, tensor<?x?xi32>
}

// -----

// Greedy's choice: as loops, the linear loop kernel and a compiled scan;
// with library calls from 8 rows, the runtime's fused kernel.
// LOOPS-LABEL: func.func @argmax
// LOOPS: call @tfm_linear_none
// LOOPS: call @tfm_argmax_scan
// LIB-LABEL: func.func @argmax
// LIB: scf.if
// LIB: call @tfm_argmax_scan
// LIB: } else {
// LIB: call @tfm_rt_linear_argmax(
// The compiled scan hands a choice whose value is NaN or infinite (not
// |v| < inf) over as kNotFiniteChoice (-2).
// LOOPS-LABEL: func.func private @tfm_argmax_scan
// LOOPS: %[[FOUND:.+]]:2 = scf.for
// LOOPS: %[[ABS:.+]] = math.absf %[[FOUND]]#1 : f32
// LOOPS: %[[INF:.+]] = arith.constant 0x7F800000 : f32
// LOOPS: %[[FINITE:.+]] = arith.cmpf olt, %[[ABS]], %[[INF]] : f32
// LOOPS: %[[CHOSE:.+]] = arith.cmpi sge, %[[FOUND]]#0
// LOOPS: %[[NOT:.+]] = arith.xori %[[FINITE]]
// LOOPS: %[[BAD:.+]] = arith.andi %[[CHOSE]], %[[NOT]] : i1
// LOOPS: %[[CODE:.+]] = arith.constant -2 : i32
// LOOPS: %[[TOKEN:.+]] = arith.select %[[BAD]], %[[CODE]], %[[FOUND]]#0 : i32
// LOOPS: memref.store %[[TOKEN]]
func.func @argmax(%x: tensor<?x1x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  %t = tfm.linear_argmax %x, %w, %b never %n eos %e allow %a : tensor<?x1x4xf32>, tensor<10x4xf32>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}

// -----

// An int8 projection: as loops, the quantized linear loop kernel (its
// scales) and the scan; with library calls the runtime's int8 kernel, the
// scale after the weight as for tfm_rt_linear_i8.
// LOOPS-LABEL: func.func @argmax_i8
// LOOPS: call @tfm_linear_q_none
// LOOPS: call @tfm_argmax_scan
// LIB-LABEL: func.func @argmax_i8
// LIB: scf.if
// LIB: call @tfm_argmax_scan
// LIB: } else {
// LIB: call @tfm_rt_linear_argmax_i8(%{{.+}}) : (memref<?x?x?xf32>, memref<?x?xi8>, memref<?xf32>, memref<?xf32>, memref<?xi32>, i64, memref<?xi32>, memref<?xi32>) -> ()
func.func @argmax_i8(%x: tensor<?x1x4xf32>, %w: tensor<10x4xi8>, %b: tensor<10xf32>, %s: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>) -> tensor<?xi32> {
  %t = tfm.linear_argmax %x, %w, %b scale %s never %n eos %e allow %a : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32>, tensor<10xf32> -> tensor<?xi32>
  return %t : tensor<?xi32>
}

// -----

// Beam's candidates over an int8 projection: the quantized loop kernel
// and the candidate scan, or the runtime's int8 kernel (scale after the
// weight).
// LOOPS-LABEL: func.func @topk_i8
// LOOPS: call @tfm_linear_q_none
// LOOPS: call @tfm_rt_topk_scan
// LIB-LABEL: func.func @topk_i8
// LIB: call @tfm_rt_topk_scan
// LIB: } else {
// LIB: call @tfm_rt_linear_topk_i8(%{{.+}}) : (memref<?x?x?xf32>, memref<?x?xi8>, memref<?xf32>, memref<?xf32>, memref<?xi32>, i64, memref<?xi32>, memref<?x?xf32>, memref<?x?xi32>) -> ()
func.func @topk_i8(%x: tensor<?x1x4xf32>, %w: tensor<10x4xi8>, %b: tensor<10xf32>, %s: tensor<10xf32>, %n: tensor<?xi32>, %e: index, %a: tensor<?xi32>, %k: index) -> (tensor<?x?xf32>, tensor<?x?xi32>) {
  %v, %i = tfm.linear_topk %x, %w, %b scale %s never %n eos %e allow %a count %k : tensor<?x1x4xf32>, tensor<10x4xi8>, tensor<10xf32>, tensor<?xi32>, tensor<?xi32>, tensor<10xf32> -> tensor<?x?xf32>, tensor<?x?xi32>
  return %v, %i : tensor<?x?xf32>, tensor<?x?xi32>
}
