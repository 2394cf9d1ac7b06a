// RUN: tfm-opt %s --tfm-to-loops="attention-prefetch-level=2" | FileCheck %s --implicit-check-not='locality<3>'
// RUN: tfm-opt %s --tfm-to-loops | FileCheck %s --check-prefix=L1 --implicit-check-not='locality<2>'
// RUN: not tfm-opt %s --tfm-to-loops="attention-prefetch-level=3" 2>&1 | FileCheck %s --check-prefix=BAD

// attention-prefetch-level=2 (what the runtime asks for on Intel CPUs):
// the value rows prefetched while the keys are scored, and the next row's
// keys while the values are summed, fill L2 (locality 2) rather than L1
// (locality 3, the default); nothing else changes.
// CHECK-LABEL: func.func private @tfm_attention_causal_h2
// CHECK: memref.prefetch %{{.+}}, read, locality<2>, data
// CHECK-COUNT-2: vector.fma
// CHECK: math.exp %{{.+}} : vector<8xf32>
// CHECK: memref.prefetch %{{.+}}, read, locality<2>, data
// L1-LABEL: func.func private @tfm_attention_causal_h2
// L1: memref.prefetch %{{.+}}, read, locality<3>, data
// L1: memref.prefetch %{{.+}}, read, locality<3>, data
// BAD: error: attention-prefetch-level must be 1 or 2, not 3
func.func @attention_l2(%q: tensor<?x?x16xf32>, %k: memref<?x?x16xf32>, %p: index) -> tensor<?x?x16xf32> {
  %o = tfm.attention causal %q, %k, %k heads 2 scale 0.5 query_offset(%p) kv_length(%p)
      : (tensor<?x?x16xf32>, memref<?x?x16xf32>, memref<?x?x16xf32>, index, index) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}
