"""Paired ratios of tfmc runs that take turns: compute types, thread counts or
storage of keys and values.

    /usr/bin/python3 bench/paired.py [--compare compute-types|threads|kv-types]
        [--values float32,int8,bfloat16] [--batches 16,64] [--rounds 5]

On hosts whose speed drifts by 2x from minute to minute, the ratio of two
medians taken minutes apart (bench/run.py's table) can say 1.3x where
runs side by side say 2.6x. Here every round runs each value once, one
after another (the order reversed every other round), on the base model
bench/run.py uses (made the same way if absent) and the same 32-token
sources (written afresh, from the same seed), exactly 64 generated tokens
a sentence, greedy; each round's
tokens/s are divided by the first value's: the line per batch gives the
median of those ratios and their range, and the first value's median
tokens/s. --compare threads with --values 1,2 gives issue 28's two-core
ratios; --compare compute-types its int8 and bfloat16 ones; --compare
kv-types (values float32,float16 by default) what --kv-type float16 gains
a compute type (--compute-type, float32 by default).
"""

import argparse
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (bench/run.py: run(), tfmc_stats())

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default="/tmp/tfmc-bench")
    p.add_argument("--compare", choices=["compute-types", "threads", "kv-types"],
                   default="compute-types")
    p.add_argument("--values", default="",
                   help="what takes turns; the first is the denominator "
                        "(default float32,int8,bfloat16; 1,2; float32,float16)")
    p.add_argument("--batches", default="16,64")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1,
                   help="with --compare compute-types or kv-types")
    p.add_argument("--compute-type", default="float32",
                   help="with --compare threads or kv-types")
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--src-len", type=int, default=32)
    args = p.parse_args()
    defaults = {"compute-types": "float32,int8,bfloat16", "threads": "1,2",
                "kv-types": "float32,float16"}
    values = (args.values or defaults[args.compare]).split(",")
    if len(values) < 2 or args.rounds < 1:
        sys.exit("error: --values needs two or more values, --rounds one or more")

    tfmc = os.path.join(ROOT, "build", "bin", "tfmc")
    model_dir = os.path.join(args.work, "base")
    model = os.path.join(model_dir, "model.json")
    if not os.path.exists(model):
        subprocess.run([bench.PY, os.path.join(ROOT, "tests", "reference", "make_model.py"),
                        "--preset", "base", "--seed", "1", "--out", model_dir], check=True)
    os.makedirs(args.work, exist_ok=True)

    for batch in [int(x) for x in args.batches.split(",")]:
        rng = random.Random(7)
        inp = os.path.join(args.work, f"paired-{batch}.ids")
        with open(inp, "w") as f:
            for _ in range(max(batch, 4)):
                f.write(" ".join(str(rng.randrange(4, 8000))
                                 for _ in range(args.src_len - 1)) + "\n")

        def tokens_per_second(value):
            threads = value if args.compare == "threads" else str(args.threads)
            ct = value if args.compare == "compute-types" else args.compute_type
            kv = value if args.compare == "kv-types" else "auto"
            _, err, _ = bench.run([tfmc, "translate", model, "--ids", "-i", inp,
                                   "--min-length", str(args.steps),
                                   "--max-length", str(args.steps),
                                   "--max-length-factor", "0", "--batch-size", str(batch),
                                   "--threads", threads, "--compute-type", ct,
                                   "--kv-type", kv, "--stats"])
            return float(bench.tfmc_stats(err)[5])

        first = []
        ratios = {v: [] for v in values[1:]}
        for i in range(args.rounds):
            order = values if i % 2 == 0 else values[::-1]
            tps = {v: tokens_per_second(v) for v in order}
            first.append(tps[values[0]])
            for v in values[1:]:
                ratios[v].append(tps[v] / tps[values[0]])
        what = ", ".join(f"{v} / {values[0]} {statistics.median(r):.2f}x "
                         f"({min(r):.2f}-{max(r):.2f})" for v, r in ratios.items())
        fixed = {"compute-types": f"{args.threads} thread(s)",
                 "threads": args.compute_type,
                 "kv-types": f"{args.compute_type}, {args.threads} thread(s)"}[args.compare]
        print(f"batch {batch}, {fixed}, {args.rounds} rounds: {values[0]} median "
              f"{statistics.median(first):.1f} tokens/s; paired medians: {what}",
              flush=True)


if __name__ == "__main__":
    main()
