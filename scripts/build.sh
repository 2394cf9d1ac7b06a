#!/usr/bin/env bash
# Configures (once) and builds tfmc into build/ (tools in build/bin).
# JOBS (default 2) sets the build parallelism; BUILD_DIR the build folder;
# extra arguments go to the first cmake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
if [[ ! -f "$build/build.ninja" ]]; then
  args=(-G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release)
  # clang-14 needs about half the memory of g++ on MLIR headers; lld links
  # in a fraction of a second.
  if command -v clang++-14 >/dev/null; then
    args+=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
  fi
  if command -v ld.lld >/dev/null || [[ -x /usr/lib/llvm-14/bin/ld.lld ]]; then
    args+=(-DLLVM_USE_LINKER=lld)
  fi
  mkdir -p "$build"
  echo "setup: [2/3] configure: cmake ${args[*]} $*"
  if ! cmake "${args[@]}" "$@" >"$build/configure.log" 2>&1; then
    cat "$build/configure.log" >&2
    echo "setup: error: cmake configure failed (log above, also in $build/configure.log)" >&2
    exit 1
  fi
  grep -E "^-- (tfmc:|MLIR |Found OneDNN)" "$build/configure.log" | sed 's/^/  /' || true
else
  echo "setup: [2/3] configure: $build/ already configured"
fi
echo "setup: [3/3] build: ninja -C $build -j ${JOBS:-2}"
ninja -C "$build" -j "${JOBS:-2}"
