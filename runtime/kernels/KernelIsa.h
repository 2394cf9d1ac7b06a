//===- KernelIsa.h - the library kernels' instruction set -----*- C++ -*-===//
//
// The library kernels (the packed linear layers, beam search's scan of
// logits) come in an AVX2 + FMA and an AVX-512 variant, chosen once per
// process: the best this CPU runs, unless TFMC_KERNEL_ISA in the
// environment asks for another ("avx2" forces the AVX2 variants, so a test
// run on an AVX-512 host covers them; "avx512" and "amx" ask for what the
// CPU or this build may not have, and get the best there is with one
// `note:` line). Every kernel that has variants asks preferredIsa(), so a
// process never mixes them. Compiled with or without oneDNN.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_KERNELISA_H
#define RUNTIME_KERNELS_KERNELISA_H

#include <string>

namespace tfmc::runtime::packed {

/// AVX2 with FMA (and F16C, which every AVX2 processor has): what the
/// kernels need at all; callers fall back to oneDNN or plain loops without.
bool availableOnThisCpu();

/// The instruction sets the kernels are written for.
enum class Isa { Avx2, Avx512 };
/// Whether this CPU runs the kernels of `isa`.
bool runs(Isa isa);
/// The best of them here (AVX-512 where it runs and TFMC_KERNEL_ISA is not
/// "avx2"); what every kernel with variants uses by default. The first call
/// prints isaFor()'s note, if any, to stderr.
Isa preferredIsa();
/// Whether bfloat16 panels run through vdpbf16ps with the kernels of `isa`
/// (AVX-512 on a CPU with avx512_bf16); otherwise through the AVX2 kernel's
/// widened pairs, the same sums at float32's multiply rate.
bool bfloat16DotRuns(Isa isa = preferredIsa());
/// The kernels for a TFMC_KERNEL_ISA value (`forced`, null when unset) on a
/// CPU where AVX-512 does or does not run: "avx2" forces the AVX2 kernels,
/// "avx512" asks for the AVX-512 ones; a value that cannot be honoured
/// ("avx512" without AVX-512, "amx": this build has no AMX kernels, or an
/// unknown name) gives the best kernels here and one line in `note`.
Isa isaFor(const char *forced, bool avx512Runs, std::string &note);

namespace avx512 {
/// AVX-512 F/BW/VL with VNNI (and AVX2 + FMA): what the AVX-512 kernels use.
bool available();
/// ... and avx512_bf16 (vdpbf16ps), which bfloat16 panels need there.
bool bfloat16DotAvailable();
} // namespace avx512

} // namespace tfmc::runtime::packed

#endif // RUNTIME_KERNELS_KERNELISA_H
