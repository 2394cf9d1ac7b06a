//===- KernelIsa.cpp - the library kernels' instruction set ---------------===//
#include "runtime/kernels/KernelIsa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tfmc::runtime;
using namespace tfmc::runtime::packed;

bool packed::availableOnThisCpu() {
  // Every AVX2 processor has F16C (clang 14 cannot query "f16c" itself).
  static const bool ok =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

bool packed::avx512::available() {
  static const bool ok = availableOnThisCpu() &&
                         __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni");
  return ok;
}

bool packed::avx512::bfloat16DotAvailable() {
  static const bool ok = available() && __builtin_cpu_supports("avx512bf16");
  return ok;
}

bool packed::runs(Isa isa) {
  return isa == Isa::Avx2 ? availableOnThisCpu() : avx512::available();
}

Isa packed::isaFor(const char *forced, bool avx512Runs, std::string &note) {
  Isa best = avx512Runs ? Isa::Avx512 : Isa::Avx2;
  const char *bestName = avx512Runs ? "avx512" : "avx2";
  note.clear();
  if (!forced || !*forced)
    return best;
  if (std::strcmp(forced, "avx2") == 0)
    return Isa::Avx2;
  if (std::strcmp(forced, "avx512") == 0) {
    if (!avx512Runs)
      note = std::string("TFMC_KERNEL_ISA=avx512: this CPU does not run the "
                         "AVX-512 kernels (F, BW, VL and VNNI); using ") +
             bestName;
    return best;
  }
  if (std::strcmp(forced, "amx") == 0) {
    note = std::string("TFMC_KERNEL_ISA=amx: this build has no AMX kernels; "
                       "using ") +
           bestName;
    return best;
  }
  note = std::string("TFMC_KERNEL_ISA=") + forced +
         ": expected avx2, avx512 or amx; using " + bestName;
  return best;
}

bool packed::bfloat16DotRuns(Isa isa) {
  return isa == Isa::Avx512 && avx512::bfloat16DotAvailable();
}

Isa packed::preferredIsa() {
  static const Isa isa = [] {
    std::string note;
    Isa chosen =
        isaFor(std::getenv("TFMC_KERNEL_ISA"), runs(Isa::Avx512), note);
    if (!note.empty())
      std::fprintf(stderr, "tfmc: note: %s\n", note.c_str());
    return chosen;
  }();
  return isa;
}
