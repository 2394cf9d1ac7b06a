#!/usr/bin/env bash
# Builds (once, in build-fuzz/) and runs one libFuzzer target with
# AddressSanitizer and UndefinedBehaviorSanitizer.
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]
#   TARGET: model-description safetensors vocabulary sentencepiece id-line
#           tokenizers tfm-ir
# Seeds: tests/fuzz/corpus/TARGET (committed); the growing corpus and any
# crash files go to build-fuzz/corpus/TARGET and build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
build=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -d tests/fuzz/corpus/$target ]]; then
  echo "fuzz: unknown target '$target' (see tests/fuzz/CMakeLists.txt)" >&2
  exit 2
fi
if [[ ! -f "$build/build.ninja" ]]; then
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g"
  mkdir -p "$build"
  echo "fuzz: configure $build"
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DLLVM_USE_LINKER=lld -DTFMC_FUZZ=ON \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" > "$build/configure.log"
fi
echo "fuzz: build fuzz-$target"
ninja -C "$build" -j "${JOBS:-2}" "fuzz-$target"
mkdir -p "$build/corpus/$target" "$build/crashes/$target"
echo "fuzz: run fuzz-$target for $seconds s"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  "$build/bin/fuzz-$target" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$build/crashes/$target/" "$@" \
  "$build/corpus/$target" "tests/fuzz/corpus/$target"
