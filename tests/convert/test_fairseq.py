"""`tfmc-convert fairseq` against the original semantics (pure Python).

Each variant is a random-weight fairseq `transformer` checkpoint in the
exact layout fairseq saves (checkpoints.make_fairseq: `args` Namespace or
`cfg` dict, `model`, optimizer history; dict.zh.txt / dict.en.txt as
fairseq-preprocess writes them for SentencePiece data): it is converted, and
the written tfmc model, run by tfmc.reference.tfm, must give the logits and
greedy translations tfmc.reference.fairseq computes from the ORIGINAL files
with fairseq's semantics.
"""

import json
import os
import random

import numpy as np
import pytest

from conftest import FAIRSEQ, SEARCH, convert, fairseq_reference
from test_marian import relative_difference

from tfmc.reference import tfm

VARIANTS = sorted(FAIRSEQ)


@pytest.mark.parametrize("name", VARIANTS)
def test_logits_match_the_original(name, fairseq_models, dev):
    f = fairseq_models(name)
    ref, text = fairseq_reference(f)
    written = tfm.load(f["out"])
    rng = random.Random(5)
    V = len(text.tgt_dict)
    for start in (0, 40):
        srcs = [text.encode(l) for l in dev[start:start + 5]]
        tgts = [[2] + [rng.randrange(2, V) for _ in range(rng.randint(0, 12))] for _ in srcs]
        diff = relative_difference(written.forward_ids(srcs, tgts), ref.forward_ids(srcs, tgts), tgts)
        assert diff < 1e-4, f"{name}: logits differ by {diff:.3g} (relative)"


@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_and_beam_ids_match_the_original(name, fairseq_models, dev):
    f = fairseq_models(name)
    ref, text = fairseq_reference(f)
    written = tfm.load(f["out"])
    compared = 0
    for line in dev[:8]:
        ids = text.encode(line)
        margins = []
        want = ref.greedy(ids, margins=margins, **SEARCH)
        if min(margins, default=1) < 1e-4:
            continue
        assert written.greedy(ids, **SEARCH) == want, line
        compared += 1
    assert compared >= 5
    ids = text.encode(dev[2])
    want = ref.beam(ids, 3, n_best=3, max_length=20)
    got = written.beam(ids, 3, n_best=3, max_length=20)
    assert [h for h, _ in got] == [h for h, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-4)


def _desc(f):
    with open(os.path.join(f["out"], "model.json")) as fh:
        return json.load(fh)


def test_model_json(fairseq_models):
    f = fairseq_models("args-sinusoidal-post-relu")
    desc = _desc(f)
    assert desc["architecture"] == {
        "d_model": 32, "num_heads": 4, "num_encoder_layers": 2, "num_decoder_layers": 2, "d_ff": 64,
        "max_len": 64, "activation": "relu", "norm": "post", "layer_norm_eps": 1e-5,
        "embedding_scale": True, "positional_encoding": "table"}
    assert desc["special_tokens"] == {"pad": 1, "bos": 0, "eos": 2, "unk": 3, "decoder_start": 2,
                                      "never_generate": [1]}
    assert desc["source"] == {"vocab": "src.vocab", "tokenizer": "sentencepiece", "model": "src.spm",
                              "piece_ids": "vocab"}
    src = tfm.read_vocab(os.path.join(f["out"], "src.vocab"))
    with open(f["src_dict"], encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert src == ["<s>", "<pad>", "</s>", "<unk>"] + [l.rsplit(" ", 1)[0] for l in lines]
    assert src[-1].startswith("madeupword")
    weights = tfm.read_safetensors(os.path.join(f["out"], "model.safetensors"))
    assert not weights["linear.bias"].any()
    from tfmc.reference.fairseq import sinusoidal_table
    assert np.array_equal(weights["encoder_positions.weight"], sinusoidal_table(66, 32, 1)[2:].numpy())


def test_pre_norm_variants(fairseq_models):
    arch = _desc(fairseq_models("cfg-learned-pre-gelu"))["architecture"]
    assert arch["norm"] == "pre" and arch["activation"] == "gelu"
    assert "encoder_final_norm" not in arch and "decoder_final_norm" not in arch
    arch = _desc(fairseq_models("args-pre-no-decoder-final-norm"))["architecture"]
    assert arch["norm"] == "pre" and arch["decoder_final_norm"] is False
    assert _desc(fairseq_models("cfgns-sinusoidal-pre-swish-tied"))["architecture"]["activation"] == "silu"


def test_joined_dictionary_and_shared_embeddings(fairseq_models):
    f = fairseq_models("args-joined-share-all-noscale")
    assert _desc(f)["architecture"]["embedding_scale"] is False
    weights = tfm.read_safetensors(os.path.join(f["out"], "model.safetensors"))
    assert np.array_equal(weights["encoder_embedding.weight"], weights["decoder_embedding.weight"])
    assert np.array_equal(weights["linear.weight"], weights["decoder_embedding.weight"])
    vocab = [tfm.read_vocab(os.path.join(f["out"], name)) for name in ("src.vocab", "tgt.vocab")]
    assert vocab[0] == vocab[1]


def test_no_positions_gives_zero_tables(fairseq_models):
    weights = tfm.read_safetensors(os.path.join(fairseq_models("args-no-positions")["out"], "model.safetensors"))
    assert not weights["encoder_positions.weight"].any() and not weights["decoder_positions.weight"].any()


def test_word_tokenizers_without_spm(fairseq_models, tmp_path, capsys):
    f = fairseq_models("args-sinusoidal-post-relu")
    base = ["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"], "-o", tmp_path / "w"]
    rc, _, err = convert(base, capsys)
    assert rc == 1 and err.count("error:") == 1 and "--src-tokenizer word|char" in err
    rc, stdout, _ = convert(base + ["--src-tokenizer", "char", "--tgt-tokenizer", "word", "--no-check"], capsys)
    assert rc == 0
    desc = json.loads((tmp_path / "w" / "model.json").read_text())
    assert desc["source"] == {"vocab": "src.vocab", "tokenizer": "char"}
    assert desc["target"] == {"vocab": "tgt.vocab", "tokenizer": "word"}
    assert not (tmp_path / "w" / "src.spm").exists()


def test_f16(fairseq_models, tmp_path, capsys):
    f = fairseq_models("cfg-learned-pre-gelu")
    rc, stdout, _ = convert(["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"],
                             "--src-spm", f["src_spm"], "--tgt-spm", f["tgt_spm"], "-o", tmp_path / "h",
                             "--dtype", "f16", "--max-len", "40"], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout and "rounded to f16" in stdout


def test_swapped_sentencepiece_models_get_a_note(fairseq_models, tmp_path, capsys):
    f = fairseq_models("cfg-learned-pre-gelu")
    common = ["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"], "--no-check"]
    rc, _, err = convert(common + ["--src-spm", f["src_spm"], "--tgt-spm", f["tgt_spm"], "-o", tmp_path / "ok"],
                         capsys)
    assert rc == 0 and "knows only" not in err, err
    rc, _, err = convert(common + ["--src-spm", f["tgt_spm"], "--tgt-spm", f["src_spm"], "-o", tmp_path / "sw"],
                         capsys)
    assert rc == 0, err
    notes = [l for l in err.splitlines() if "knows only" in l]
    assert len(notes) == 2 and all(l.startswith("note: ") and "other way round" in l for l in notes), err


def test_output_directory_already_holding_the_spm(fairseq_models, tmp_path, capsys):
    # Copying the model onto itself failed: "cannot copy ...: None".
    import shutil
    f = fairseq_models("cfg-learned-pre-gelu")
    out = tmp_path / "o"
    out.mkdir()
    shutil.copyfile(f["src_spm"], out / "src.spm")
    rc, stdout, err = convert(["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"],
                               "--src-spm", out / "src.spm", "--tgt-spm", f["tgt_spm"], "-o", out], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout, err


def test_the_check_fits_max_len_1(fairseq_models, tmp_path, capsys):
    f = fairseq_models("cfg-learned-pre-gelu")
    rc, stdout, err = convert(["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"],
                               "--src-spm", f["src_spm"], "--tgt-spm", f["tgt_spm"], "-o", tmp_path / "one",
                               "--max-len", "1"], capsys)
    assert rc == 0 and "(ok, tolerance" in stdout, err


def test_tokenization_of_known_pieces_agrees(fairseq_models, dev):
    """tfmc's encoding gives fairseq's ids (spm pieces -> Dictionary.encode_line)
    on the dev lines whose pieces SentencePiece knows."""
    f = fairseq_models("args-sinusoidal-post-relu")
    _, text = fairseq_reference(f)
    src = tfm.load_tokenizer(f["out"], "source")
    agree = 0
    for line in dev[:300]:
        if any(text.src_spm.is_unknown(i) for i in text.src_spm.encode(line)):
            continue
        assert src.encode(line) == text.encode(line), line
        agree += 1
    assert agree > 150


def test_tokenization_of_unknown_pieces_agrees(fairseq_models, dev):
    f = fairseq_models("args-sinusoidal-post-relu")
    _, text = fairseq_reference(f)
    src = tfm.load_tokenizer(f["out"], "source")
    lines = [l for l in dev if src.encode(l) != text.encode(l)]
    assert not lines, f"{len(lines)} of {len(dev)} dev lines tokenize differently, e.g. {lines[0]!r}"
