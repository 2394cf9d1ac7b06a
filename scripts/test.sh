#!/usr/bin/env bash
# Installs what is missing (with the PyTorch reference packages), builds,
# and runs every test (GoogleTest suites, the lit suite, the importer's,
# the Python module's and the server's tests) under ctest.
#   scripts/test.sh               # the suite (what .ci/run runs)
#   scripts/test.sh --sanitize    # also: the whole suite in a build with
#                                 # AddressSanitizer + UndefinedBehavior-
#                                 # Sanitizer (build-asan/), and the
#                                 # concurrency tests with ThreadSanitizer
#                                 # (build-tsan/)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=1 ;;
    *) echo "test: error: unknown argument '$arg' (only --sanitize)" >&2; exit 2 ;;
  esac
done
# --reference: the importer's tests (tools/tfmc-import-pytorch) need
# PyTorch and pytest.
scripts/setup.sh --reference
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}"
if ((!sanitize)); then
  exit 0
fi

# Sanitizer builds: separate build folders, the same sources. Left out
# there: the Python module's tests (an instrumented extension needs the
# sanitizer runtime preloaded into the interpreter) and the install test
# (its consumer program is built without the sanitizer runtime).
sanitized() {
  local dir=$1 llvm=$2 flags=$3
  shift 3
  echo "test: $dir: $flags"
  # LLVM_USE_SANITIZER also keeps LLVM's CMake from linking shared
  # libraries with -z defs (the sanitizer runtime comes with the program).
  BUILD_DIR=$dir scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DLLVM_USE_SANITIZER=$llvm" \
    "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags"
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "$dir" --output-on-failure -j "${JOBS:-2}" "$@"
}
start=$SECONDS
sanitized build-asan "Address;Undefined" "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  -E "python-module|install-and-embed"
# oneDNN runs on GNU OpenMP, which ThreadSanitizer cannot see into: the
# concurrency tests of the compiled-loops path and the cache run there.
# The step team's own threads (lock-free meetings) and the positional
# table's on-demand rows run there too.
sanitized build-tsan Thread "-fsanitize=thread" \
  -R "Concurrent.*_loops|CompileCache|CacheSession|StepTeam|PositionTable|Threads\..*_loops"
echo "test: sanitizer suites took $((SECONDS - start)) s"
