"""Shared fixtures of tests/convert: the Tatoeba data (read in place, never
copied into the repository), tiny SentencePiece models trained on it at test
time, random-weight Marian and fairseq checkpoints in their on-disk layouts
(checkpoints.py), their tfmc conversions, and ways to run tfmc-convert and
build/bin/tfmc."""

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checkpoints as ck  # noqa: E402

DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "tatoeba-zh-en")
TFMC = os.environ.get("TFMC_BIN", os.path.join(ROOT, "build", "bin", "tfmc"))
TRAIN_LINES = 3000
# tfmc translate's defaults, which the reference searches must use too
SEARCH = dict(max_length=256, max_length_factor=3.0, max_length_offset=10)

# name -> make_marian options
MARIAN = {
    # untied output (tie_word_embeddings false): varied random translations
    "bin-swish-untied": dict(fmt="bin", activation="swish", tie=False),
    # an older conversion: tied output, stored position tables, zero pad row
    "bin-swish-tied-positions": dict(fmt="bin", activation="swish", positions=True, zero_pad_row=True),
    # safetensors without lm_head / final_logits_bias, relu
    "st-relu-no-head-no-bias": dict(fmt="safetensors", activation="relu", lm_head=False,
                                    final_logits_bias=False, tie=True),
    # separate vocabularies and embeddings (share_encoder_decoder_embeddings false)
    "bin-separate-vocabs": dict(fmt="bin", activation="swish", separate=True, tie=False),
    # safetensors holding the encoder's embedding name only, gelu, untied
    "st-gelu-encoder-names": dict(fmt="safetensors", activation="gelu", positions=True, tie=False,
                                  shared_names=("model.encoder.embed_tokens.weight",)),
}

# name -> (make_fairseq options, post-edit of the saved checkpoint or None)
FAIRSEQ = {
    "args-sinusoidal-post-relu": (dict(style="args", activation="relu"), None),
    "cfg-learned-pre-gelu": (dict(style="cfg", learned_pos=True, normalize_before=True, activation="gelu"), None),
    "cfgns-sinusoidal-pre-swish-tied": (dict(style="cfg-namespace", normalize_before=True, activation="swish",
                                             share_decoder_input_output_embed=True), None),
    "args-old-names": (dict(style="args", activation="relu"), "old_names"),
    "args-joined-share-all-noscale": (dict(style="args", joined=True, activation="relu",
                                           arg_overrides={"no_scale_embedding": True}), None),
    "args-pre-no-decoder-final-norm": (dict(style="args", normalize_before=True,
                                            arg_overrides={"no_decoder_final_norm": True}), "no_decoder_norm"),
    "args-no-positions": (dict(style="args", arg_overrides={"no_token_positional_embeddings": True}),
                          "no_positions"),
}


def read_lines(name, n=None):
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        pytest.fail(f"{path}: the Tatoeba zh-en data must be at <repo>/../shared/data/tatoeba-zh-en")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return lines[:n] if n else lines


@pytest.fixture(scope="session")
def corpus():
    return {"zh": read_lines("train.zh", TRAIN_LINES), "en": read_lines("train.en", TRAIN_LINES)}


@pytest.fixture(scope="session")
def dev():
    return read_lines("dev.zh")


@pytest.fixture(scope="session")
def spm_models(tmp_path_factory, corpus):
    """(source, target) SentencePiece models: unigram, trained on 3000 Tatoeba
    lines; the Chinese one with 98% character coverage, so that rare
    characters are unknown to it, as in real models."""
    d = tmp_path_factory.mktemp("spm")
    zh = ck.train_spm(corpus["zh"], str(d / "zh"), 1600, 0.98)
    en = ck.train_spm(corpus["en"], str(d / "en"), 500, 1.0)
    return zh, en


def convert(argv, capsys=None):
    """tfmc-convert in-process: (status, stdout, stderr)."""
    from tfmc.convert.__main__ import main
    rc = main([str(a) for a in argv])
    if capsys is None:
        return rc, "", ""
    out, err = capsys.readouterr()
    return rc, out, err


def convert_cli(argv, timeout=None):
    """tfmc-convert as a command (python3 -m tfmc.convert): CompletedProcess.
    `timeout` (seconds): a command still running then fails the test."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    try:
        return subprocess.run([sys.executable, "-m", "tfmc.convert"] + [str(a) for a in argv],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tfmc-convert {' '.join(map(str, argv))} still ran after {timeout} s")


def _post_edit(ckpt_path, how):
    ckpt = torch.load(ckpt_path, weights_only=False)  # our own file
    sd = ckpt["model"]
    if how == "old_names":  # fairseq before upgrade_state_dict: layer_norms.K, packed in_proj, embed_out
        new = {}
        for k, v in sd.items():
            for stack, m in (("encoder", {"self_attn_layer_norm": "0", "final_layer_norm": "1"}),
                             ("decoder", {"self_attn_layer_norm": "0", "encoder_attn_layer_norm": "1",
                                          "final_layer_norm": "2"})):
                for name, idx in m.items():
                    if k.startswith(f"{stack}.layers.") and f".{name}." in k:
                        k = k.replace(f".{name}.", f".layer_norms.{idx}.")
            new[k] = v
        for k in [k for k in new if k.endswith(".q_proj.weight") or k.endswith(".q_proj.bias")]:
            base, t = k.rsplit(".q_proj.", 1)
            packed = torch.cat([new.pop(f"{base}.{p}.{t}") for p in ("q_proj", "k_proj", "v_proj")])
            new[f"{base}.in_proj_{t}"] = packed
        new["decoder.embed_out"] = new.pop("decoder.output_projection.weight")
        sd = new
    elif how == "no_decoder_norm":
        del sd["decoder.layer_norm.weight"], sd["decoder.layer_norm.bias"]
    elif how == "no_positions":
        del sd["encoder.embed_positions._float_tensor"], sd["decoder.embed_positions._float_tensor"]
    ckpt["model"] = sd
    torch.save(ckpt, ckpt_path)


@pytest.fixture(scope="session")
def marian_models(tmp_path_factory, spm_models):
    """name -> {"orig": Marian directory, "out": converted directory, "stdout": ...},
    built on first use."""
    cache = {}

    def get(name):
        if name not in cache:
            d = tmp_path_factory.mktemp(f"marian-{name}")
            orig = ck.make_marian(str(d / "opus-mt"), *spm_models, **MARIAN[name])
            out = str(d / "tfmc")
            rc, _, _ = convert(["marian", orig, "-o", out])
            assert rc == 0, f"converting {name} failed"
            cache[name] = {"orig": orig, "out": out}
        return cache[name]
    return get


@pytest.fixture(scope="session")
def fairseq_models(tmp_path_factory, spm_models, corpus):
    cache = {}

    def get(name):
        if name not in cache:
            opts, edit = FAIRSEQ[name]
            d = tmp_path_factory.mktemp(f"fairseq-{name}")
            files = ck.make_fairseq(str(d / "fairseq"), *spm_models, corpus["zh"], corpus["en"], **opts)
            if edit:
                _post_edit(files["ckpt"], edit)
            out = str(d / "tfmc")
            rc, _, _ = convert(["fairseq", files["ckpt"], "--src-dict", files["src_dict"], "--tgt-dict",
                          files["tgt_dict"], "--src-spm", files["src_spm"], "--tgt-spm", files["tgt_spm"],
                          "-o", out])
            assert rc == 0, f"converting {name} failed"
            cache[name] = dict(files, out=out)
        return cache[name]
    return get


def marian_reference(m):
    from tfmc.reference import marian
    return marian.load(m["orig"])


def fairseq_reference(f):
    from tfmc.reference import fairseq
    return fairseq.load(f["ckpt"], f["src_dict"], f["tgt_dict"], f["src_spm"], f["tgt_spm"])
