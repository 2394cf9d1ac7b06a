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
# The installed driver runs, and the installed server (tfmc serve runs
# tfmc-serve, which must find libMLIR/libLLVM as tfmc does): it checks its
# options before loading anything.
echo "谢谢。" | "$prefix/bin/tfmc" translate "$src/examples/zh-en/model.json" --no-cache
if "$prefix/bin/tfmc" serve "$src/examples/zh-en/model.json" --port 99999 2> "$build/install-test/serve.txt"; then
  echo "installed tfmc serve accepted --port 99999" >&2
  exit 1
fi
grep -q "error: --port must be 0 to 65535" "$build/install-test/serve.txt"
# The installed Python module imports and translates.
PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c "
import sys, tfmc
out = tfmc.Translator(sys.argv[1], use_cache=False).translate(['我们明天去公园吧。'])
assert out == [\"Let's go to the park tomorrow.\"], out
" "$src/examples/zh-en/model.json"
# tfmc-convert from a copy of the installed tree, away from the checkout:
# an OPUS-MT-style directory (random weights, tiny SentencePiece models
# trained on the shared Tatoeba text) is converted and translated.
copy=$build/install-test/copied-prefix
cp -a "$prefix" "$copy"
marian=$build/install-test/opus-mt-tiny
/usr/bin/python3 - "$src" "$marian" <<'PY'
import os, sys
src, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "tests", "convert"))
import checkpoints as ck
data = os.path.join(os.path.dirname(src), "shared", "data", "tatoeba-zh-en")
def lines(name):
    with open(os.path.join(data, name), encoding="utf-8") as f:
        return f.read().splitlines()[:2000]
work = out + "-spm"
os.makedirs(work, exist_ok=True)
zh = ck.train_spm(lines("train.zh"), os.path.join(work, "zh"), 1600, 0.98)
en = ck.train_spm(lines("train.en"), os.path.join(work, "en"), 400, 1.0)
ck.make_marian(out, zh, en, fmt="safetensors", tie=False)
PY
(cd "$build/install-test" && env -u PYTHONPATH "$copy/bin/tfmc-convert" marian "$marian" -o converted)
test -f "$build/install-test/converted/model.json"
out=$(printf '我们明天去公园吧。\n谢谢。\n' | "$copy/bin/tfmc" translate "$build/install-test/converted/model.json" --no-cache)
[[ $(printf '%s\n' "$out" | wc -l) == 2 ]]
printf '我们明天去公园吧。\n' | "$copy/bin/tfmc" translate "$build/install-test/converted/model.json" \
  --no-cache --compute-type int8 > /dev/null
# The same through the module entry point of the copied tree.
(cd / && PYTHONPATH="$copy/lib/python3/dist-packages" /usr/bin/python3 -m tfmc.convert --help > /dev/null)
echo "install-and-embed: ok"
