#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, builds examples/embed
# against it with find_package(tfmc), and runs it and the installed tfmc.
#   install-and-embed.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -euo pipefail
build=$1 src=$2 cxx=$3
prefix=$build/install-test/prefix
work=$build/install-test/embed
rm -rf "$build/install-test"
cmake --install "$build" --prefix "$prefix" > /dev/null
test -f "$prefix/include/tfmc/Translator.h"
test -f "$prefix/lib/cmake/tfmc/tfmcConfig.cmake"
cmake -S "$src/examples/embed" -B "$work" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" > "$build/install-test/configure.log"
cmake --build "$work" > "$build/install-test/build.log"
# (A trailing "." keeps the empty line of the empty sentence.)
out=$("$work/embed" "$src/examples/zh-en/model.json" "我们明天去公园吧。" ""; echo .)
expected=$'Let\'s go to the park tomorrow.\n\n.'
if [[ "$out" != "$expected" ]]; then
  echo "embed printed: '$out'" >&2
  exit 1
fi
# An error is a message and a non-zero exit, not a crash.
if "$work/embed" "$build/install-test/missing.json" "x" 2> "$build/install-test/err.txt"; then
  echo "embed succeeded on a missing model" >&2
  exit 1
fi
grep -q "error: .*missing.json: cannot open file" "$build/install-test/err.txt"
# The installed driver runs.
echo "谢谢。" | "$prefix/bin/tfmc" translate "$src/examples/zh-en/model.json" --no-cache
# The installed Python module imports and translates.
PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c "
import sys, tfmc
out = tfmc.Translator(sys.argv[1], use_cache=False).translate(['我们明天去公园吧。'])
assert out == [\"Let's go to the park tomorrow.\"], out
" "$src/examples/zh-en/model.json"
echo "install-and-embed: ok"
