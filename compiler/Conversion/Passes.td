//===- Passes.td - tfm conversions -------------------------*- tablegen -*-===//
#ifndef COMPILER_CONVERSION_PASSES_TD
#define COMPILER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmToLoops : Pass<"tfm-to-loops", "ModuleOp"> {
  let summary = "lowers tfm ops on tensors to buffers and scf loops";
  let description = [{
    Converts every function to destination-passing style (each tensor
    result becomes a trailing memref argument that the caller owns, keeping
    the result's attributes), tensors to memrefs, and each tfm op to a loop
    nest over buffers: vectorisable row loops for linear layers, layer norm
    and residuals, and for attention one loop nest per (row, query) with
    the mask as a loop bound: for head sizes that are a multiple of 8 the
    keys and values are read in memory order (all heads of a key at once,
    scores in a [heads, keys] scratch row, an exact softmax per head),
    otherwise one nest per (row, head, query) with an online softmax over
    blocks of 16 keys; no [batch, heads, q, k] score tensor is ever stored. Intermediate buffers are
    allocated in the function and freed right after their last use; a
    result computed into a buffer of its own is computed in its destination
    argument instead (no buffer, no copy) when nothing uses the buffer after
    the copy the return would make.

    With `use-library-calls`, `tfm.linear` becomes a call of the runtime's
    `tfm_rt_linear` (C interface; oneDNN matmul with bias and activation)
    and every other op still becomes loops. With `library-min-rows=N`, a
    layer called with fewer than N rows (a decoder step at small batch: a
    matrix-vector product bound by weight streaming) runs the loop kernel;
    both are in the code and an `scf.if` on the row count picks one.

    `attention-prefetch-level=2` makes attention's prefetches of key and
    value rows fill L2 rather than L1 (the runtime picks it on Intel CPUs,
    where it measured faster).
  }];
  let options = [
    Option<"useLibraryCalls", "use-library-calls", "bool", "false",
           "Lower linear layers to calls of the runtime's library kernel "
           "(tfm_rt_linear, oneDNN inner product) instead of loops">,
    Option<"libraryMinRows", "library-min-rows", "int64_t", "1",
           "With library calls, layers with fewer rows (batch x sequence) "
           "than this run the loop kernel instead, chosen at run time">,
    Option<"attentionPrefetchLevel", "attention-prefetch-level", "int64_t",
           "1",
           "The cache level (1 or 2) attention's prefetches of key and "
           "value rows fill: memref.prefetch locality 3 or 2">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def TfmDropArgumentRoles : Pass<"tfm-drop-argument-roles", "ModuleOp"> {
  let summary = "removes the tfm.* role attributes from function arguments";
  let description = [{
    The `tfm.weight`, `tfm.input`, `tfm.cache` and `tfm.output` attributes
    tell the runtime how to bind arguments; it reads them at the `loops`
    stage. LLVM has no use for them (the translation to LLVM IR warns about
    each one, printing the whole function, which made the JIT several times
    slower), so they are dropped before the lowering to the LLVM dialect.
  }];
}

def TfmApproximateMath : Pass<"tfm-approximate-math", "ModuleOp"> {
  let summary = "replaces math.exp and math.erf by polynomial approximations";
  let description = [{
    LLVM lowers `math.exp` and `math.erf` to calls of scalar libm functions,
    which keeps the loops around them (softmax exponentials in attention,
    exact GELU) from being vectorised. This pass rewrites them with MLIR's
    polynomial approximations (range reduction plus a minimax polynomial,
    about 1 ulp for exp in float32) made of plain arith ops, so the loop
    vectoriser turns those loops into AVX-512 code. Runs at the start of the
    loops -> LLVM lowering; the `loops` stage still shows `math.exp`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // COMPILER_CONVERSION_PASSES_TD
