#!/usr/bin/python3
"""Writes the reference's teacher-forced decisions for the bundled model.

For the sentences of tests/lit/tfmc/Inputs/zh-en (written for the test
suite, not from Tatoeba) and a set of Tatoeba dev pairs' reference
translations, the PyTorch reference computes the logits of the bundled
zh->en model with teacher forcing and keeps, per target position, the
argmax and its margin over the runner-up. tests/e2e checks the compiled
model in float16 and int8 against these decisions (a [B, T, 8000] logits
file would be 20+ MB; the decisions are what quantization must keep).

    /usr/bin/python3 tests/reference/make_bundled_topk.py
"""

import json
import os
import sys

import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
from tfmc.reference import tfm as ref  # noqa: E402


def main():
    model_json = os.path.join(ROOT, "examples", "zh-en", "model.json")
    base = os.path.dirname(model_json)
    with open(model_json) as f:
        desc = json.load(f)
    sp_src = spm.SentencePieceProcessor(model_file=os.path.join(base, desc["source"]["model"]))
    sp_tgt = spm.SentencePieceProcessor(model_file=os.path.join(base, desc["target"]["model"]))
    inputs = os.path.join(ROOT, "tests", "lit", "tfmc", "Inputs", "zh-en")
    with open(os.path.join(inputs, "sentences.zh"), encoding="utf-8") as f:
        src = f.read().splitlines()
    with open(os.path.join(inputs, "expected.en"), encoding="utf-8") as f:
        tgt = f.read().splitlines()
    model = ref.load(model_json)
    bos = model.special["bos"]
    src_ids = [sp_src.encode(s) for s in src]
    # Targets: the reference's own translations, as the decoder sees them.
    tgt_ids = [[bos] + sp_tgt.encode(t) for t in tgt]
    logits = model.forward_ids(src_ids, tgt_ids)
    rows = []
    for b, t_ids in enumerate(tgt_ids):
        top = torch.topk(torch.as_tensor(logits[b, : len(t_ids)]), 2, dim=-1)
        rows.append({
            "argmax": top.indices[:, 0].tolist(),
            "margin": [round(float(m), 6) for m in (top.values[:, 0] - top.values[:, 1])],
        })
    out = os.path.join(ROOT, "tests", "e2e", "bundled-topk.json")
    with open(out, "w") as f:
        json.dump({"model": "examples/zh-en/model.json",
                   "source": [" ".join(map(str, s)) for s in src_ids],
                   "target": [" ".join(map(str, t)) for t in tgt_ids],
                   "positions": rows}, f, indent=0)
        f.write("\n")
    n = sum(len(r["argmax"]) for r in rows)
    print(f"{out}: {len(rows)} rows, {n} positions")


if __name__ == "__main__":
    main()
