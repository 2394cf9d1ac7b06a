// RUN: tfm-opt %s --tfm-approximate-math | FileCheck %s

// exp and erf become arith/math.fma polynomials that the loop vectoriser can
// widen; other math ops are left alone.
// CHECK-LABEL: func.func @softmax_weight
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: arith.bitcast
// CHECK: return
func.func @softmax_weight(%s: f32, %m: f32) -> f32 {
  %d = arith.subf %s, %m : f32
  %w = math.exp %d : f32
  return %w : f32
}

// CHECK-LABEL: func.func @gelu_erf
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: return
func.func @gelu_erf(%x: f32) -> f32 {
  %e = math.erf %x : f32
  return %e : f32
}

// CHECK-LABEL: func.func @norm
// CHECK: math.sqrt
func.func @norm(%x: f32) -> f32 {
  %r = math.sqrt %x : f32
  return %r : f32
}
