"""Tests of `tfmc-convert pytorch` (python/tfmc/convert/pytorch.py) and its
alias tools/tfmc-import-pytorch (pure Python: no tfmc needed, but see below).

    /usr/bin/python3 -m pytest tests/importer -q

For every layout a small random seed-structured model (tfmc.reference.seeds)
is saved with torch.save, imported into a temporary directory, and the
written model, run by tfmc.reference.tfm.load, must give the seed module's
logits (or encoder states) within 1e-5. The tool's own check must catch a
wrong name map; positional tables are dropped when they are the sinusoid
(within float32 rounding) and kept as position tables otherwise; recipe
options are checked with tfmc's rules and messages. Error cases check the one-line messages and that
a checkpoint holding arbitrary Python objects is refused without running
them.

One group does need tfmc: test_recipe_parser_agrees_with_tfmc runs a list of
good and bad block recipes through tfmc.reference.tfm's parser and through
`build/bin/tfmc compile --emit=tfm` (skipped when that binary does not exist).
"""

import builtins
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "tfmc-import-pytorch")
CONVERT = os.path.join(ROOT, "tools", "tfmc-convert")
sys.path.insert(0, os.path.join(ROOT, "python"))
from tfmc.convert import pytorch as tool  # noqa: E402
from tfmc.convert.__main__ import main as convert_main  # noqa: E402
from tfmc.convert.common import ConversionError  # noqa: E402
from tfmc.reference import seeds as sm  # noqa: E402
from tfmc.reference import tfm as ref  # noqa: E402

# torch 1.13's nn.TransformerEncoder warns about its nested-tensor fast path.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

SRCS = [[5, 6, 7, 3, 9], [8], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 4]]
TGTS = [[1, 4, 5, 6], [1], [1, 7, 8, 9, 10, 11, 12]]


def run(argv, capsys):
    """Run the tool in-process: (exit status, stdout, stderr) as the command line would give."""
    rc = convert_main([str(a) for a in argv], prog="tfmc-import-pytorch", subcommand="pytorch")
    out, err = capsys.readouterr()
    return rc, out, err


def save(tmp_path, obj, name="ckpt.pt"):
    path = tmp_path / name
    torch.save(obj, path)
    return path


def read_json(path):
    with open(path) as f:
        return json.load(f)


def max_logit_diff(a, b, tgts=TGTS):
    return max(float(np.abs(a[r, :len(t)] - b[r, :len(t)]).max()) for r, t in enumerate(tgts))


def canonical_names(arch, src_vocab, tgt_vocab):
    return list(ref.TranslationTransformer(arch, src_vocab, tgt_vocab).state_dict())


def assert_matches_seed(model, out_dir):
    """The written directory, run by the reference, reproduces the seed module."""
    loaded = ref.load(str(out_dir))
    assert max_logit_diff(model.forward_ids(SRCS, TGTS), loaded.forward_ids(SRCS, TGTS)) <= 1e-5
    assert loaded.greedy(SRCS[0], 0, 8) == model.greedy(SRCS[0], 0, 8)
    return loaded


def assert_tensor_names_and_shapes(out_dir, loaded):
    tensors = ref.read_safetensors(os.path.join(out_dir, "model.safetensors"))
    expected = loaded.state_dict()
    assert list(tensors) == list(expected)
    for name, t in tensors.items():
        assert tuple(t.shape) == tuple(expected[name].shape), name


# --------------------------------------------------------------------------- models


def tutorial_model(seed=11):
    return sm.randomize(sm.TutorialTransformer(30, 33, 32, 4, 2, 48, 40).eval(), seed, out_gain=2.0)


def per_head_model(seed=12):
    model = sm.PerHeadTranslationTransformer(24, 50, 3, 3, 30, 0, 33, 0, n_decoder_layers=1)
    return sm.randomize(model.eval(), seed, out_gain=2.0)


def torchnn_model(norm_first, seed=13):
    model = sm.TorchTransformerTranslator(30, 33, d_model=32, nhead=4, num_encoder_layers=2,
                                          num_decoder_layers=1, dim_feedforward=40, norm_first=norm_first,
                                          activation="gelu", max_len=40)
    return sm.randomize(model.eval(), seed, out_gain=2.0)


def seed_encoder(seed=14):
    return sm.randomize(sm.SeedEncoder(40, 32, 24, 4, 64, 2).eval(), seed)


# --------------------------------------------------------------------------- layouts


def test_tutorial_layout(tmp_path, capsys):
    model = tutorial_model()
    ckpt = save(tmp_path, model.state_dict())
    out = tmp_path / "out"
    rc, stdout, err = run([ckpt, "-o", out, "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 0, err
    a = read_json(out / "model.json")["architecture"]
    assert a == dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=48,
                     max_len=40, activation="relu", norm="post", layer_norm_eps=1e-5,
                     embedding_scale=False, positional_encoding="sinusoidal")
    # seed 001 registers its table as positional_encoding.pe: dropped, with a note
    assert "note: dropped positional-encoding buffer 'positional_encoding.pe'" in err
    assert ("check: tfmc.reference.seeds.TutorialTransformer loaded with the checkpoint's tensors (load_state_dict, "
            "strict) vs ") in stdout
    assert "(ok, tolerance 0.0001)" in stdout
    loaded = assert_matches_seed(model, out)
    assert_tensor_names_and_shapes(out, loaded)
    assert list(ref.read_safetensors(out / "model.safetensors")) == canonical_names(a, 30, 33)
    with open(out / "tgt.vocab") as f:
        assert f.read().split() == ref.vocab_tokens(33, "t")


def test_tutorial_layout_pre_norm_has_final_norms(tmp_path, capsys):
    arch = dict(d_model=32, num_heads=4, num_encoder_layers=1, num_decoder_layers=2, d_ff=40, max_len=30,
                activation="gelu", norm="pre", layer_norm_eps=1e-6, embedding_scale=True,
                positional_encoding="sinusoidal")
    model = ref.random_init(ref.TranslationTransformer(arch, 30, 33).eval(), 3, out_gain=2.0)
    ckpt = save(tmp_path, model.state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4, "--norm", "pre",
                      "--activation", "gelu", "--max-len", 30, "--layer-norm-eps", 1e-6, "--embedding-scale"],
                     capsys)
    assert rc == 0, err
    assert read_json(tmp_path / "o" / "model.json")["architecture"] == arch  # final norms implied by "pre"
    assert_matches_seed(model, tmp_path / "o")


def test_per_head_layout(tmp_path, capsys):
    model = per_head_model()
    ckpt = save(tmp_path, model.state_dict())
    out = tmp_path / "out"
    rc, stdout, err = run([ckpt, "-o", out, "--layout", "per-head"], capsys)
    assert rc == 0, err
    a = read_json(out / "model.json")["architecture"]
    assert (a["d_model"], a["num_heads"], a["num_encoder_layers"], a["num_decoder_layers"], a["d_ff"]) == \
        (24, 3, 3, 1, 96)
    assert a["activation"] == "gelu" and a["max_len"] == 50  # max_len from the pe buffers
    assert "norm" not in a
    assert a["encoder_layer"] == tool.SEED000_RECIPES["encoder"]
    assert a["decoder_layer"] == tool.SEED000_RECIPES["decoder"]
    assert "encoder_final_norm" not in a and "decoder_final_norm" not in a
    for name in ("cn_positional_encoding.pe", "en_positional_encoding.pe"):
        assert f"note: dropped positional-encoding buffer '{name}'" in err
    assert "check: tfmc.reference.seeds.PerHeadTranslationTransformer loaded with the checkpoint's tensors" in stdout
    loaded = assert_matches_seed(model, out)
    assert_tensor_names_and_shapes(out, loaded)
    # per-head query linears are concatenated in head order
    q = ref.read_safetensors(out / "model.safetensors")["encoder_layers.2.self_attention.query_linear.weight"]
    heads = [model.transformer_encoder[2].mha.heads[h].query.weight.detach().numpy() for h in range(3)]
    np.testing.assert_array_equal(q, np.concatenate(heads))


def test_per_head_num_heads_must_agree(tmp_path, capsys):
    ckpt = save(tmp_path, per_head_model().state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "per-head", "--num-heads", 4], capsys)
    assert rc == 1 and "--num-heads 4 disagrees with the checkpoint, which has 3 heads" in err


@pytest.mark.parametrize("norm_first", [False, True])
def test_torch_nn_transformer_layout(tmp_path, capsys, norm_first):
    model = torchnn_model(norm_first)
    ckpt = save(tmp_path, model.state_dict())
    out = tmp_path / "out"
    flags = ["--layout", "torch-nn-transformer", "--num-heads", 4, "--max-len", 40, "--activation", "gelu"]
    rc, stdout, err = run([ckpt, "-o", out] + flags + (["--norm", "pre"] if norm_first else []), capsys)
    assert rc == 0, err
    assert "check: tfmc.reference.seeds.TorchTransformerTranslator loaded with the checkpoint's tensors" in stdout
    a = read_json(out / "model.json")["architecture"]
    assert (a["d_model"], a["num_heads"], a["num_encoder_layers"], a["num_decoder_layers"], a["d_ff"]) == \
        (32, 4, 2, 1, 40)
    assert a["norm"] == ("pre" if norm_first else "post")
    assert "encoder_layer" not in a and "decoder_layer" not in a
    if norm_first:  # final norms are implied by "pre"
        assert "encoder_final_norm" not in a and "decoder_final_norm" not in a
    else:  # nn.Transformer has them with post-norm too
        assert a["encoder_final_norm"] is True and a["decoder_final_norm"] is True
    loaded = assert_matches_seed(model, out)
    assert loaded.encoder_final_norm and loaded.decoder_final_norm
    assert_tensor_names_and_shapes(out, loaded)


def test_custom_layout_encoder_only(tmp_path, capsys):
    model = seed_encoder()
    ckpt = save(tmp_path, model.state_dict())
    names = tmp_path / "names.json"
    names.write_text(json.dumps(sm.seed_encoder_names()))
    out = tmp_path / "out"
    rc, stdout, err = run([ckpt, "-o", out, "--layout", "custom", "--names", names, "--num-heads", 4,
                           "--layer-norm-eps", 1e-12], capsys)
    assert rc == 0, err
    desc = read_json(out / "model.json")
    a = desc["architecture"]
    assert "target" not in desc and not (out / "tgt.vocab").exists()
    assert (a["d_model"], a["num_heads"], a["num_encoder_layers"], a["num_decoder_layers"], a["d_ff"]) == \
        (32, 4, 2, 0, 64)
    assert a["norm"] == "post" and a["max_len"] == 24 and a["layer_norm_eps"] == 1e-12
    assert "check: round trip only (custom layout): max state difference 0 " in stdout
    assert "this checks the written files, not the name map or the recipe" in stdout
    loaded = ref.load(str(out))
    assert not loaded.has_decoder
    states = loaded.encode_states(SRCS)
    np.testing.assert_allclose(states, model.encode_states(SRCS), atol=1e-5, rtol=0)
    assert states.shape == (3, 13, 32)
    assert not states[1, 2:].any() and states[1, :2].all()  # rows past "8 eos" are exactly zero
    tensors = ref.read_safetensors(out / "model.safetensors")
    assert all(n.startswith("encoder_") for n in tensors)
    assert len(tensors) == 1 + 16 * 2


@pytest.mark.parametrize("wrap", ["state_dict", "model"])
def test_wrapped_checkpoints(tmp_path, capsys, wrap):
    model = tutorial_model()
    plain = save(tmp_path, model.state_dict(), "plain.pt")
    wrapped = save(tmp_path, {wrap: model.state_dict(), "epoch": 7, "note": "x"}, "wrapped.pt")
    for ckpt, out in ((plain, "a"), (wrapped, "b")):
        rc, _, err = run([ckpt, "-o", tmp_path / out, "--layout", "tutorial", "--num-heads", 4], capsys)
        assert rc == 0, err
    for f in ("model.json", "model.safetensors", "src.vocab", "tgt.vocab"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_names_override_a_default(tmp_path, capsys):
    """--names entries override the layout's defaults (here: a renamed generator)."""
    model = torchnn_model(False)
    sd = model.state_dict()
    sd["out.weight"], sd["out.bias"] = sd.pop("generator.weight"), sd.pop("generator.bias")
    ckpt = save(tmp_path, sd)
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"linear.weight": "out.weight", "linear.bias": "out.bias"}))
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--layout", "torch-nn-transformer", "--num-heads", 4,
                           "--max-len", 40, "--activation", "gelu", "--names", names], capsys)
    assert rc == 0, err
    # the check still loads the checkpoint into nn.Transformer, the generator through --names
    assert "check: tfmc.reference.seeds.TorchTransformerTranslator" in stdout
    assert "2 tensors found through --names" in stdout
    assert_matches_seed(model, tmp_path / "o")


def test_vocabularies_and_f16(tmp_path, capsys):
    model = tutorial_model()
    ckpt = save(tmp_path, model.state_dict())
    src_vocab = tmp_path / "my.src"
    src_vocab.write_text("\n".join(ref.SPECIAL_NAMES + [f"w{i}" for i in range(26)]) + "\n")
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4,
                           "--src-vocab", src_vocab, "--dtype", "f16"], capsys)
    assert rc == 0, err
    # checked against the checkpoint rounded to f16; the rounding itself is reported
    assert ("check: tfmc.reference.seeds.TutorialTransformer loaded with the checkpoint's tensors rounded to f16"
            in stdout)
    line = next(x for x in stdout.splitlines() if x.startswith("check: against the unrounded checkpoint tensors"))
    assert "(f16 rounding; reported, not checked)" in line
    assert 0 < float(line.split("max logit difference ")[1].split()[0]) < 0.05
    assert (tmp_path / "o" / "src.vocab").read_bytes() == src_vocab.read_bytes()
    with open(tmp_path / "o" / "model.safetensors", "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    assert {v["dtype"] for v in header.values()} == {"F16"}
    loaded = ref.load(str(tmp_path / "o"))
    assert max_logit_diff(model.forward_ids(SRCS, TGTS), loaded.forward_ids(SRCS, TGTS)) < 0.05

    bad = tmp_path / "bad.src"
    bad.write_text("a\nb\n")
    rc, _, err = run([ckpt, "-o", tmp_path / "p", "--layout", "tutorial", "--num-heads", 4,
                      "--src-vocab", bad], capsys)
    assert rc == 1 and "has 2 tokens but the checkpoint's source embedding has 30 rows" in err
    assert not (tmp_path / "p").exists()  # nothing written

    # A vocabulary tfmc would refuse is refused here, before anything is
    # written: a repeated token, an empty line, SentencePiece's own .vocab
    # (piece<TAB>score), whose tokens would carry their scores.
    words = ref.SPECIAL_NAMES + [f"w{i}" for i in range(26)]
    for name, lines, message in [
            ("repeat", words[:-1] + ["w3"], "token 29 'w3' repeats token 7"),
            ("empty", words[:10] + [""] + words[11:], "token 10 is empty"),
            ("spm", [f"{w}\t-{i}.5" for i, w in enumerate(words)], "is a SentencePiece .vocab file")]:
        path = tmp_path / f"{name}.src"
        path.write_text("\n".join(lines) + "\n")
        rc, _, err = run([ckpt, "-o", tmp_path / name, "--layout", "tutorial", "--num-heads", 4,
                          "--src-vocab", path], capsys)
        assert rc == 1 and message in err, (name, err)
        assert not (tmp_path / name).exists()


def test_recipe_flags(tmp_path, capsys):
    """--encoder-layer / --decoder-layer describe a variant the layouts do not know."""
    arch = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=1, d_ff=40, max_len=30,
                activation="relu", layer_norm_eps=1e-5, embedding_scale=False, positional_encoding="sinusoidal",
                encoder_layer="h = norm1(x); x = x + self_attn(h) + ffn(h)",
                decoder_layer="x = x + self_attn(x); x = norm2(x + cross_attn(norm1(x))); x = x + ffn(x)",
                encoder_final_norm=True)
    model = ref.random_init(ref.TranslationTransformer(arch, 30, 33).eval(), 4, out_gain=2.0)
    ckpt = save(tmp_path, model.state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4, "--max-len", 30,
                      "--encoder-layer", arch["encoder_layer"], "--decoder-layer", arch["decoder_layer"]], capsys)
    assert rc == 0, err
    a = read_json(tmp_path / "o" / "model.json")["architecture"]
    assert a["encoder_layer"] == arch["encoder_layer"] and a["decoder_layer"] == arch["decoder_layer"]
    assert a["encoder_final_norm"] is True and "decoder_final_norm" not in a
    assert_matches_seed(model, tmp_path / "o")

    rc, _, err = run([ckpt, "-o", tmp_path / "p", "--layout", "tutorial", "--num-heads", 4, "--max-len", 30,
                      "--encoder-layer", "x = self_attn(x)"], capsys)
    assert rc == 1
    assert err == "error: --encoder-layer 'x = self_attn(x)': column 17: no ffn (an encoder layer needs exactly one)\n"
    assert not (tmp_path / "p").exists()


# --------------------------------------------------------------------------- positional tables


def seed000_table(max_len, d_model):
    """Seed 000's PositionEncoding table, computed as the tutorial does (float32 pow)."""
    pe = torch.zeros(size=(max_len, d_model))
    pos = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.pow(10000, (torch.arange(0, d_model, 2) / d_model))
    pe[:, 0::2] = torch.sin(pos / div_term)
    pe[:, 1::2] = torch.cos(pos / div_term)
    return pe


def seed001_table(max_len, d_model):
    """Seed 001's PositionalEncoding table (float32 exp/log), without its leading batch dim."""
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-torch.log(torch.tensor(10000.0)) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@pytest.mark.parametrize("make", [seed000_table, seed001_table])
def test_seed_tables_with_5000_rows_are_dropped(make, capsys):
    """Float32 rounding of large angles (~4e-4 at position 5000) is not a learned table."""
    table = make(5000, 512)
    diff = float((table.double() - torch.from_numpy(tool.sinusoidal_table(5000, 512))).abs().max())
    assert 1e-4 < diff < 1e-3  # beyond a flat 1e-4: the tolerance has to grow with the position
    tensors = {"positional_encoding.pe": table[None], "cn_positional_encoding.pe": table, "w": torch.ones(2)}
    assert tool.split_positional_tables(tensors, {}) == ({"positional_encoding.pe": (5000, 512),
                                                          "cn_positional_encoding.pe": (5000, 512)}, {})
    assert list(tensors) == ["w"]
    err = capsys.readouterr().err
    assert err.count("note: dropped positional-encoding buffer") == 2 and "learned" not in err


def test_seed001_table_of_5000_rows_imports(tmp_path, capsys):
    """Seed 001's default max_len=5000, its table computed the tutorial's way."""
    model = tutorial_model()
    sd = model.state_dict()
    sd["positional_encoding.pe"] = seed001_table(5000, 32)[None]
    rc, stdout, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4],
                          capsys)
    assert rc == 0, err
    assert "note: dropped positional-encoding buffer 'positional_encoding.pe' [1, 5000, 32]" in err
    assert read_json(tmp_path / "o" / "model.json")["architecture"]["max_len"] == 5000
    assert "(ok, tolerance 0.0001)" in stdout


def test_seed_model_tables_are_dropped_without_warning(tmp_path, capsys):
    for model in (tutorial_model(), per_head_model(), seed_encoder()):
        tensors = dict(model.state_dict())
        dropped, learned = tool.split_positional_tables(tensors, {})
        assert dropped and not learned and not any(tool.is_positional_candidate(n) for n in tensors)
    err = capsys.readouterr().err
    assert "learned" not in err.lower() and "WARNING" not in err


def learned(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 0.5


def tutorial_expected(sd, table):
    """Seed 001's module with `table` as its positional buffer: what a
    tutorial checkpoint with a learned (shared) table computes."""
    module = sm.TutorialTransformer(30, 33, 32, 4, 2, 48, 40).eval()
    sd = {k: v for k, v in sd.items() if k in module.state_dict()}
    sd["positional_encoding.pe"] = table.reshape(1, 40, 32)
    module.load_state_dict(sd, strict=True)
    return module


@pytest.mark.parametrize("name, table", [
    ("positional_encoding.pe", learned((1, 40, 32), 1)),
    ("pos_embedding.weight", learned((40, 32), 2)),
    ("emb.position_embeddings.weight", learned((64, 1, 32), 3)),
])
def test_one_learned_table_serves_both_sides(tmp_path, capsys, name, table):
    """A learned table (not the sinusoid) becomes "positional_encoding": "table",
    written under both names; the model computes what the checkpoint does."""
    sd = tutorial_model().state_dict()
    del sd["positional_encoding.pe"]
    sd[name] = table
    rc, stdout, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4,
                           "--max-len", 40], capsys)
    assert rc == 0, err
    assert f"note: kept learned positional table '{name}' {list(table.shape)}" in err
    arch = read_json(tmp_path / "o" / "model.json")["architecture"]
    assert arch["positional_encoding"] == "table" and arch["max_len"] == 40
    tensors = ref.read_safetensors(os.path.join(tmp_path, "o", "model.safetensors"))
    rows = tool.table_rows(table)[:40].numpy()
    assert list(tensors)[-2:] == ["encoder_positions.weight", "decoder_positions.weight"]
    assert np.array_equal(tensors["encoder_positions.weight"], rows)
    assert np.array_equal(tensors["decoder_positions.weight"], rows)
    loaded = assert_matches_seed(tutorial_expected(sd, torch.from_numpy(rows)), tmp_path / "o")
    assert_tensor_names_and_shapes(tmp_path / "o", loaded)
    if name == "positional_encoding.pe":  # the seed module holds it: the full check
        assert "check: tfmc.reference.seeds.TutorialTransformer loaded with the checkpoint's tensors" in stdout
    else:
        assert "check: round trip only (TutorialTransformer cannot hold the checkpoint's positional " in stdout
    assert "(ok, tolerance 0.0001)" in stdout


def test_learned_tables_per_side(tmp_path, capsys):
    """Seed 000 has a table per side (cn_ source, en_ target): each goes to its side."""
    model = per_head_model()
    sd = model.state_dict()
    enc, dec = learned(sd["cn_positional_encoding.pe"].shape, 4), learned(sd["en_positional_encoding.pe"].shape, 5)
    sd["cn_positional_encoding.pe"], sd["en_positional_encoding.pe"] = enc, dec
    rc, stdout, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "per-head"], capsys)
    assert rc == 0, err
    assert err.count("note: kept learned positional table") == 2
    model.load_state_dict(sd)
    loaded = assert_matches_seed(model, tmp_path / "o")
    assert torch.equal(loaded.encoder_positions.weight, tool.table_rows(enc))
    assert torch.equal(loaded.decoder_positions.weight, tool.table_rows(dec))
    assert "check: tfmc.reference.seeds.PerHeadTranslationTransformer loaded" in stdout


def test_a_learned_table_for_one_side_leaves_the_sinusoid_on_the_other(tmp_path, capsys):
    sd = tutorial_model().state_dict()
    del sd["positional_encoding.pe"]
    sd["transformer.encoder.pos_emb.weight"] = table = learned((50, 32), 6)
    rc, stdout, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4],
                          capsys)
    assert rc == 0, err
    assert "note: max_len 50 taken from the positional-encoding buffer" in err
    assert "note: the decoder has no learned positional table: its table is the sinusoid" in err
    tensors = ref.read_safetensors(os.path.join(tmp_path, "o", "model.safetensors"))
    assert np.array_equal(tensors["encoder_positions.weight"], table.numpy())
    assert np.array_equal(tensors["decoder_positions.weight"], ref.positional_encoding(50, 32).numpy())


def test_learned_tables_that_cannot_be_placed_are_an_error(tmp_path, capsys):
    sd = tutorial_model().state_dict()
    del sd["positional_encoding.pe"]
    sd["a.pos_emb.weight"], sd["b.pos_emb.weight"] = learned((40, 32), 7), learned((40, 32), 8)
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 1 and err.splitlines()[-1].startswith("error: the checkpoint has 2 learned positional tables")
    assert err.endswith("map them with --names (encoder_positions.weight, decoder_positions.weight)\n")
    assert not (tmp_path / "o").exists()


def test_tables_under_their_tfmc_names_and_through_names(tmp_path, capsys):
    """A table model's own state_dict re-imports (tutorial layout: tfmc names);
    --names maps a table that is not named like one."""
    arch = dict(d_model=32, num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=48, max_len=40,
                activation="silu", norm="pre", layer_norm_eps=1e-5, embedding_scale=False,
                positional_encoding="table")
    model = ref.random_init(ref.TranslationTransformer(arch, 30, 33).eval(), 9)
    sd = model.state_dict()
    rc, stdout, err = run([save(tmp_path, sd), "-o", tmp_path / "a", "--layout", "tutorial", "--num-heads", 4,
                           "--norm", "pre", "--activation", "silu", "--max-len", 40], capsys)
    assert rc == 0, err
    assert_matches_seed(model, tmp_path / "a")
    sd["wpe"] = sd.pop("encoder_positions.weight")
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"encoder_positions.weight": "wpe"}))
    rc, stdout, err = run([save(tmp_path, sd, "b.pt"), "-o", tmp_path / "b", "--layout", "tutorial",
                           "--num-heads", 4, "--norm", "pre", "--activation", "silu", "--max-len", 40,
                           "--names", names], capsys)
    assert rc == 0, err
    assert_matches_seed(model, tmp_path / "b")


def test_a_table_off_at_one_late_position_is_learned(capsys):
    """The tolerance grows with the position, but stays far below a learned table's differences."""
    table = ref.positional_encoding(5000, 32).clone()
    table[4000, 7] += 5e-3
    tensors = {"pe": table}
    assert tool.split_positional_tables(tensors, {}) == ({}, {"pe": table}) and not tensors
    assert "the first position beyond float32 rounding is 4000)" in capsys.readouterr().err


def test_a_table_that_is_not_finite_is_an_error():
    table = ref.positional_encoding(40, 32).clone()
    table[3, 1] = float("nan")
    with pytest.raises(ConversionError, match=r"positional table holding values that are not finite, first at "
                                              r"position 3$"):
        tool.split_positional_tables({"pe": table}, {})


def test_positional_candidates_are_an_explicit_set():
    for name in ("pe", "positional_encoding.pe", "embedding.pos_emb.pe", "cn_positional_encoding.weight",
                 "pos_encoding.weight", "emb.position_embeddings.weight", "pos_embedding"):
        assert tool.is_positional_candidate(name), name
    for name in ("encoder.pe.weight", "type_embedding.weight", "positional_encoding.scale",
                 "my_positional_encoding_proj.weight", "ape", "pe_norm.weight"):
        assert not tool.is_positional_candidate(name), name


def test_positional_name_with_another_shape_is_an_error(tmp_path, capsys):
    sd = tutorial_model().state_dict()
    sd["positional_encoding.pe"] = torch.zeros(2, 40, 32)
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 1 and "error: tensor 'positional_encoding.pe' [2, 40, 32] is named like a positional table" in err


# --------------------------------------------------------------------------- the check


@pytest.mark.parametrize("layout", ["torch-nn-transformer", "per-head"])
def test_check_catches_swapped_query_and_key(tmp_path, capsys, layout):
    """A wrong --names map (query and key swapped) gives a model that loads and
    round-trips; the check against the seed module must fail it."""
    if layout == "per-head":
        model, flags = per_head_model(), []
        spec = "transformer_encoder.{i}.mha.heads.{h}.%s.weight"
        swap = {"query": spec % "key", "key": spec % "query"}
    else:
        model, flags = torchnn_model(False), ["--num-heads", 4, "--max-len", 40, "--activation", "gelu"]
        spec = "transformer.encoder.layers.{i}.self_attn.in_proj_weight[%d/3]"
        swap = {"query": spec % 1, "key": spec % 0}
    names = tmp_path / "names.json"
    names.write_text(json.dumps({f"encoder_layers.{{i}}.self_attention.{k}_linear.weight": v
                                 for k, v in swap.items()}))
    ckpt = save(tmp_path, model.state_dict())
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--layout", layout, "--names", names] + flags, capsys)
    assert rc == 1
    assert "FAILED, tolerance 0.0001" in stdout
    assert "error: check failed: " in err and "the name map or the layer arrangement does not describe" in err
    # the same import without the wrong map passes
    rc, stdout, err = run([ckpt, "-o", tmp_path / "p", "--layout", layout] + flags, capsys)
    assert rc == 0, err


def test_check_follows_renames_but_not_swaps(tmp_path, capsys):
    """Every name under a `model.` prefix: the check finds the tensors through
    --names (a packed in_proj_weight whole), so a swap is still caught."""
    model = torchnn_model(True)
    sd = {("model." + k if k.startswith("transformer.") else k): v for k, v in model.state_dict().items()}
    ckpt = save(tmp_path, sd)
    prefixed = {k: "model." + v for k, v in tool.default_map("torch-nn-transformer").items()
                if v.startswith("transformer.")}
    flags = ["--layout", "torch-nn-transformer", "--num-heads", 4, "--max-len", 40, "--activation", "gelu",
             "--norm", "pre"]
    names = tmp_path / "names.json"
    names.write_text(json.dumps(prefixed))
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--names", names] + flags, capsys)
    assert rc == 0, err
    assert "check: tfmc.reference.seeds.TorchTransformerTranslator" in stdout and "found through --names" in stdout
    assert_matches_seed(model, tmp_path / "o")
    q, k = (f"decoder_layers.{{i}}.enc_dec_attention.{x}_linear.bias" for x in ("query", "key"))
    prefixed[q], prefixed[k] = prefixed[k], prefixed[q]
    names.write_text(json.dumps(prefixed))
    rc, stdout, err = run([ckpt, "-o", tmp_path / "p", "--names", names] + flags, capsys)
    assert rc == 1 and "error: check failed: " in err


def test_check_catches_a_wrong_recipe(tmp_path, capsys):
    """Recipes that are neither of nn.Transformer's arrangements (here seed 000's).
    (Post- or pre-norm itself is not visible in the tensors: --norm is taken as given.)"""
    ckpt = save(tmp_path, torchnn_model(False).state_dict())
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--layout", "torch-nn-transformer", "--num-heads", 4,
                           "--max-len", 40, "--activation", "gelu", "--encoder-layer", tool.SEED000_RECIPES["encoder"],
                           "--decoder-layer", tool.SEED000_RECIPES["decoder"]], capsys)
    assert rc == 1 and "check: tfmc.reference.seeds.TorchTransformerTranslator" in stdout
    assert "error: check failed: " in err


def test_check_says_when_it_is_a_round_trip(tmp_path, capsys):
    """An architecture the seed module cannot compute (tutorial names, GELU) gets the round trip, and says so."""
    ckpt = save(tmp_path, tutorial_model().state_dict())
    rc, stdout, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4,
                           "--activation", "gelu", "--dtype", "f16"], capsys)
    assert rc == 0, err
    assert "check: round trip only (the architecture is not seed 001's" in stdout
    assert "this checks the written files, not the name map or the recipe" in stdout
    assert "check: against the unrounded tensors: max logit difference " in stdout


# --------------------------------------------------------------------------- recipe options


# tfmc's messages (tests/unit/frontends/LayerRecipeTest.cpp)
@pytest.mark.parametrize("text, stack, message", [
    ("", "encoder", "column 1: expected a statement"),
    ("x = ", "encoder", "column 5: expected a value or a sublayer, found the end of the recipe"),
    ("x = ffn(x", "encoder", "column 10: expected ')', found the end of the recipe"),
    ("x == x", "encoder", "column 4: expected a value or a sublayer, found '='"),
    ("x = x + self_attn(x) x = ffn(x)", "encoder", "column 22: expected ';', found 'x'"),
    ("x = x - ffn(x)", "encoder", "column 7: unexpected character '-'"),
    ("x = ffn x", "encoder", "column 9: expected '(', found 'x'"),
    ("ffn = self_attn(x)", "encoder", "column 1: 'ffn' is a sublayer, not a value name"),
    ("x = norm0(x)", "encoder", "column 5: unknown sublayer 'norm0' (norms are norm1 ... norm9)"),
    ("x = \x01", "encoder", "column 5: unexpected character '\\x01'"),
    ("x = self_attn(x)", "encoder", "column 17: no ffn (an encoder layer needs exactly one)"),
    ("x = self_attn(x); x = ffn(x)", "decoder", "column 29: no cross_attn (a decoder layer needs exactly one)"),
    ("x = ffn(x) + ffn(x) + self_attn(x)", "encoder", "column 14: ffn occurs more than once (a layer has one)"),
    ("x = cross_attn(x)", "encoder", "column 5: cross_attn is only allowed in a decoder layer"),
    ("x = h + self_attn(x); h = ffn(x)", "encoder", "column 5: 'h' is used before it is assigned"),
    ("x = x + self_attn(x); h = ffn(x)", "encoder",
     "column 23: the value assigned to 'h' is never used (the layer output is the final x)"),
    ("x = ffn(x); x = self_attn(norm1(h)); h = x", "encoder", "column 33: 'h' is used before it is assigned"),
    ("h = ffn(x); x = self_attn(x); x = x + h", "encoder", None),
    ("x = ffn(x); x = self_attn(norm1(x) + x)", "encoder", None),
    ("norm12 = x; x = x + self_attn(x) + ffn(x)", "encoder", "column 1: 'norm12' is a sublayer, not a value name"),
    ("x = x +\x0bself_attn(x) + ffn(x)", "encoder", "column 8: unexpected character '\\x0b'"),
    ("x = x +\r\n\tself_attn(x) + ffn(x);", "encoder", None),
    ("norm = norm1(x); x = x + self_attn(norm) + ffn(norm)", "encoder", None),
])
def test_recipe_rules_are_tfmcs(text, stack, message):
    assert tool.recipe_problem(text, stack) == message


def test_recipe_defaults_are_valid():
    for (stack, _), text in ref.SHORTHAND_RECIPES.items():
        assert tool.recipe_problem(text, stack) is None
    for stack, text in tool.SEED000_RECIPES.items():
        assert tool.recipe_problem(text, stack) is None


@pytest.mark.parametrize("option, text, message", [
    ("--decoder-layer", "", "error: --decoder-layer '': column 1: expected a statement (the recipe is empty)"),
    ("--encoder-layer", "  ", "error: --encoder-layer '  ': column 3: expected a statement (the recipe is empty)"),
    ("--decoder-layer", "x = x + self_attn(x); h = ffn(x); x = x + cross_attn(x)",
     "error: --decoder-layer 'x = x + self_attn(x); h = ffn(x); x = x + cross_attn(x)': column 23: "
     "the value assigned to 'h' is never used (the layer output is the final x)"),
    ("--encoder-layer", "x = norm10(x + self_attn(x)); x = x + ffn(x)",
     "error: --encoder-layer 'x = norm10(x + self_attn(x)); x = x + ffn(x)': column 5: "
     "unknown sublayer 'norm10' (norms are norm1 ... norm9)"),
])
def test_recipe_option_errors_name_the_option(tmp_path, capsys, option, text, message):
    ckpt = save(tmp_path, tutorial_model().state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4, option, text],
                     capsys)
    assert rc == 1 and err == message + "\n"
    assert not (tmp_path / "o").exists()


def test_empty_decoder_recipe_is_not_absent(tmp_path, capsys):
    """--decoder-layer '' is an error even where the layout has a recipe of its own (per-head)."""
    ckpt = save(tmp_path, per_head_model().state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "per-head", "--decoder-layer", ""], capsys)
    assert rc == 1 and "--decoder-layer '': column 1: expected a statement" in err


# --------------------------------------------------------------------------- recipes: the reference vs tfmc

TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
# Its layers have norm1, norm2 (encoder) and norm1, norm2, norm3 (decoder), no
# final norms: a good recipe uses exactly those norms.
RECIPE_FIXTURE = os.path.join(ROOT, "tests", "e2e", "fixtures", "post-gelu-noscale")

# (stack, text): good and bad recipes, each run through the reference's Recipe
# and through `tfmc compile --emit=tfm` on a model.json that carries it.
RECIPE_CROSS_CHECK = [
    # accepted
    ("encoder", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))"),
    ("encoder", "h = norm1(x); x = x + self_attn(h) + ffn(h); x = norm2(x)"),
    ("encoder", "x=x+self_attn(norm1(x));\r\n\tx=x+ffn(norm2(x));"),
    ("encoder", "norm = norm1(x); x = norm2(norm + self_attn(norm) + ffn(x))"),
    ("encoder", "x = ffn(x); x = self_attn(norm1(x)); x = norm2(x); x = x"),
    ("decoder", "x = x + self_attn(x); x = x + ffn(norm1(x)); x = x + cross_attn(norm2(x)); x = norm3(x)"),
    ("decoder", "h = ffn(x); x = norm1(x + self_attn(x)); x = norm3(norm2(x + cross_attn(x)) + h)"),
    ("decoder", "x = norm1(x + self_attn(norm1(x))); c = cross_attn(norm2(x)); x = norm3(x + c + ffn(x + c))"),
    # refused
    ("encoder", ""),
    ("encoder", " \t\r\n"),
    ("encoder", "x == x"),
    ("encoder", "x = ffn x"),
    ("encoder", "x = ffn(x"),
    ("decoder", "x = x + self_attn(x) x = ffn(x)"),
    ("encoder", "x = x +\x0bself_attn(x) + ffn(x)"),
    ("encoder", "x = x + self_attn(x) + ffn(x)\u00a0"),
    ("encoder", "x = norm1(x + self_attn(x)); \u00e9 = x"),
    ("encoder", "x = \x00"),
    ("encoder", "x = norm0(x) + self_attn(x) + ffn(x)"),
    ("decoder", "x = norm10(x + self_attn(x)); x = x + cross_attn(x) + ffn(x)"),
    ("encoder", "norm12 = x; x = x + self_attn(x) + ffn(x)"),
    ("encoder", "ffn = self_attn(x)"),
    ("encoder", "x = self_attn(x)"),
    ("decoder", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))  "),
    ("encoder", "x = ffn(x) + ffn(x) + self_attn(x)"),
    ("encoder", "x = norm1(x + cross_attn(x)); x = norm2(x + self_attn(x) + ffn(x))"),
    ("encoder", "x = h + self_attn(x); h = ffn(x)"),
    ("encoder", "h = h; x = self_attn(x) + ffn(x)"),
    ("encoder", "x = x + self_attn(x); h = ffn(x)"),
    ("encoder", "h = norm1(x); x = x + self_attn(x) + ffn(x); x = norm2(x)"),
    ("decoder", "x = x + self_attn(x); y = cross_attn(x); x = norm1(x + ffn(x))"),
]


def tfmc_recipe_problem(tmp_path, stack, text):
    """None when `tfmc compile --emit=tfm` accepts the fixture's model with
    `text` as its `stack` recipe, else tfmc's 'column N: ...' message."""
    with open(os.path.join(RECIPE_FIXTURE, "model.json")) as f:
        desc = json.load(f)
    for side in ("source", "target"):
        desc[side]["vocab"] = os.path.join(RECIPE_FIXTURE, desc[side]["vocab"])
    desc["weights"] = os.path.join(RECIPE_FIXTURE, desc["weights"])
    desc["architecture"][f"{stack}_layer"] = text
    path = tmp_path / "model.json"
    path.write_text(json.dumps(desc))
    res = subprocess.run([TFMC, "compile", "--emit=tfm", "--no-cache", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = res.stderr.decode("utf-8", "replace")
    if res.returncode == 0:
        return None
    prefix = f"error: {path}: field 'architecture.{stack}_layer': "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    return err[len(prefix):-1]


@pytest.mark.skipif(not os.path.exists(TFMC), reason=f"{TFMC} does not exist (build tfmc to cross-check "
                                                      f"the reference's recipe parser with tfmc's)")
@pytest.mark.parametrize("stack, text", RECIPE_CROSS_CHECK)
def test_recipe_parser_agrees_with_tfmc(tmp_path, stack, text):
    """The reference's Recipe accepts and refuses what tfmc does, with the same 'column N: ...' message."""
    want = tfmc_recipe_problem(tmp_path, stack, text)
    got = ref.recipe_problem(text, stack)
    if text == "":
        # model.json's reader refuses an empty string before the recipe parser sees it.
        assert want == 'expected a non-empty string, got ""'
        assert got == "column 1: expected a statement"
        return
    assert got == want
    if want is None:
        ref.Recipe(text, stack)  # and it parses


def test_recipe_cross_check_list_has_both_kinds():
    verdicts = [ref.recipe_problem(text, stack) is None for stack, text in RECIPE_CROSS_CHECK]
    assert sum(verdicts) >= 8 and len(verdicts) - sum(verdicts) >= 20


# --------------------------------------------------------------------------- layout hints


@pytest.mark.parametrize("model, wrong, right", [
    (lambda: torchnn_model(False), "tutorial", "torch-nn-transformer"),
    (lambda: torchnn_model(False), "per-head", "torch-nn-transformer"),
    (lambda: per_head_model(), "torch-nn-transformer", "per-head"),
    (lambda: per_head_model(), "tutorial", "per-head"),
    (lambda: tutorial_model(), "per-head", "tutorial"),
])
def test_wrong_layout_hints_the_right_one(tmp_path, capsys, model, wrong, right):
    ckpt = save(tmp_path, model().state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", wrong, "--num-heads", 4, "--max-len", 40], capsys)
    assert rc == 1
    assert err.endswith(f" (the names look like --layout {right})\n") and err.count("\n") == err.count("note:") + 1


def test_no_hint_when_the_layout_fits(tmp_path, capsys):
    sd = per_head_model().state_dict()
    del sd["transformer_encoder.1.ln2.bias"]
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "per-head"], capsys)
    assert rc == 1 and "look like" not in err


def test_custom_map_of_another_layout_hints(tmp_path, capsys):
    names = tmp_path / "names.json"
    names.write_text(json.dumps(sm.seed_encoder_names()))
    rc, _, err = run([save(tmp_path, torchnn_model(False).state_dict()), "-o", tmp_path / "o", "--layout", "custom",
                      "--names", names, "--num-heads", 4, "--max-len", 40], capsys)
    assert rc == 1 and err.endswith("(the names look like --layout torch-nn-transformer)\n")


# --------------------------------------------------------------------------- errors


def test_unmapped_tensor_is_named(tmp_path, capsys):
    sd = tutorial_model().state_dict()
    sd["extra.scale"] = torch.ones(3)
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 1
    assert "error: checkpoint tensor 'extra.scale' is not mapped to any tfmc tensor" in err


def test_missing_tensor_names_the_expected_name(tmp_path, capsys):
    sd = per_head_model().state_dict()
    del sd["transformer_encoder.1.ln2.bias"]
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "per-head"], capsys)
    assert rc == 1
    assert ("error: missing checkpoint tensor 'transformer_encoder.1.ln2.bias' "
            "(for tfmc tensor 'encoder_layers.1.norm2.bias')") in err


def test_wrong_shape_is_named(tmp_path, capsys):
    sd = tutorial_model().state_dict()
    sd["decoder_layers.1.feed_forward.linear2.bias"] = torch.zeros(5)
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 1 and "'decoder_layers.1.feed_forward.linear2.bias'" in err and "expected [32]" in err


def test_a_weight_that_is_not_finite_is_named(tmp_path, capsys):
    # (It failed the check instead: "differs by nan", blamed on the name map.)
    sd = tutorial_model().state_dict()
    sd["decoder_layers.1.feed_forward.linear2.bias"][3] = float("nan")
    rc, _, err = run([save(tmp_path, sd), "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4], capsys)
    assert rc == 1 and "'decoder_layers.1.feed_forward.linear2.bias'" in err, err
    assert "holds NaN or infinite values (element 3 is nan)" in err, err
    assert not (tmp_path / "o").exists()


def test_num_heads_required(tmp_path, capsys):
    for layout, model in (("tutorial", tutorial_model()), ("torch-nn-transformer", torchnn_model(False))):
        rc, _, err = run([save(tmp_path, model.state_dict()), "-o", tmp_path / "o", "--layout", layout,
                          "--max-len", 40], capsys)
        assert rc == 1 and f"--num-heads is required for layout {layout}" in err


def test_layer_norm_eps_must_be_finite(tmp_path, capsys):
    # inf was written as "Infinity", which is not JSON.
    for eps in ("inf", "0", "-1", "nan"):
        rc, _, err = run([save(tmp_path, tutorial_model().state_dict()), "-o", tmp_path / "o",
                          "--layout", "tutorial", "--num-heads", 4, "--layer-norm-eps", eps], capsys)
        assert rc == 1 and "--layer-norm-eps must be a positive finite number" in err, (eps, err)


def test_max_len_required_without_pe_buffer(tmp_path, capsys):
    rc, _, err = run([save(tmp_path, torchnn_model(False).state_dict()), "-o", tmp_path / "o",
                      "--layout", "torch-nn-transformer", "--num-heads", 4], capsys)
    assert rc == 1 and "--max-len is required" in err


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"encoder_layers.0.norm1.weight": "a"}', "is not a tfmc tensor name (write layer indices as {i})"),
    ('{"encoder_layers.{i}.norm1.weight": 3}', "must map to a non-empty string"),
    ('{"encoder_layers.{i}.norm1.weight": "norm.weight"}', "use {i} on both sides or on neither"),
])
def test_bad_names_file(tmp_path, capsys, content, message):
    names = tmp_path / "names.json"
    names.write_text(content)
    ckpt = save(tmp_path, tutorial_model().state_dict())
    rc, _, err = run([ckpt, "-o", tmp_path / "o", "--layout", "tutorial", "--num-heads", 4, "--names", names],
                     capsys)
    assert rc == 1 and message in err and err.startswith("error: --names ")


class WritesAFile:
    """Unpickling this would create a file: what a malicious checkpoint could do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


def test_pickled_objects_are_refused_not_run(tmp_path):
    marker = tmp_path / "pwned"
    ckpt = save(tmp_path, {"state_dict": tutorial_model().state_dict(), "extra": WritesAFile(marker)})
    res = subprocess.run([sys.executable, TOOL, str(ckpt), "-o", str(tmp_path / "o"), "--layout", "tutorial",
                          "--num-heads", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert res.returncode == 1
    assert res.stderr.startswith("error: refusing to load") and res.stderr.count("\n") == 1
    assert not marker.exists()
    assert not (tmp_path / "o").exists()


def test_torchscript_archives_are_refused(tmp_path, capsys):
    """torch.load would pass a TorchScript archive to torch.jit.load even with weights_only."""
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 3)), str(path))
    rc, _, err = run([path, "-o", tmp_path / "o", "--layout", "tutorial"], capsys)
    assert rc == 1 and "it is a TorchScript archive" in err


def test_fallback_unpickler_refuses_too(tmp_path):
    """The restricted unpickler used where torch.load lacks weights_only."""
    marker = tmp_path / "pwned"
    ckpt = save(tmp_path, {"state_dict": {"w": torch.ones(2)}, "extra": WritesAFile(marker)})
    with pytest.raises(ConversionError, match="refusing to load"):
        tool.load_checkpoint(str(ckpt), restricted=True)
    assert not marker.exists()
    good = save(tmp_path, tutorial_model().state_dict(), "good.pt")
    tensors = tool.load_checkpoint(str(good), restricted=True)
    assert set(tensors) == set(tutorial_model().state_dict())


def test_command_line_errors_are_one_line(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_text("not a checkpoint")
    for argv in ([str(junk), "-o", str(tmp_path / "o"), "--layout", "tutorial"],
                 [str(tmp_path / "absent.pt"), "-o", str(tmp_path / "o"), "--layout", "tutorial"],
                 [str(junk), "--layout", "tutorial"],
                 [str(junk), "-o", str(tmp_path / "o"), "--layout", "bogus"]):
        res = subprocess.run([sys.executable, TOOL] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        assert res.returncode == 1, argv
        assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr


@pytest.mark.parametrize("script", [TOOL, CONVERT])
def test_outside_a_checkout_is_one_clear_line(tmp_path, script):
    """The scripts find the package next to themselves: a copy elsewhere says so."""
    (tmp_path / "tools").mkdir()
    copy = tmp_path / "tools" / os.path.basename(script)
    copy.write_bytes(open(script, "rb").read())
    res = subprocess.run([sys.executable, str(copy), "x.pt", "-o", "o", "--layout", "tutorial"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: cannot find the tfmc Python package (tfmc/convert) in ")
    assert "or from a checkout of the tfmc repository (tools/ next to python/)" in res.stderr


def test_installed_layout_is_found(tmp_path):
    """bin/tfmc-convert next to lib/python3/dist-packages/tfmc, without the
    compiled module: the converters need only the pure-Python package."""
    import shutil
    (tmp_path / "bin").mkdir()
    shutil.copy(CONVERT, tmp_path / "bin" / "tfmc-convert")
    shutil.copytree(os.path.join(ROOT, "python", "tfmc"), tmp_path / "lib" / "python3" / "dist-packages" / "tfmc",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    res = subprocess.run([sys.executable, str(tmp_path / "bin" / "tfmc-convert"), "pytorch", "--help"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("usage: tfmc-convert pytorch "), res.stderr


def test_the_dispatcher(tmp_path):
    """python3 -m tfmc.convert: subcommands listed; errors are one line, status 1."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))

    def convert(*argv):
        return subprocess.run([sys.executable, "-m", "tfmc.convert"] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)

    res = convert("--help")
    assert res.returncode == 0 and all(name in res.stdout for name in ("pytorch", "marian", "fairseq"))
    for argv in ([], ["bogus"], ["pytorch"], ["pytorch", str(tmp_path / "absent.pt"), "-o", "o", "--layout",
                                              "tutorial"]):
        res = convert(*argv)
        assert res.returncode == 1 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, argv
