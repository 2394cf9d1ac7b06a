"""Converted Marian and fairseq models run by the C++ binary build/bin/tfmc,
against the ORIGINAL semantics (tfmc.reference.marian / .fairseq reading the
original files):

* greedy `translate` of >= 20 Chinese dev lines, text in, text out, through
  the model's own SentencePiece models, identical to the reference's greedy
  translation (lines where a reference step's top-2 margin is below 1e-4
  are left out; a hair's-breadth tie may go either way in float32);
* `translate --ids`: the same ids;
* `forward`: teacher-forced logits within 1e-4 (relative to max(1, |logit|));
* beam 4 with `--n-best 4 --scores`: the same four hypotheses, in order,
  scores within 1e-4;
* each with `--kernels=library` and `--kernels=loops`;
* `--compute-type int8` runs and writes one line per input.

The binary must exist (build tfmc first): its absence is a failure, not a
skip. The expected texts render the reference's ids the way
docs/model-format.md says tfmc renders them (an unk as `<unk>`), which is
also MarianTokenizer.decode's / fairseq's text whenever the ids hold no unk
(checked here too).
"""

import json
import os
import subprocess

import numpy as np
import pytest
import sentencepiece

from conftest import SEARCH, TFMC, fairseq_reference, marian_reference

from tfmc.reference import tfm

MODELS = [("marian", "bin-swish-untied"), ("marian", "bin-swish-tied-positions"),
          ("marian", "bin-separate-vocabs"),
          ("fairseq", "args-sinusoidal-post-relu"), ("fairseq", "cfg-learned-pre-gelu")]
IDS = [f"{kind}:{name}" for kind, name in MODELS]
KERNELS = ["library", "loops"]
MARGIN = 1e-4
GREEDY_LINES = 24
BEAM_LINES = 6


class Case:
    """One converted model with its reference and the chosen dev lines."""

    def __init__(self, kind, files, dev):
        self.kind = kind
        self.out = files["out"]
        self.json = os.path.join(self.out, "model.json")
        if kind == "marian":
            self.ref, tok = marian_reference(files)
            self.encode, self.original_text = tok.encode, tok.decode
        else:
            self.ref, text = fairseq_reference(files)
            self.encode, self.original_text = text.encode, text.decode
        self.start = self.ref.special["decoder_start"]
        self.unk = self.ref.special["unk"] if kind == "fairseq" else files_unk(files)
        self.spm = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(self.out, "source.spm" if kind == "marian" else "src.spm"))
        self.tfm_tgt = tfm.load_tokenizer(self.out, "target")
        with open(self.json, encoding="utf-8") as f:
            vocab_file = json.load(f)["source"]["vocab"]
        self.src_vocab = set(tfm.read_vocab(os.path.join(self.out, vocab_file)))
        # dev lines with clear greedy steps; `unknown`: lines holding a piece
        # SentencePiece marks unknown but the vocabulary has (the originals
        # look pieces up by their text: docs/convert.md)
        self.lines, self.greedy, self.unknown = [], [], []
        for line in dev:
            special = self.unknown_in_vocab(line)
            if len(self.unknown) >= 3 and len(self.lines) >= GREEDY_LINES:
                break
            if (len(self.unknown) >= 3) if special else (len(self.lines) >= GREEDY_LINES):
                continue
            margins = []
            out = self.ref.greedy(self.encode(line), margins=margins, **SEARCH)
            if min(margins, default=1.0) < MARGIN:
                continue
            if special:
                self.unknown.append((line, out))
            else:
                self.lines.append(line)
                self.greedy.append(out)

    def unknown_in_vocab(self, line):
        ids, pieces = self.spm.encode(line), self.spm.encode(line, out_type=str)
        return any(self.spm.is_unknown(i) and p in self.src_vocab for i, p in zip(ids, pieces))

    def text(self, ids):
        return self.tfm_tgt.decode(ids)


def files_unk(files):
    with open(os.path.join(files["orig"], "vocab.json"), encoding="utf-8") as f:
        return json.load(f)["<unk>"]


@pytest.fixture(scope="module")
def cases(marian_models, fairseq_models, dev):
    made = {}

    def get(key):
        if key not in made:
            kind, name = key.split(":", 1)
            files = marian_models(name) if kind == "marian" else fairseq_models(name)
            made[key] = Case(kind, files, dev)
        return made[key]
    return get


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tfmc-cache"))


def tfmc(cache_dir, *args, stdin=None):
    assert os.path.exists(TFMC), f"{TFMC} is missing: build tfmc first (cmake --build build)"
    r = subprocess.run([TFMC] + [str(a) for a in args] + ["--cache-dir", cache_dir], input=stdin,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"tfmc {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr.strip()}"
    return r.stdout


@pytest.mark.parametrize("key", IDS)
def test_compile(key, cases, cache_dir):
    c = cases(key)
    assert os.path.exists(TFMC), f"{TFMC} is missing: build tfmc first (cmake --build build)"
    r = subprocess.run([TFMC, "compile", c.json, "--emit=tfm"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr.strip()


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("key", IDS)
def test_greedy_text(key, kernels, cases, cache_dir):
    c = cases(key)
    assert len(c.lines) >= 20, f"only {len(c.lines)} dev lines with clear greedy steps"
    out = tfmc(cache_dir, "translate", c.json, f"--kernels={kernels}", stdin="\n".join(c.lines) + "\n")
    got = out.split("\n")[:-1]
    assert len(got) == len(c.lines)
    want = [c.text(ids) for ids in c.greedy]
    bad = [(l, g, w) for l, g, w in zip(c.lines, got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(want)} lines differ, first: {bad[0]}"
    for ids, w in zip(c.greedy, want):
        if c.unk not in ids:
            assert c.original_text(ids) == w, (ids, c.original_text(ids), w)


@pytest.mark.parametrize("key", IDS)
def test_greedy_ids(key, cases, cache_dir):
    c = cases(key)
    src = "".join(" ".join(map(str, c.encode(l))) + "\n" for l in c.lines)
    out = tfmc(cache_dir, "translate", c.json, "--ids", stdin=src)
    got = [[int(t) for t in l.split()] for l in out.split("\n")[:-1]]
    assert got == c.greedy


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("key", IDS)
def test_forward(key, kernels, cases, cache_dir, tmp_path):
    c = cases(key)
    srcs = [c.encode(l) for l in c.lines[:8]]
    tgts = [[c.start] + ids[:12] for ids in c.greedy[:8]]
    (tmp_path / "src.ids").write_text("".join(" ".join(map(str, s)) + "\n" for s in srcs))
    (tmp_path / "tgt.ids").write_text("".join(" ".join(map(str, t)) + "\n" for t in tgts))
    tfmc(cache_dir, "forward", c.json, "--src", tmp_path / "src.ids", "--tgt", tmp_path / "tgt.ids",
         "-o", tmp_path / "logits.npy", f"--kernels={kernels}")
    got = np.load(tmp_path / "logits.npy")
    want = c.ref.forward_ids(srcs, tgts)
    assert got.shape == want.shape
    for r, t in enumerate(tgts):
        x, y = got[r, :len(t)].astype(np.float64), want[r, :len(t)].astype(np.float64)
        diff = float(np.abs(x - y).max()) / max(1.0, float(np.abs(y).max()))
        assert diff < 1e-4, f"row {r}: logits differ by {diff:.3g} (relative)"


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("key", IDS)
def test_beam_nbest(key, kernels, cases, cache_dir):
    c = cases(key)
    lines, want = [], []
    for line in c.lines:
        margins = []
        hyps = c.ref.beam(c.encode(line), 4, n_best=4, margins=margins, **SEARCH)
        if min(margins, default=1.0) < MARGIN:
            continue
        lines.append(line)
        want.append([(c.text(ids), score) for ids, score in hyps])
        if len(lines) >= BEAM_LINES:
            break
    assert len(lines) >= 4
    out = tfmc(cache_dir, "translate", c.json, "--beam-size", "4", "--n-best", "4", "--scores",
               f"--kernels={kernels}", stdin="\n".join(lines) + "\n")
    got = [[] for _ in lines]
    for row in out.split("\n")[:-1]:
        i, text, score = row.split(" ||| ")
        got[int(i)].append((text, float(score)))
    for line, g, w in zip(lines, got, want):
        assert [t for t, _ in g] == [t for t, _ in w], line
        assert np.allclose([s for _, s in g], [s for _, s in w], atol=1e-4), (line, g, w)


@pytest.mark.parametrize("key", IDS)
def test_int8_runs(key, cases, cache_dir):
    c = cases(key)
    lines = c.lines[:20] + ["", "你好。"]
    out = tfmc(cache_dir, "translate", c.json, "--compute-type", "int8", stdin="\n".join(lines) + "\n")
    assert out.count("\n") == len(lines)


@pytest.mark.parametrize("key", IDS)
def test_greedy_text_with_pieces_sentencepiece_does_not_know(key, cases, cache_dir):
    """A piece SentencePiece marks unknown (a rare character: its piece is the
    character itself) is looked up by its text, as MarianTokenizer and
    fairseq's Dictionary do: fairseq's dict.txt, built from the encoded
    training text, holds many such pieces."""
    c = cases(key)
    assert c.unknown, "no dev line with such pieces"
    lines = [l for l, _ in c.unknown]
    got = tfmc(cache_dir, "translate", c.json, stdin="\n".join(lines) + "\n").split("\n")[:-1]
    assert got == [c.text(ids) for _, ids in c.unknown]
