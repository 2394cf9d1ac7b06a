"""Check tfmc against the PyTorch reference on one model directory.

    /usr/bin/python3 tests/reference/check_tfmc.py --tfmc build/bin/tfmc --model DIR \
        [--src FILE] [--tgt FILE] [--max-length N] [--min-length N] [--batch-size N] \
        [--beam-size K --length-penalty A] [--no-cache | --cache-dir DIR]

Runs `tfmc forward` (teacher-forced logits, compared over valid positions with
--atol) and `tfmc translate --ids` (greedy ids compared line for line; with
--beam-size also the n-best lists and scores). Without --tgt the targets are
bos + the reference's greedy output. Exits 1 on any mismatch.

translate runs with --max-length-factor 0 (no limit relative to the source
length: the reference's default; the CLI's is 3). --no-cache / --cache-dir
are passed to every tfmc command.
"""

import argparse
import copy
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tfmc.reference import tfm as ref  # noqa: E402


def run(cmd):
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise RuntimeError(f"cannot run {cmd[0]}: {e}") from e
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
    return res.stdout


def parse_nbest(text):
    out = {}
    for line in text.splitlines():
        i, ids, score = (f.strip() for f in line.split("|||"))
        out.setdefault(int(i), []).append(([int(t) for t in ids.split()], float(score)))
    return out


def check_forward(args, model, model_json, srcs, src_path, tmp):
    if args.tgt:
        tgt_path, tgts = args.tgt, ref.read_ids(args.tgt)
    else:
        start = ref.decoder_start(model.special)
        tgts = [[start] + model.greedy(s, args.min_length, args.max_length) for s in srcs]
        tgt_path = os.path.join(tmp, "tgt.ids")
        ref.write_ids(tgt_path, tgts)
    out_path = os.path.join(tmp, "logits.npy")
    run([args.tfmc, "forward", model_json, "--src", src_path, "--tgt", tgt_path, "-o", out_path]
        + cache_flags(args))
    # The expected logits are the reference's in float64: a float32 run of
    # the reference drifts from them too (reported below), and comparing two
    # float32 programs would mix both errors.
    got, want = np.load(out_path), copy.deepcopy(model).double().forward_ids(srcs, tgts)
    drift_logits = model.forward_ids(srcs, tgts)
    if got.dtype != np.float32 or got.ndim != 3 or got.shape[0] != want.shape[0] \
            or got.shape[2] != want.shape[2] or got.shape[1] < want.shape[1]:
        print(f"forward: bad output {got.dtype} {got.shape}, expected float32 {want.shape}")
        return False
    worst = max(float(np.max(np.abs(got[b, : len(t)] - want[b, : len(t)]))) for b, t in enumerate(tgts))
    drift = max(float(np.max(np.abs(drift_logits[b, : len(t)] - want[b, : len(t)])))
                for b, t in enumerate(tgts))
    ok = worst <= args.atol
    print(f"forward: {len(tgts)} rows, max |tfmc - reference(float64)| over valid positions "
          f"{worst:.3g} (atol {args.atol:g}) {'OK' if ok else 'MISMATCH'}; "
          f"reference float32 drift {drift:.3g}")
    return ok


def cache_flags(args):
    if args.no_cache:
        return ["--no-cache"]
    return ["--cache-dir", args.cache_dir] if args.cache_dir else []


def translate_cmd(args, model_json, src_path):
    # --max-length-factor 0: the reference's length rule (max_length only).
    cmd = [args.tfmc, "translate", model_json, "--ids", "-i", src_path,
           "--max-length", str(args.max_length), "--min-length", str(args.min_length),
           "--max-length-factor", "0"] + cache_flags(args)
    if args.batch_size:
        cmd += ["--batch-size", str(args.batch_size)]
    return cmd


def check_greedy(args, model, model_json, srcs, src_path):
    got = [[int(t) for t in line.split()] for line in run(translate_cmd(args, model_json, src_path)).splitlines()]
    if len(got) != len(srcs):
        print(f"greedy: {len(got)} output lines for {len(srcs)} inputs MISMATCH")
        return False
    bad = ties = 0
    for i, (src, ids) in enumerate(zip(srcs, got)):
        margins = []
        want = model.greedy(src, args.min_length, args.max_length, margins=margins)
        if ids == want:
            continue
        step = next((k for k, (a, b) in enumerate(zip(ids, want)) if a != b), min(len(ids), len(want)))
        margin = margins[step] if step < len(margins) else float("inf")
        near_tie = margin < args.tie_margin
        ties += near_tie
        bad += not near_tie
        print(f"greedy line {i}: differs at step {step} (reference margin {margin:.3g}"
              f"{', near tie: not counted' if near_tie else ''})\n  tfmc: {ids}\n  ref:  {want}")
    print(f"greedy (min {args.min_length}, max {args.max_length}): {len(srcs) - bad - ties}/{len(srcs)} "
          f"lines equal, {ties} near-tie differences {'OK' if not bad else 'MISMATCH'}")
    return not bad


def check_beam(args, model, model_json, srcs, src_path):
    k = args.beam_size
    cmd = translate_cmd(args, model_json, src_path) + [
        "--beam-size", str(k), "--length-penalty", str(args.length_penalty), "--n-best", str(k)]
    got = parse_nbest(run(cmd))
    bad = 0
    for i, src in enumerate(srcs):
        margins = []
        want = model.beam(src, k, args.length_penalty, args.min_length, args.max_length, margins=margins)
        mine = got.get(i, [])
        same = [a[0] for a in mine] == [b[0] for b in want] and all(
            abs(a[1] - b[1]) <= args.score_atol for a, b in zip(mine, want))
        if not same:
            bad += 1
            print(f"beam line {i}: MISMATCH (reference min margin {min(margins):.3g})\n"
                  f"  tfmc: {mine}\n  ref:  {[(ids, round(s, 6)) for ids, s in want]}")
    print(f"beam (K {k}, alpha {args.length_penalty:g}): {len(srcs) - bad}/{len(srcs)} n-best lists equal "
          f"{'OK' if not bad else 'MISMATCH'}")
    return not bad


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tfmc", default="build/bin/tfmc")
    p.add_argument("--model", required=True, help="model directory or model.json")
    p.add_argument("--src", help="source ids, one line per sentence, no eos (default DIR/src.ids)")
    p.add_argument("--tgt", help="target ids starting with bos (default: bos + reference greedy)")
    p.add_argument("--max-length", type=int, default=20)
    p.add_argument("--min-length", type=int, default=0)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--beam-size", type=int, help="also compare beam n-best lists")
    p.add_argument("--length-penalty", type=float, default=1.0)
    p.add_argument("--atol", type=float, default=1e-4, help="logits tolerance")
    p.add_argument("--score-atol", type=float, default=1e-4, help="beam score tolerance")
    p.add_argument("--tie-margin", type=float, default=1e-3,
                   help="greedy differences where the reference margin is below this are not failures")
    p.add_argument("--no-cache", action="store_true", help="pass --no-cache to tfmc")
    p.add_argument("--cache-dir", metavar="DIR", help="pass --cache-dir DIR to tfmc")
    args = p.parse_args()

    model_json = args.model if args.model.endswith(".json") else os.path.join(args.model, "model.json")
    src_path = args.src or os.path.join(os.path.dirname(model_json), "src.ids")
    model = ref.load(model_json)
    srcs = ref.read_ids(src_path)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        checks = [("forward", lambda: check_forward(args, model, model_json, srcs, src_path, tmp)),
                  ("greedy", lambda: check_greedy(args, model, model_json, srcs, src_path))]
        if args.beam_size:
            checks.append(("beam", lambda: check_beam(args, model, model_json, srcs, src_path)))
        for name, check in checks:
            try:
                ok = check() and ok
            except RuntimeError as e:
                print(f"{name}: tfmc failed: {e}")
                ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
