// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-quantize))' | FileCheck %s --check-prefix=I8
// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-quantize{compute-type=float16}))' | FileCheck %s --check-prefix=F16
// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-quantize{compute-type=bfloat16}))' | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-quantize{output-projection=false}))' | FileCheck %s --check-prefix=KEEP
// RUN: not tfm-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tfm-quantize{compute-type=int4}))' 2>&1 | FileCheck %s --check-prefix=BAD

// int8: the weight argument becomes i8 and gains a scale argument (one
// float32 per output row, tagged with the weight's name) that every linear
// using it takes as its `scale` operand. Biases stay float32.
// I8-LABEL: func.func @ffn
// I8-SAME: %[[W1:[^:]+]]: tensor<16x8xi8> {tfm.weight = "ff.linear1.weight"}
// I8-SAME: %[[B1:[^:]+]]: tensor<16xf32> {tfm.weight = "ff.linear1.bias"}
// I8-SAME: %[[W2:[^:]+]]: tensor<8x16xi8> {tfm.weight = "ff.linear2.weight"}
// I8-SAME: %[[P:[^:]+]]: tensor<41x8xi8> {tfm.weight = "linear.weight"}
// I8-SAME: %[[S1:[^:]+]]: tensor<16xf32> {tfm.weight_scale = "ff.linear1.weight"}
// I8-SAME: %[[S2:[^:]+]]: tensor<8xf32> {tfm.weight_scale = "ff.linear2.weight"}
// I8-SAME: %[[SP:[^:]+]]: tensor<41xf32> {tfm.weight_scale = "linear.weight"}
// I8: tfm.linear relu %{{.+}}, %[[W1]], %[[B1]] scale %[[S1]] : tensor<?x?x8xf32>, tensor<16x8xi8>, tensor<16xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
// I8: tfm.linear none %{{.+}}, %[[W2]], %{{.+}} scale %[[S2]]
// I8: tfm.linear none %{{.+}}, %[[P]], %{{.+}} scale %[[SP]]

// float16: only the weights' element type changes.
// F16-LABEL: func.func @ffn
// F16-SAME: tensor<16x8xf16> {tfm.weight = "ff.linear1.weight"}
// F16-SAME: tensor<8x16xf16> {tfm.weight = "ff.linear2.weight"}
// F16-SAME: tensor<41x8xf16> {tfm.weight = "linear.weight"}
// F16-NOT: weight_scale
// F16: tfm.linear relu %{{.+}} : tensor<?x?x8xf32>, tensor<16x8xf16>, tensor<16xf32> -> tensor<?x?x16xf32>

// bfloat16: the same with bf16.
// BF16-LABEL: func.func @ffn
// BF16-SAME: tensor<16x8xbf16> {tfm.weight = "ff.linear1.weight"}
// BF16-SAME: tensor<8x16xbf16> {tfm.weight = "ff.linear2.weight"}
// BF16-SAME: tensor<41x8xbf16> {tfm.weight = "linear.weight"}
// BF16-NOT: weight_scale
// BF16: tfm.linear relu %{{.+}} : tensor<?x?x8xf32>, tensor<16x8xbf16>, tensor<16xf32> -> tensor<?x?x16xf32>

// output-projection=false leaves linear.weight in float32.
// KEEP-LABEL: func.func @ffn
// KEEP-SAME: tensor<41x8xf32> {tfm.weight = "linear.weight"}
// KEEP: tfm.linear none %{{.+}} : tensor<?x?x8xf32>, tensor<41x8xf32>, tensor<41xf32> -> tensor<?x?x41xf32>

// BAD: tfm-quantize: compute-type must be 'int8', 'float16' or 'bfloat16', got 'int4'
func.func @ffn(%x: tensor<?x?x8xf32>,
               %w1: tensor<16x8xf32> {tfm.weight = "ff.linear1.weight"}, %b1: tensor<16xf32> {tfm.weight = "ff.linear1.bias"},
               %w2: tensor<8x16xf32> {tfm.weight = "ff.linear2.weight"}, %b2: tensor<8xf32> {tfm.weight = "ff.linear2.bias"},
               %wp: tensor<41x8xf32> {tfm.weight = "linear.weight"}, %bp: tensor<41xf32> {tfm.weight = "linear.bias"})
    -> tensor<?x?x41xf32> {
  %h = tfm.linear relu %x, %w1, %b1 : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  %y = tfm.linear none %h, %w2, %b2 : tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %l = tfm.linear none %y, %wp, %bp : tensor<?x?x8xf32>, tensor<41x8xf32>, tensor<41xf32> -> tensor<?x?x41xf32>
  return %l : tensor<?x?x41xf32>
}

// -----

// Left alone: a weight with another use (here also an embedding table), an
// untagged weight, a weight that is not a function argument.
// I8-LABEL: func.func @untouched
// I8-SAME: tensor<8x8xf32> {tfm.weight = "shared.weight"}
// I8-NOT: weight_scale
// I8-NOT: xi8>
func.func @untouched(%x: tensor<?x?x8xf32>, %ids: tensor<?x?xi32>,
                     %ws: tensor<8x8xf32> {tfm.weight = "shared.weight"}, %b: tensor<8xf32> {tfm.weight = "b"},
                     %wu: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %e = tfm.embedding %ids, %ws scale 1.0 : (tensor<?x?xi32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = tfm.linear none %x, %ws, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  %c = tfm.linear none %x, %wu, %b : tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
  return %e, %a, %c : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
