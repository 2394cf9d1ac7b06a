"""tfmc against the reference where a model may generate pad
(special_tokens.never_generate without it): the pad it chose is attended
like any other target token (docs/model-format.md), in tfmc's cached
decoding as in the reference. Runs build/bin/tfmc (or $TFMC_BIN).

    /usr/bin/python3 -m pytest -q tests/reference/test_against_tfmc.py
"""

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from tfmc.reference import tfm as ref  # noqa: E402

TFMC = os.environ.get("TFMC_BIN", os.path.join(ROOT, "build", "bin", "tfmc"))
SRCS = [[4, 5, 6], [7, 8, 9, 10, 11], [12], [13, 14, 15, 16, 4, 5], [6, 6, 6, 6], [9, 4]]
MAX_LENGTH = 12


@pytest.fixture(scope="module")
def pad_model(tmp_path_factory):
    """A random model that likes pad (bias +0.5) and may choose it."""
    out = str(tmp_path_factory.mktemp("pad-generated"))
    arch = dict(d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=2, d_ff=32, max_len=16,
                activation="relu", norm="pre", layer_norm_eps=1e-5, embedding_scale=False,
                positional_encoding="sinusoidal")
    special = {"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [1]}
    m = ref.random_init(ref.TranslationTransformer(arch, 17, 9, special).eval(), 5)
    with torch.no_grad():
        m.linear.bias[0] += 0.5
    ref.export(m, out)
    ref.write_ids(os.path.join(out, "src.ids"), SRCS)
    return out, ref.load(out)


def translate(model_dir, *options):
    assert os.path.exists(TFMC), f"{TFMC} is not built (set TFMC_BIN)"
    res = subprocess.run([TFMC, "translate", os.path.join(model_dir, "model.json"), "--ids", "-i",
                          os.path.join(model_dir, "src.ids"), "--max-length", str(MAX_LENGTH),
                          "--max-length-factor", "0", "--no-cache", *options],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("kernels", ["library", "loops"])
def test_greedy_attends_a_generated_pad(pad_model, kernels):
    model_dir, m = pad_model
    want = [m.greedy(s, 0, MAX_LENGTH) for s in SRCS]
    # The case is exercised: pads inside the rows, other tokens after them.
    assert any(0 in w and w.index(0) < len(w) - 1 and any(v != 0 for v in w[w.index(0):]) for w in want)
    got = [[int(t) for t in line.split()] for line in translate(model_dir, f"--kernels={kernels}",
                                                                 "--beam-size", "1").splitlines()]
    assert got == want


@pytest.mark.parametrize("kernels", ["library", "loops"])
def test_beam_attends_a_generated_pad(pad_model, kernels):
    model_dir, m = pad_model
    text = translate(model_dir, f"--kernels={kernels}", "--beam-size", "3", "--length-penalty", "1",
                     "--n-best", "3")
    got = {}
    for line in text.splitlines():
        i, ids, score = (f.strip() for f in line.split("|||"))
        got.setdefault(int(i), []).append(([int(t) for t in ids.split()], float(score)))
    for i, s in enumerate(SRCS):
        want = m.beam(s, 3, 1.0, 0, MAX_LENGTH, n_best=3)
        assert [ids for ids, _ in got[i]] == [ids for ids, _ in want], i
        assert [sc for _, sc in got[i]] == pytest.approx([sc for _, sc in want], abs=1e-4), i
