//===- KernelIsa.cpp - the library kernels' instruction set ---------------===//
#include "runtime/kernels/KernelIsa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
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

int64_t packed::aheadCacheLevel() {
  static const int64_t level = __builtin_cpu_is("intel") ? 2 : 1;
  return level;
}

bool packed::avx512::bfloat16DotAvailable() {
  static const bool ok = available() && __builtin_cpu_supports("avx512bf16");
  return ok;
}

namespace {

/// XCR0 (the state components the operating system saves), where OSXSAVE
/// says it can be read.
uint64_t enabledStateComponents() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
    return 0;
  uint32_t low, high;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

// Linux's arch_prctl requests for extended state (asm/prctl.h, 5.16) and
// the tile data's state component.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXTileData = 18;

} // namespace

bool packed::amx::cpuHasTiles() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (!avx512::bfloat16DotAvailable() ||
        !__get_cpuid_count(7, 0, &a, &b, &c, &d))
      return false;
    // CPUID.(7,0).EDX: AMX-BF16 (22), AMX-TILE (24), AMX-INT8 (25).
    const unsigned tiles = (1u << 22) | (1u << 24) | (1u << 25);
    // XCR0: XTILECFG (17) and XTILEDATA (18).
    const uint64_t state = (uint64_t(1) << 17) | (uint64_t(1) << kXTileData);
    return (d & tiles) == tiles && (enabledStateComponents() & state) == state;
  }();
  return ok;
}

bool packed::amx::available() {
  static const bool ok = [] {
    if (!cpuHasTiles())
      return false;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXTileData) != 0)
      return false;
    unsigned long permitted = 0;
    return syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) == 0 &&
           (permitted >> kXTileData & 1);
  }();
  return ok;
}

bool packed::runs(Isa isa) {
  switch (isa) {
  case Isa::Avx2:
    return availableOnThisCpu();
  case Isa::Avx512:
    return avx512::available();
  case Isa::Amx:
    return amx::available();
  }
  return false;
}

bool packed::avx512Vectors(Isa isa) {
  return isa != Isa::Avx2 && runs(Isa::Avx512);
}

IsaSupport packed::supportHere() {
  IsaSupport s;
  s.avx512 = runs(Isa::Avx512);
  s.amx = runs(Isa::Amx);
  s.amxRefused = amx::cpuHasTiles() && !s.amx;
  return s;
}

Isa packed::isaFor(const char *forced, IsaSupport here, std::string &note) {
  Isa best = here.amx ? Isa::Amx : here.avx512 ? Isa::Avx512 : Isa::Avx2;
  const char *bestName = here.amx ? "amx" : here.avx512 ? "avx512" : "avx2";
  note.clear();
  const bool asked = forced && *forced;
  if (asked && std::strcmp(forced, "avx2") == 0)
    return Isa::Avx2;
  if (asked && std::strcmp(forced, "avx512") == 0) {
    if (here.avx512)
      return Isa::Avx512;
    note = std::string("TFMC_KERNEL_ISA=avx512: this CPU does not run the "
                       "AVX-512 kernels (F, BW, VL and VNNI); using ") +
           bestName;
    return best;
  }
  if (asked && std::strcmp(forced, "amx") != 0) {
    note = std::string("TFMC_KERNEL_ISA=") + forced +
           ": expected avx2, avx512 or amx; using " + bestName;
    return best;
  }
  // Unset or "amx": the best there is.
  if (here.amxRefused)
    note = std::string("the operating system refused this process AMX's tile "
                       "state (arch_prctl ARCH_REQ_XCOMP_PERM); using ") +
           bestName;
  else if (asked && !here.amx)
    note = std::string("TFMC_KERNEL_ISA=amx: this CPU has no AMX tiles "
                       "(AMX-TILE, AMX-INT8 and AMX-BF16 with avx512_bf16); "
                       "using ") +
           bestName;
  return best;
}

bool packed::bfloat16DotRuns(Isa isa) {
  return avx512Vectors(isa) && avx512::bfloat16DotAvailable();
}

bool packed::tilesRun(Isa isa) { return isa == Isa::Amx && runs(Isa::Amx); }

bool packed::bfloat16Tiles(Isa isa) { return tilesRun(isa); }

Isa packed::preferredIsa() {
  static const Isa isa = [] {
    std::string note;
    Isa chosen = isaFor(std::getenv("TFMC_KERNEL_ISA"), supportHere(), note);
    if (!note.empty())
      std::fprintf(stderr, "tfmc: note: %s\n", note.c_str());
    return chosen;
  }();
  return isa;
}
