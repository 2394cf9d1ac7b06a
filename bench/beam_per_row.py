"""Beam search against greedy per decoded row, on a real model and file.

    /usr/bin/python3 bench/beam_per_row.py [--model examples/zh-en/model.json]
        [--input ../shared/data/tatoeba-zh-en/dev.zh] [--beam 4] [--pairs 10]

Issue 12's target as the steering restated it: beam K may cost at most 0.9x
greedy's decoder time per decoded row (beam decodes about K times the rows:
one per live hypothesis per step). Runs `tfmc translate --stats` with
`--beam-size 1` and `--beam-size K` alternately (the order flipping from
pair to pair: the host's speed drifts by more than the gap), reads each
run's decoder seconds and decoder rows, and prints the medians and the
median of the pairs' per-row ratios. Needs build/ (scripts/setup.sh).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STATS = re.compile(r"decode ([\d.]+) s \(model steps [\d.]+ s for (\d+) decoder rows, "
                   r"search ([\d.]+) s\)")


def decode(tfmc, model, src, beam):
    """(decoder seconds, decoder rows, search seconds) of one run."""
    p = subprocess.run([tfmc, "translate", model, "-i", src, "-o", os.devnull,
                        "--beam-size", str(beam), "--stats"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    m = STATS.search(p.stderr)
    if p.returncode != 0 or not m:
        sys.exit(f"beam_per_row: tfmc failed ({p.returncode}):\n{p.stderr}")
    return float(m.group(1)), int(m.group(2)), float(m.group(3))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=os.path.join(ROOT, "examples", "zh-en", "model.json"))
    p.add_argument("--input", default=os.path.join(ROOT, "..", "shared", "data",
                                                    "tatoeba-zh-en", "dev.zh"))
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    args = p.parse_args()
    if args.beam < 2 or args.pairs < 1:
        sys.exit("beam_per_row: --beam must be at least 2 and --pairs at least 1")

    greedy, beam, ratios = [], [], []
    for i in range(args.pairs):
        order = (1, args.beam) if i % 2 == 0 else (args.beam, 1)
        runs = {k: decode(args.tfmc, args.model, args.input, k) for k in order}
        greedy.append(runs[1])
        beam.append(runs[args.beam])
        g, b = runs[1], runs[args.beam]
        ratios.append((b[0] / b[1]) / (g[0] / g[1]))
    g_s = statistics.median(r[0] for r in greedy)
    b_s = statistics.median(r[0] for r in beam)
    print(f"{os.path.basename(args.input)}, {os.path.relpath(args.model, ROOT)}: "
          f"{args.pairs} alternating pairs of `tfmc translate --stats`")
    print(f"greedy: decode {g_s:.3f} s (median), {greedy[0][1]} decoder rows")
    print(f"beam {args.beam}: decode {b_s:.3f} s (median), {beam[0][1]} decoder rows, "
          f"search {statistics.median(r[2] for r in beam):.3f} s")
    print(f"beam {args.beam} / greedy: {b_s / g_s:.2f}x the time for "
          f"{beam[0][1] / greedy[0][1]:.2f}x the rows; per decoded row, paired: "
          f"{statistics.median(ratios):.3f}x (pairs {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
