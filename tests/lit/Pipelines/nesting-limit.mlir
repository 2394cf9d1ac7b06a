// tfm-opt refuses text nested deeper than MLIR's recursive parser can take
// with one located error (100000 levels overflowed the stack); 256 levels
// still parse and lower.
// RUN: %python -c "print('module {' * 256 + '}' * 256)" | tfm-opt --tfm-lower-to-llvm | FileCheck %s --check-prefix=OK
// RUN: %python -c "print('module {' * 100000 + '}' * 100000)" > %t.mlir
// RUN: not tfm-opt %t.mlir 2>&1 | FileCheck %s --check-prefix=DEEP -DFILE=%t.mlir
// RUN: %python -c "print('func.func private @f(' + 'tuple<' * 300 + 'f32' + '>' * 300 + ')')" | not tfm-opt 2>&1 | FileCheck %s --check-prefix=TYPES

// OK: module
// DEEP: error: [[FILE]]:1:2056: IR nested deeper than 256 levels
// DEEP-NOT: error
// TYPES: error: <stdin>:1:1557: IR nested deeper than 256 levels
