//===- KernelIsa.h - the library kernels' instruction set -----*- C++ -*-===//
//
// The library kernels (the packed linear layers, beam search's scan of
// logits) come in an AVX2 + FMA and an AVX-512 variant, and the int8 and
// bfloat16 linear layers in an AMX one as well (tile multiplies; their
// float32 and float16 layers and the scans run the AVX-512 kernels then),
// chosen once per process: the best this CPU runs, unless TFMC_KERNEL_ISA
// in the environment asks for another ("avx2" forces the AVX2 variants, so
// a test run on an AVX-512 host covers them; "avx512" keeps AMX's tiles
// out; "amx" asks for what the CPU or its operating system may not give,
// and gets the best there is with one `note:` line). AMX needs the
// kernel's leave to use the tile state (arch_prctl ARCH_REQ_XCOMP_PERM,
// Linux 5.16 on), asked for once; where it is refused the kernels fall back
// to AVX-512 with one `note:` line. Every kernel that has variants asks
// preferredIsa(), so a process never mixes them. Compiled with or without
// oneDNN.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_KERNELISA_H
#define RUNTIME_KERNELS_KERNELISA_H

#include <string>

namespace tfmc::runtime::packed {

/// AVX2 with FMA (and F16C, which every AVX2 processor has): what the
/// kernels need at all; callers fall back to oneDNN or plain loops without.
bool availableOnThisCpu();

/// The instruction sets the kernels are written for. Amx is Avx512 with
/// the int8 and bfloat16 layers on AMX tiles.
enum class Isa { Avx2, Avx512, Amx };
/// Whether this CPU runs the kernels of `isa`.
bool runs(Isa isa);
/// Whether `isa` runs the AVX-512 vector kernels (Avx512, and Amx for
/// everything but its tiles) on this CPU.
bool avx512Vectors(Isa isa);
/// The best of them here (AMX, else AVX-512, where they run and
/// TFMC_KERNEL_ISA asks for nothing less); what every kernel with variants
/// uses by default. The first call prints isaFor()'s note, if any, to
/// stderr.
Isa preferredIsa();
/// Whether bfloat16 panels run through vdpbf16ps (or AMX tiles) with the
/// kernels of `isa` (AVX-512 on a CPU with avx512_bf16); otherwise through
/// the AVX2 kernel's widened pairs, the same sums at float32's multiply
/// rate.
bool bfloat16DotRuns(Isa isa = preferredIsa());
/// Whether `isa` runs AMX tiles here (Amx, where this process has them).
bool tilesRun(Isa isa = preferredIsa());
/// Whether the packed kernels run bfloat16 panels on AMX tiles with `isa`
/// (tilesRun(isa), at every row count): their sums are not vdpbf16ps's bit
/// for bit (PackedGemmAmx.cpp).
bool bfloat16Tiles(Isa isa = preferredIsa());
/// The cache level memory requested ahead of its use should fill on this
/// CPU: 2 (L2) on Intel CPUs, 1 (L1) elsewhere. The AVX-512 float tiles'
/// requests for the panels ahead (PackedGemmAvx512.cpp) and attention's for
/// keys and values (tfm-to-loops' attention-prefetch-level, which the
/// runtime sets from this; AttentionLowering.cpp) were each measured
/// faster into L2 on a Sapphire Rapids class Xeon and into L1 on AMD EPYC.
int64_t aheadCacheLevel();

/// What a machine offers the kernels.
struct IsaSupport {
  /// The AVX-512 kernels run.
  bool avx512 = false;
  /// AMX tiles run: the CPU has them (and avx512_bf16) and the operating
  /// system lets this process use them.
  bool amx = false;
  /// The CPU has AMX, but the operating system refused its tile state.
  bool amxRefused = false;
};
/// This machine's.
IsaSupport supportHere();

/// The kernels for a TFMC_KERNEL_ISA value (`forced`, null when unset) on
/// a machine that offers `here`: "avx2" forces the AVX2 kernels, "avx512"
/// the AVX-512 ones without AMX, "amx" asks for AMX; a value that cannot be
/// honoured ("avx512" without AVX-512, "amx" without AMX, or an unknown
/// name) gives the best kernels here and one line in `note`, as does an
/// AMX that the operating system refused (unless the value asked for less).
Isa isaFor(const char *forced, IsaSupport here, std::string &note);

namespace avx512 {
/// AVX-512 F/BW/VL with VNNI (and AVX2 + FMA): what the AVX-512 kernels use.
bool available();
/// ... and avx512_bf16 (vdpbf16ps), which bfloat16 panels need there.
bool bfloat16DotAvailable();
} // namespace avx512

namespace amx {
/// AMX-TILE, AMX-INT8 and AMX-BF16 in the CPU (CPUID), its tile state
/// enabled by the operating system (XCR0), and the AVX-512 kernels with
/// avx512_bf16 (the tiles' k remainders run there).
bool cpuHasTiles();
/// cpuHasTiles(), and this process was given the tile state (asked for
/// once, on the first call).
bool available();
} // namespace amx

} // namespace tfmc::runtime::packed

#endif // RUNTIME_KERNELS_KERNELISA_H
