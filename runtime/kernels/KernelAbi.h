//===- KernelAbi.h - runtime kernels called from compiled code --*- C++ -*-===//
//
// The C ABI between JIT-compiled code and the runtime's library kernels.
// Compiled code calls `_mlir_ciface_<name>` with pointers to memref
// descriptors; a kernel never throws or aborts: it records a failure that
// the runtime turns into an llvm::Error after the call (takeKernelError).
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_KERNELABI_H
#define RUNTIME_KERNELS_KERNELABI_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::runtime {

/// A memref descriptor as MLIR's LLVM lowering lays it out.
template <int Rank, typename T = float> struct MemRefDescriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

/// Activation codes shared with the compiler's lowering (tfm::Activation).
enum class KernelActivation : int32_t { None = 0, Relu = 1, Gelu = 2, Silu = 3 };

/// int8 linear layers quantize input rows to [-63, 63] (7 bits: AVX2's
/// unsigned-by-signed byte products, summed in pairs into int16, cannot
/// saturate). Must equal mlir::tfm::kActivationLevels (a unit test checks).
constexpr int kActivationLevels = 63;

/// The token greedy search's fused choice (tfm.linear_argmax) gives a row
/// whose chosen logit is NaN or infinite (the model's arithmetic overflowed
/// float32): the search ends the row there and says so. Must equal
/// mlir::tfm::kNotFiniteChoice (a unit test checks).
constexpr int32_t kNotFiniteChoice = -2;

/// Whether this build has library (oneDNN) kernels.
bool haveLibraryKernels();

/// The fewest rows (batch x sequence) from which compiled code should call
/// the library kernel of a linear layer rather than its loop kernel: 1
/// where the packed-panel kernels run (they beat the loop kernels at every
/// row count: on the base model at batch 1, float16 1.9 -> 0.7 s), else 8
/// (oneDNN loses to the loops on a few rows).
int64_t libraryKernelMinRows();

/// Sets the threads library kernels may use (oneDNN's OpenMP pool), for
/// the calling thread; kernelThreads() reads it back.
void setKernelThreads(int threads);
int kernelThreads();

/// The most rows at which a library linear layer (and greedy's and beam's
/// fused projections) computes the same results whatever kernelThreads()
/// is: the packed kernels split only the columns between the threads. 0
/// where they do not run (oneDNN's GEMM, and the chunks of a larger layer,
/// choose their blocking or kernel by the thread count).
int64_t threadNeutralRows();

/// Library kernels keep per-weight data (int8 weights reordered for the
/// GEMM, their row sums) keyed by the weight's address; the owner of a
/// weight buffer calls this before freeing it.
void releaseKernelWeights(const void *weight);

/// The first kernel failure since the last call, or "" (and clears it).
std::string takeKernelError();

/// Symbols the JIT must resolve to the runtime's kernels (including the
/// buffer pool's).
std::vector<std::pair<std::string, void *>> kernelSymbols();

/// `malloc` and `free` for compiled code: a pool that keeps freed buffers
/// per size class for reuse (BufferPool.cpp), whose failures end the call
/// (CompiledCall.h).
std::vector<std::pair<std::string, void *>> bufferPoolSymbols();

/// Bytes of the pool's huge-page blocks (those above 2 MB): handed out,
/// idle, and the most ever handed out at once; the same for its heap blocks.
/// In use and idle together stay within max(64 MB, the most ever handed
/// out) for the first, max(24 MB, ...) for the second.
struct PoolCounters {
  size_t liveMapped = 0, idleMapped = 0, highWater = 0;
  size_t liveHeap = 0, idleHeap = 0, heapHighWater = 0;
};
PoolCounters bufferPoolCounters();

/// The same pool for the runtime's own large buffers (the decoder's KV
/// caches, DecoderArena.h): 64-byte aligned, contents unspecified; nullptr
/// when the system has no memory left. They share its blocks, and so their
/// pages, with compiled code's buffers.
void *poolAllocate(size_t bytes);
void poolRelease(void *buffer);
/// Gives every idle block back to the system (a server after a batch far
/// larger than its usual ones; tests that start from an empty pool).
void poolTrim();

/// ... and the search kernels' (SearchKernels.cpp: the candidate scan the
/// loop kernels of tfm.linear_topk call), in every build.
std::vector<std::pair<std::string, void *>> searchKernelSymbols();

} // namespace tfmc::runtime

#endif // RUNTIME_KERNELS_KERNELABI_H
