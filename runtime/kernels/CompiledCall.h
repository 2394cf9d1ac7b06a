//===- CompiledCall.h - calls into compiled code ---------------*- C++ -*-===//
//
// Compiled code gets its buffers from the pool's `malloc` and writes into
// them without looking at the pointer: a failed allocation (a batch too
// large for the machine, a `ulimit -v`) would be a segfault inside JIT
// code. So every call into compiled code goes through callCompiled(),
// which marks the point the call started from (setjmp); an allocation
// that fails inside the call returns there (longjmp) with its size, and
// the blocks the call still held go back to the pool. Only compiled code's
// frames lie between the two points (the pool gives up its lock before it
// jumps), so no destructor is skipped.
//
// A member of a step team that runs out returns from its step as if it had
// finished: the team's meetings then fail for the others, who compute
// their own rows alone (StepTeam.h). It cannot jump out of a meeting: a
// kernel does not allocate through compiled code's `malloc`.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_COMPILEDCALL_H
#define RUNTIME_KERNELS_COMPILEDCALL_H

#include <cstddef>

namespace tfmc::runtime {

/// Calls a compiled function's C-interface entry with its packed arguments.
/// Returns 0 when it ran to its end, else the bytes of the allocation that
/// failed (the call was abandoned there: its outputs are incomplete).
size_t callCompiled(void (*entry)(void **), void **arguments);

/// `malloc` and `free` as compiled code sees them (bufferPoolSymbols()):
/// the pool's, with the blocks of the current call counted.
void *compiledMalloc(size_t bytes);
void compiledFree(void *block);

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_COMPILEDCALL_H
