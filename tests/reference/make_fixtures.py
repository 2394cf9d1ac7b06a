"""Regenerate tests/e2e/fixtures/ deterministically from the PyTorch reference.

    /usr/bin/python3 tests/reference/make_fixtures.py [--out tests/e2e/fixtures]

Every fixture directory holds a random model (model.json, src.vocab,
tgt.vocab, model.safetensors), inputs (src.ids, tgt.ids), expectations
(logits.npy, greedy-*.ids, beam-*.txt) and cases.json describing them.
Source lines whose greedy or beam decisions come within MIN_MARGIN of a tie
are replaced, so that float32 differences of ~1e-6 cannot flip a result.
"""

import argparse
import copy
import json
import os
import random
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfm_reference as ref  # noqa: E402

MIN_MARGIN = 1e-3
# The reference's own float32 logits may differ from its float64 logits by at
# most this much on a fixture (10x below the test tolerance).
MAX_FLOAT32_DRIFT = 1.5e-5
QK_GAIN = 1.0
OUT_GAIN = 2.0
LOGITS_ATOL = 1e-4
GREEDY = [(0, 20), (5, 20), (0, 3), (0, 1)]          # (min_length, max_length)
BEAM = [(4, 1.0), (3, 0.6)]                          # (beam_size, length_penalty)
BEAM_MAX_LENGTH = 20
NUM_LINES = 8

TINY = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64,
            max_len=64, layer_norm_eps=1e-5, positional_encoding="sinusoidal")


def variants():
    out = []
    for norm in ("post", "pre"):
        for act in ("relu", "gelu"):
            for scale in (False, True):
                name = f"{norm}-{act}-{'scale' if scale else 'noscale'}"
                arch = dict(TINY, norm=norm, activation=act, embedding_scale=scale)
                out.append(dict(name=name, arch=arch, src_vocab=37, tgt_vocab=41, src_lens=None))
    # wide: a small max_len so that one 40-id source line exercises truncation
    wide = dict(d_model=64, num_heads=2, num_encoder_layers=1, num_decoder_layers=3, d_ff=96,
                max_len=32, activation="gelu", norm="pre", layer_norm_eps=1e-6,
                embedding_scale=True, positional_encoding="sinusoidal")
    out.append(dict(name="wide", arch=wide, src_vocab=50, tgt_vocab=60,
                    src_lens=[1, 20, 7, 40, 3, 12, 5, 9]))
    return out


def random_line(rng, length, vocab, low=4, unk_rate=0.05):
    return [3 if rng.random() < unk_rate else rng.randrange(low, vocab) for _ in range(length)]


def calibrate_eos(model, sources):
    """Shift the eos output bias so that about half the calibration rows end early."""
    eos = model.special["eos"]
    base = float(model.linear.bias[eos])
    best = None
    for shift in np.arange(-2.0, 4.01, 0.25):
        with torch.no_grad():
            model.linear.bias[eos] = base + shift
        lens = [len(model.greedy(s, 0, 20)) for s in sources]
        ended = sum(n < 20 for n in lens)
        score = -abs(ended - len(lens) / 2) + 0.5 * sum(0 < n < 20 for n in lens) \
            - 0.5 * max(0, sum(n == 0 for n in lens) - 1)
        if best is None or score > best[0]:
            best = (score, shift)
    with torch.no_grad():
        model.linear.bias[eos] = base + best[1]
    return [model.greedy(s, 0, 20) for s in sources]


def varied(outputs):
    """Enough variety in greedy outputs to make a useful test."""
    lens = [len(o) for o in outputs]
    return (np.mean([len(set(o)) for o in outputs]) >= 3
            and len({o[0] for o in outputs if o}) >= 2
            and sum(0 < n < 20 for n in lens) >= 2 and lens.count(20) >= 1)


def decode_all(model, src):
    """Greedy and beam results for one source line plus the smallest decision margin."""
    margins = []
    greedy = [model.greedy(src, mn, mx, margins=margins) for mn, mx in GREEDY]
    beams = [model.beam(src, k, a, 0, BEAM_MAX_LENGTH, margins=margins) for k, a in BEAM]
    return greedy, beams, min(margins)


def exact_logits(model, srcs, tgts):
    """Teacher-forced logits computed in float64 (the expected values)."""
    return copy.deepcopy(model).double().forward_ids(srcs, tgts)


def conditioning(model, srcs, tgts):
    """Largest |float32 - float64| logit difference on valid positions: a
    model whose own float32 rounding moves logits by more than a small
    fraction of the test tolerance cannot check tfmc to that tolerance."""
    lo = model.forward_ids(srcs, tgts)
    hi = exact_logits(model, srcs, tgts)
    return max(float(np.abs(lo[i, :len(t)] - hi[i, :len(t)]).max()) for i, t in enumerate(tgts))


def make_fixture(v, base_seed, out_dir):
    a = v["arch"]
    for seed in range(base_seed, base_seed + 50):  # first seed whose model is not degenerate
        model = ref.TranslationTransformer(a, v["src_vocab"], v["tgt_vocab"]).eval()
        ref.random_init(model, seed, qk_gain=QK_GAIN, out_gain=OUT_GAIN)
        rng = random.Random(seed)
        lens = v["src_lens"] or [1, 20] + [rng.randint(2, 15) for _ in range(NUM_LINES - 2)]
        probe = [random_line(rng, n, v["src_vocab"]) for n in lens]
        probe_tgt = [[model.special["bos"]] + random_line(rng, 14, v["tgt_vocab"], low=3, unk_rate=0)
                     for _ in lens]
        if conditioning(model, probe, probe_tgt) > MAX_FLOAT32_DRIFT:
            continue
        if varied(calibrate_eos(model, probe)):
            break

    srcs, results, margins, replaced = [], [], [], 0
    for n in lens:
        for _ in range(500):
            src = random_line(rng, n, v["src_vocab"])
            greedy, beams, margin = decode_all(model, src)
            if margin >= MIN_MARGIN:
                break
            replaced += 1
        else:
            raise RuntimeError(f"{v['name']}: no line of length {n} with margin >= {MIN_MARGIN}")
        srcs.append(src)
        results.append((greedy, beams))
        margins.append(margin)

    tgt_lens = [1, 15] + [rng.randint(2, 14) for _ in range(NUM_LINES - 2)]
    rng.shuffle(tgt_lens)
    tgts = [[model.special["bos"]] + random_line(rng, n - 1, v["tgt_vocab"], low=3, unk_rate=0)
            for n in tgt_lens]

    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    ref.export(model, out_dir)
    ref.write_ids(os.path.join(out_dir, "src.ids"), srcs)
    ref.write_ids(os.path.join(out_dir, "tgt.ids"), tgts)
    drift = conditioning(model, srcs, tgts)
    if drift > MAX_FLOAT32_DRIFT:
        raise RuntimeError(f"{v['name']}: float32 drift {drift:.2e} on the fixture batch")
    logits = exact_logits(model, srcs, tgts)
    np.save(os.path.join(out_dir, "logits.npy"), logits)

    greedy_cases = []
    for j, (mn, mx) in enumerate(GREEDY):
        fname = f"greedy-min{mn}-max{mx}.ids"
        ref.write_ids(os.path.join(out_dir, fname), [r[0][j] for r in results])
        greedy_cases.append({"file": fname, "min_length": mn, "max_length": mx})
    beam_cases = []
    for j, (k, alpha) in enumerate(BEAM):
        fname = f"beam-k{k}-a{alpha:.1f}.txt"
        with open(os.path.join(out_dir, fname), "w") as f:
            for i, r in enumerate(results):
                for ids, score in r[1][j]:
                    f.write(ref.format_nbest(i, ids, score) + "\n")
        beam_cases.append({"file": fname, "beam_size": k, "length_penalty": alpha,
                           "min_length": 0, "max_length": BEAM_MAX_LENGTH, "n_best": k})

    case = {
        "name": v["name"],
        "seed": seed,
        "model": "model.json",
        "src_vocab_size": v["src_vocab"],
        "tgt_vocab_size": v["tgt_vocab"],
        "src": "src.ids",
        "tgt": "tgt.ids",
        "truncated_src_lines": [i for i, s in enumerate(srcs) if len(s) + 1 > a["max_len"]],
        "forward": {"file": "logits.npy", "shape": list(logits.shape),
                    "tgt_lengths": [len(t) for t in tgts], "atol": LOGITS_ATOL},
        "greedy": greedy_cases,
        "beam": beam_cases,
        "min_decision_margin": MIN_MARGIN,
        "observed_min_margin": round(float(min(margins)), 6),
        "reference_float32_drift": float(f"{drift:.3g}"),
    }
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(case, f, indent=2)
        f.write("\n")
    g = [r[0][0] for r in results]
    print(f"{v['name']:18s} greedy(0,20) lengths {[len(x) for x in g]} "
          f"distinct {[len(set(x)) for x in g]} replaced {replaced} "
          f"min margin {min(margins):.4f}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(root, "tests", "e2e", "fixtures"))
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    names = []
    for i, v in enumerate(variants()):
        make_fixture(v, 1000 * (i + 1), os.path.join(args.out, v["name"]))
        names.append(v["name"])
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump({"format": "tfm-e2e-fixtures", "version": 1, "fixtures": names}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
