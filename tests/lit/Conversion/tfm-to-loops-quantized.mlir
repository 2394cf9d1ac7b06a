// RUN: tfm-opt %s --tfm-to-loops | FileCheck %s
// RUN: tfm-opt %s --tfm-to-loops='use-library-calls=true library-min-rows=8' | FileCheck %s --check-prefix=LIB

// float16 weights: the loop kernel widens each weight as it loads it.
// CHECK-LABEL: func.func @half
// CHECK: call @tfm_linear_relu.DxDx8.16x8f16.16.DxDx16
// int8 weights: per row, max |x| -> levels / max (63), round half to even
// into an i8 stack row; int32 dot products of sign-extended bytes; then
// acc * (x scale * w scale[n]) + bias. A row whose max |x| is not finite
// (NaN kept by maximumf, or infinite) gets the scale NaN, and codes 0
// where x · 0 is NaN (never a NaN converted to an integer).
// CHECK-LABEL: func.func @quantized
// CHECK: call @tfm_linear_q_none.DxDx8.16x8i8.16.16.DxDx16
// CHECK-LABEL: func.func private @tfm_linear_relu.DxDx8.16x8f16
// CHECK: memref.load {{.*}} : memref<16x8xf16>
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK-LABEL: func.func private @tfm_linear_q_none.DxDx8.16x8i8
// CHECK: arith.constant 6.300000e+01 : f32
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<8xi8>
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt, %{{.+}}, %cst{{.*}} : f32
// CHECK: %[[FINITE:.+]] = arith.cmpf olt, %[[AMAX:.+]], %{{.+}} : f32
// CHECK: %[[SCALE:.+]] = arith.divf %[[AMAX]]
// CHECK: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK: arith.select %[[FINITE]], %[[SCALE]], %[[NAN]] : f32
// CHECK: %[[V:.+]] = math.roundeven
// CHECK: %[[NUMBER:.+]] = arith.cmpf ord, %[[V]], %[[V]] : f32
// CHECK: %[[CODE:.+]] = arith.select %[[NUMBER]], %[[V]], %{{.+}} : f32
// CHECK: arith.fptosi %[[CODE]] : f32 to i8
// CHECK: arith.extsi {{.*}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: arith.sitofp {{.*}} : i32 to f32

// Library path: rows >= 8 call the runtime's kernel for the weight type
// (the scale after the weight); fewer rows run the loop kernel.
// LIB-LABEL: func.func @half
// LIB: scf.if
// LIB: call @tfm_linear_relu.DxDx8.16x8f16
// LIB: call @tfm_rt_linear_f16({{.*}}) : (memref<?x?x?xf32>, memref<?x?xf16>, memref<?xf32>, memref<?x?x?xf32>, i32) -> ()
// LIB-LABEL: func.func @quantized
// LIB: call @tfm_linear_q_none
// LIB: call @tfm_rt_linear_i8({{.*}}) : (memref<?x?x?xf32>, memref<?x?xi8>, memref<?xf32>, memref<?xf32>, memref<?x?x?xf32>, i32) -> ()
func.func @half(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf16>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = tfm.linear relu %x, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf16>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

func.func @quantized(%x: tensor<?x?x8xf32>, %w: tensor<16x8xi8>, %b: tensor<16xf32>, %s: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = tfm.linear none %x, %w, %b scale %s : tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
