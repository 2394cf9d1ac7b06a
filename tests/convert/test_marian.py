"""`tfmc-convert marian` against the original semantics (pure Python).

Each variant is a random-weight MarianMTModel directory in the exact layout
of a Hugging Face download (checkpoints.make_marian): it is converted, and
the written tfmc model, run by tfmc.reference.tfm, must give the logits and
greedy translations that tfmc.reference.marian computes from the ORIGINAL
files with transformers' semantics.
"""

import json
import os
import random

import numpy as np
import pytest

from conftest import MARIAN, SEARCH, convert, marian_reference

from tfmc.reference import tfm

VARIANTS = sorted(MARIAN)


def text_batches(model, tok, lines, rng):
    """Sources: tokenized dev lines; targets: decoder start + random target ids (not pad)."""
    srcs = [tok.encode(l) for l in lines]
    V = model.special["pad"]
    tgts = [[model.special["decoder_start"]] + [rng.randrange(0, V) for _ in range(rng.randint(0, 12))]
            for _ in lines]
    return srcs, tgts


def relative_difference(a, b, tgts):
    worst = 0.0
    for r, t in enumerate(tgts):
        x, y = a[r, :len(t)].astype(np.float64), b[r, :len(t)].astype(np.float64)
        worst = max(worst, float(np.abs(x - y).max()) / max(1.0, float(np.abs(y).max())))
    return worst


@pytest.mark.parametrize("name", VARIANTS)
def test_logits_match_the_original(name, marian_models, dev):
    m = marian_models(name)
    ref, tok = marian_reference(m)
    written = tfm.load(m["out"])
    rng = random.Random(7)
    for start in (0, 40):
        srcs, tgts = text_batches(ref, tok, dev[start:start + 5], rng)
        diff = relative_difference(written.forward_ids(srcs, tgts), ref.forward_ids(srcs, tgts), tgts)
        assert diff < 1e-4, f"{name}: logits differ by {diff:.3g} (relative)"


@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_and_beam_ids_match_the_original(name, marian_models, dev):
    m = marian_models(name)
    ref, tok = marian_reference(m)
    written = tfm.load(m["out"])
    compared = 0
    for line in dev[:8]:
        ids = tok.encode(line)
        margins = []
        want = ref.greedy(ids, margins=margins, **SEARCH)
        if min(margins, default=1) < 1e-4:
            continue
        assert written.greedy(ids, **SEARCH) == want, line
        compared += 1
    assert compared >= 5
    line = dev[1]
    want = ref.beam(tok.encode(line), 3, n_best=3, max_length=20)
    got = written.beam(tok.encode(line), 3, n_best=3, max_length=20)
    assert [h for h, _ in got] == [h for h, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-4)


def test_model_json_and_files(marian_models):
    m = marian_models("bin-swish-untied")
    with open(os.path.join(m["out"], "model.json")) as f:
        desc = json.load(f)
    with open(os.path.join(m["orig"], "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(m["orig"], "config.json")) as f:
        config = json.load(f)
    pad = vocab["<pad>"]
    assert desc["architecture"] == {
        "d_model": 32, "num_heads": 4, "num_encoder_layers": 2, "num_decoder_layers": 2, "d_ff": 64,
        "max_len": 64, "activation": "silu", "norm": "post", "layer_norm_eps": 1e-5,
        "embedding_scale": True, "positional_encoding": "table"}
    assert desc["special_tokens"] == {"pad": pad, "eos": 0, "unk": 1, "decoder_start": pad,
                                      "never_generate": [pad]}
    assert config["decoder_start_token_id"] == pad
    for side, spm in (("source", "source.spm"), ("target", "target.spm")):
        assert desc[side] == {"vocab": "vocab.txt", "tokenizer": "sentencepiece", "model": spm,
                              "piece_ids": "vocab"}
        with open(os.path.join(m["orig"], spm), "rb") as a, open(os.path.join(m["out"], spm), "rb") as b:
            assert a.read() == b.read()
    assert "bos" not in desc["special_tokens"]
    assert tfm.read_vocab(os.path.join(m["out"], "vocab.txt")) == sorted(vocab, key=vocab.get)
    weights = tfm.read_safetensors(os.path.join(m["out"], "model.safetensors"))
    import torch
    orig = torch.load(os.path.join(m["orig"], "pytorch_model.bin"))
    assert np.array_equal(weights["linear.bias"], orig["final_logits_bias"][0].numpy())
    assert np.array_equal(weights["linear.weight"], orig["lm_head.weight"].numpy())
    from tfmc.reference.marian import sinusoid_table
    assert weights["encoder_positions.weight"].shape == (64, 32)
    assert np.array_equal(weights["decoder_positions.weight"], sinusoid_table(64, 32).numpy())


def test_separate_vocabularies(marian_models):
    m = marian_models("bin-separate-vocabs")
    with open(os.path.join(m["out"], "model.json")) as f:
        desc = json.load(f)
    assert desc["source"]["vocab"] == "source.vocab.txt" and desc["target"]["vocab"] == "target.vocab.txt"
    with open(os.path.join(m["orig"], "target_vocab.json"), encoding="utf-8") as f:
        target = json.load(f)
    assert tfm.read_vocab(os.path.join(m["out"], "target.vocab.txt")) == sorted(target, key=target.get)
    weights = tfm.read_safetensors(os.path.join(m["out"], "model.safetensors"))
    assert not np.array_equal(weights["encoder_embedding.weight"], weights["decoder_embedding.weight"])


@pytest.mark.parametrize("key", ["state_dict", "model"])
def test_a_state_dict_saved_inside_a_dict(marian_models, tmp_path, capsys, key):
    # pytorch_model.bin holding {key: state_dict, "epoch": ...} converts and
    # checks as the bare state_dict does (the check's reader unwrapped it
    # too only from 2026-12-05: it failed with an AttributeError).
    import shutil
    import torch
    m = marian_models("bin-swish-untied")
    d = tmp_path / "wrapped"
    shutil.copytree(m["orig"], d)
    sd = torch.load(d / "pytorch_model.bin")
    torch.save({key: sd, "epoch": 3}, d / "pytorch_model.bin")
    rc, stdout, err = convert(["marian", d, "-o", tmp_path / "o"], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout, err
    a = tfm.read_safetensors(os.path.join(m["out"], "model.safetensors"))
    b = tfm.read_safetensors(os.path.join(tmp_path / "o", "model.safetensors"))
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_missing_final_logits_bias_is_zero(marian_models):
    m = marian_models("st-relu-no-head-no-bias")
    weights = tfm.read_safetensors(os.path.join(m["out"], "model.safetensors"))
    assert not weights["linear.bias"].any()
    assert np.array_equal(weights["linear.weight"], weights["decoder_embedding.weight"])


def test_f16_and_max_len(marian_models, tmp_path, capsys):
    m = marian_models("bin-swish-untied")
    out = tmp_path / "f16"
    rc, stdout, _ = convert(["marian", m["orig"], "-o", out, "--dtype", "f16", "--max-len", "24"], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout
    with open(out / "model.json") as f:
        assert json.load(f)["architecture"]["max_len"] == 24
    with open(out / "model.safetensors", "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    assert header["encoder_positions.weight"] == {**header["encoder_positions.weight"], "dtype": "F16",
                                                  "shape": [24, 32]}


@pytest.mark.parametrize("max_len", ["1", "2"])
def test_the_check_fits_the_smallest_max_len(marian_models, tmp_path, capsys, max_len):
    # At max_len 1 a source is its eos alone: the check's sources were one
    # token longer than the model holds, a false "logits differ" alarm.
    m = marian_models("bin-swish-untied")
    rc, stdout, err = convert(["marian", m["orig"], "-o", tmp_path / "o", "--max-len", max_len], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout, err


def test_the_check_catches_a_wrong_mapping(marian_models, tmp_path, capsys, monkeypatch):
    from tfmc.convert import common
    m = marian_models("bin-swish-untied")
    swapped = dict(common.FAIRSEQ_LINEARS, query_linear="k_proj", key_linear="q_proj")
    monkeypatch.setattr(common, "FAIRSEQ_LINEARS", swapped)
    rc, stdout, err = convert(["marian", m["orig"], "-o", tmp_path / "bad"], capsys)
    assert rc == 1 and "FAILED" in stdout
    assert err.count("error:") == 1 and "differ from the original's" in err


def test_summary_and_check_lines(marian_models, tmp_path, capsys):
    m = marian_models("st-relu-no-head-no-bias")
    rc, stdout, err = convert(["marian", m["orig"], "-o", tmp_path / "o"], capsys)
    assert rc == 0
    assert stdout.startswith(f"wrote {tmp_path / 'o'}: Marian, d_model 32, 2+2 layers, 4 heads")
    assert "check:" in stdout and "(ok, tolerance 0.0001)" in stdout
    assert "note:" in err and "final_logits_bias" in err


def test_tokenization_of_known_pieces_agrees(marian_models, dev):
    """tfmc's `piece_ids: vocab` encoding (tfmc.reference.tfm) gives
    MarianTokenizer's ids on every dev line whose pieces SentencePiece knows,
    and the decoding gives MarianTokenizer.decode's text when there is no unk."""
    m = marian_models("bin-swish-untied")
    ref, tok = marian_reference(m)
    src = tfm.load_tokenizer(m["out"], "source")
    tgt = tfm.load_tokenizer(m["out"], "target")
    agree = 0
    for line in dev[:300]:
        pieces = tok.src_spm.encode(line)
        if any(tok.src_spm.is_unknown(i) for i in pieces):
            continue
        assert src.encode(line) == tok.encode(line), line
        agree += 1
    assert agree > 150
    rng = random.Random(3)
    unk = tok.unk_id
    for _ in range(50):
        ids = [rng.randrange(2, ref.special["pad"]) for _ in range(rng.randint(1, 15))]
        assert unk not in ids
        assert tgt.decode(ids) == tok.decode(ids), ids


def test_tokenization_of_unknown_pieces_agrees(marian_models, dev):
    m = marian_models("bin-swish-untied")
    _, tok = marian_reference(m)
    src = tfm.load_tokenizer(m["out"], "source")
    lines = [l for l in dev if src.encode(l) != tok.encode(l)]
    assert not lines, f"{len(lines)} dev lines tokenize differently, e.g. {lines[0]!r}"
