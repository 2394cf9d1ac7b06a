#!/bin/sh
# Dev-set BLEU/chrF2 of a training run's averaged checkpoints, as the model
# card's table reports them: greedy and beam 4 (tfmc, one thread).
#   examples/zh-en/evaluate.sh WORK [CHECKPOINTS_AVERAGED] [DATA]
# e.g. examples/zh-en/evaluate.sh examples/zh-en/work/div-k4 3
set -eu
work=$1
average=${2:-5}
data=${3:-../shared/data/tatoeba-zh-en}
root=$(cd "$(dirname "$0")/../.." && pwd)
tfmc=${TFMC:-$root/build/bin/tfmc}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$root/examples/zh-en/train.py" --data "$data" --work "$work" \
    --export-only --no-dev --average "$average" --out "$out/model" | tail -n 1
for beam in 1 4; do
  "$tfmc" translate "$out/model/model.json" -i "$data/dev.zh" --beam-size "$beam" \
      --threads 1 -o "$out/dev.$beam.en" 2>/dev/null
  printf 'beam %s: ' "$beam"
  "$tfmc" score --ref "$data/dev.en" --hyp "$out/dev.$beam.en" | tr '\n' ' '
  echo
done
