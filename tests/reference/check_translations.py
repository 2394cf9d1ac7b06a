"""Translate text with tfmc and with the PyTorch reference; require equality.

    /usr/bin/python3 tests/reference/check_translations.py --model examples/zh-en/model.json \
        --src ../shared/data/tatoeba-zh-en/dev.zh [--ref ../shared/data/tatoeba-zh-en/dev.en]

For a model whose sides use the `sentencepiece` tokenizer:
  1. the reference tokenizes every line with the Python `sentencepiece` module
     (tfmc.reference.tfm.load_tokenizer: either `piece_ids` mode) and decodes
     it with the model file's default search, as `tfmc translate` does: greedy
     (tfm.greedy), or beam search when its "decoding" object sets a beam
     (tfm.beam, the best hypothesis); --beam-size / --length-penalty override
     the file as tfmc's flags do (full recomputation, no KV cache, one line at
     a time);
  2. tfmc translates the same token ids (`--ids`): its ids must equal the
     reference's line for line;
  3. tfmc translates the raw text (its own C++ tokenizers): its text must
     equal the reference ids rendered by the Python module (as tfmc renders
     them: SentencePieceSide.decode), line for line,
     which also holds only if both sides tokenized the source identically.
With --ref, corpus BLEU and chrF of both outputs are printed (examples/zh-en/
metrics.py; `tfmc score` gives the same numbers). With --write FILE the
reference translations are written there (how the CI expectations in
tests/lit/tfmc/zh-en are made). tfmc runs with the search spelt out
(--beam-size, --length-penalty). Exit status 1 on any difference.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "zh-en"))
from tfmc.reference import tfm as ref  # noqa: E402
import metrics  # noqa: E402


def run_tfmc(tfmc, model, lines, extra):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write("".join(line + "\n" for line in lines))
        path = f.name
    try:
        # The reference translates whole lines: so does tfmc here, even for
        # a sentence-level model (whose default splits them).
        res = subprocess.run([tfmc, "translate", model, "-i", path, "--split-sentences", "off"]
                             + extra,
                             capture_output=True, text=True, encoding="utf-8")
    finally:
        os.unlink(path)
    if res.returncode != 0:
        sys.exit(f"error: tfmc failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout.split("\n")[:-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="model.json")
    p.add_argument("--src", required=True, help="source text, one sentence per line")
    p.add_argument("--ref", help="reference translations (prints BLEU/chrF)")
    p.add_argument("--tfmc", default=os.path.join(HERE, "..", "..", "build", "bin", "tfmc"))
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--max-length-factor", type=float, default=3.0,
                   help="length limit relative to the source, as tfmc translate's "
                        "(default 3; 0: off)")
    p.add_argument("--max-length-offset", type=int, default=10)
    p.add_argument("--beam-size", type=int,
                   help="beam size (default: the model file's, else 1 = greedy)")
    p.add_argument("--length-penalty", type=float,
                   help="beam length penalty (default: the model file's, else 1.0)")
    p.add_argument("--kernels", default="library", choices=["library", "loops"])
    p.add_argument("--write", help="write the reference translations to this file")
    p.add_argument("--limit", type=int, default=0, help="only the first N lines")
    args = p.parse_args()

    with open(args.model) as f:
        desc = json.load(f)
    for side in ("source", "target"):
        if desc[side]["tokenizer"] != "sentencepiece":
            sys.exit(f"error: {side} tokenizer is {desc[side]['tokenizer']}; this check needs sentencepiece")
    decoding = desc.get("decoding", {})
    beam = args.beam_size if args.beam_size is not None else decoding.get("beam_size", 1)
    alpha = (args.length_penalty if args.length_penalty is not None
             else decoding.get("length_penalty", 1.0))
    if beam < 1:
        sys.exit("error: --beam-size must be at least 1")
    tok_src = ref.load_tokenizer(args.model, "source")
    tok_tgt = ref.load_tokenizer(args.model, "target")
    with open(args.src, encoding="utf-8") as f:
        src_lines = f.read().splitlines()
    if args.limit:
        src_lines = src_lines[: args.limit]
    if any(not line.strip() for line in src_lines):
        sys.exit("error: the source has empty lines")

    model = ref.load(args.model)
    t0 = time.time()
    src_ids = [tok_src.encode(line) for line in src_lines]
    limits = dict(max_length=args.max_length, max_length_factor=args.max_length_factor,
                  max_length_offset=args.max_length_offset)
    if beam == 1:
        ref_ids = [model.greedy(ids, **limits) for ids in src_ids]
    else:
        ref_ids = [model.beam(ids, beam, alpha, n_best=1, **limits)[0][0] for ids in src_ids]
    ref_text = [tok_tgt.decode(ids) for ids in ref_ids]
    search = "greedy" if beam == 1 else f"beam {beam}, length penalty {alpha:g}"
    print(f"reference ({search}): {len(src_lines)} lines in {time.time() - t0:.0f} s")

    common = ["--max-length", str(args.max_length), f"--kernels={args.kernels}",
              "--max-length-factor", str(args.max_length_factor),
              "--max-length-offset", str(args.max_length_offset),
              "--beam-size", str(beam), "--length-penalty", repr(alpha)]
    t0 = time.time()
    tfmc_ids = run_tfmc(args.tfmc, args.model, [" ".join(map(str, ids)) for ids in src_ids],
                        common + ["--ids"])
    tfmc_text = run_tfmc(args.tfmc, args.model, src_lines, common)
    print(f"tfmc: 2 x {len(src_lines)} lines in {time.time() - t0:.0f} s")

    bad = 0
    for i, (r_ids, t_ids, r_text, t_text) in enumerate(zip(ref_ids, tfmc_ids, ref_text, tfmc_text)):
        if " ".join(map(str, r_ids)) != t_ids:
            bad += 1
            print(f"line {i + 1}: ids differ\n  reference: {r_ids}\n  tfmc:      {t_ids}")
        elif r_text != t_text:
            bad += 1
            print(f"line {i + 1}: text differs\n  reference: {r_text!r}\n  tfmc:      {t_text!r}")
    if len(tfmc_ids) != len(src_lines) or len(tfmc_text) != len(src_lines):
        bad += 1
        print(f"tfmc wrote {len(tfmc_ids)} / {len(tfmc_text)} lines for {len(src_lines)} inputs")

    if args.ref:
        with open(args.ref, encoding="utf-8") as f:
            refs = f.read().splitlines()[: len(src_lines)]
        for name, hyps in (("reference", ref_text), ("tfmc", tfmc_text)):
            print(f"{name}: BLEU {metrics.corpus_bleu(hyps, refs):.2f} "
                  f"chrF {metrics.corpus_chrf(hyps, refs):.2f}")
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in ref_text))
    print(f"{len(src_lines) - bad}/{len(src_lines)} lines identical: {'PASS' if bad == 0 else 'FAIL'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
