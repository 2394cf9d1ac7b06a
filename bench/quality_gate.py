#!/usr/bin/python3
"""Quality gate for the reduced-precision compute types (issue 13).

Translates a dev set with --compute-type float32, float16, bfloat16 and
int8, and float32 with --kv-type float16, on one kernel path, scores each
with `tfmc score`, and compares every line with the float32 translation.
The gate: int8 BLEU within 0.5 of float32 and at least 90% of lines
identical; float16, and float32 with float16 keys/values, at least 98%
identical; bfloat16 BLEU within 0.3 and at least 95% identical (issue 28).
Exit status 1 when it fails.

    /usr/bin/python3 bench/quality_gate.py                   # bundled model, dev set
    /usr/bin/python3 bench/quality_gate.py --kernels loops --beam-size 4
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "tatoeba-zh-en")


def translate(args, compute_type, kv_type, out):
    cmd = [args.tfmc, "translate", args.model, "-i", args.src, "-o", out,
           "--compute-type", compute_type, "--kv-type", kv_type, "--kernels", args.kernels,
           "--max-length", str(args.max_length), "--beam-size", str(args.beam_size)]
    if not args.output_projection:
        cmd.append("--quantize-output-projection=false")
    start = time.time()
    subprocess.run(cmd, check=True)
    return time.time() - start


def score(args, hyp):
    text = subprocess.run([args.tfmc, "score", "--hyp", hyp, "--ref", args.ref],
                          check=True, capture_output=True, text=True).stdout
    bleu = float(re.search(r"BLEU = ([0-9.]+)", text).group(1))
    chrf = float(re.search(r"chrF2 = ([0-9.]+)", text).group(1))
    return bleu, chrf


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    p.add_argument("--model", default=os.path.join(ROOT, "examples", "zh-en", "model.json"))
    p.add_argument("--src", default=os.path.join(DATA, "dev.zh"))
    p.add_argument("--ref", default=os.path.join(DATA, "dev.en"))
    p.add_argument("--kernels", default="library", choices=["library", "loops"])
    p.add_argument("--beam-size", type=int, default=1)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--output-projection", type=int, default=1,
                   help="1: quantize the output projection too (default)")
    p.add_argument("--workdir", default="/tmp/tfmc-quality-gate")
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    results = {}
    # (row label, --compute-type, --kv-type)
    runs = [("float32", "float32", "auto"), ("float16", "float16", "auto"),
            ("bfloat16", "bfloat16", "auto"), ("int8", "int8", "auto"),
            ("float32, float16 keys/values", "float32", "float16")]
    for label, ct, kv in runs:
        out = os.path.join(args.workdir, f"{ct}-kv-{kv}-{args.kernels}.en")
        seconds = translate(args, ct, kv, out)
        with open(out, encoding="utf-8") as f:
            lines = f.read().split("\n")
        results[label] = (lines, score(args, out), seconds)

    base_lines, (base_bleu, _), _ = results["float32"]
    n = len(base_lines) - 1  # trailing newline
    print(f"{n} lines, {args.kernels} kernels, beam {args.beam_size}, "
          f"output projection {'quantized' if args.output_projection else 'float32'}")
    print("| compute type | BLEU | chrF2 | lines identical to float32 | seconds |")
    print("|---|---|---|---|---|")
    ok = True
    for ct, (lines, (bleu, chrf), seconds) in results.items():
        same = sum(a == b for a, b in zip(lines[:n], base_lines[:n]))
        print(f"| {ct} | {bleu:.2f} | {chrf:.2f} | {same}/{n} ({100.0 * same / n:.1f}%) | {seconds:.1f} |")
        if ct == "int8" and (bleu < base_bleu - 0.5 or same < 0.90 * n):
            ok = False
        if ct in ("float16", "float32, float16 keys/values") and same < 0.98 * n:
            ok = False
        if ct == "bfloat16" and (abs(bleu - base_bleu) > 0.3 or same < 0.95 * n):
            ok = False
    print("gate (int8: BLEU within 0.5, >= 90% identical; float16 and float16 keys/values: "
          ">= 98% identical; bfloat16: BLEU within 0.3, >= 95% identical):",
          "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
