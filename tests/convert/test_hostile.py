"""Hostile and unsupported inputs to `tfmc-convert marian|fairseq`: each
must end with exit status 1 and exactly one stderr line starting with
`error:`, naming the file and the key or tensor at fault, and nothing may
run from a checkpoint. Most cases call the command's main() in-process (the
same exit status and stderr, without a torch import per case); the pickle
cases and a few others run the command line (python3 -m tfmc.convert)."""

import json
import os
import shutil
import struct
import zipfile

import pytest
import torch

import checkpoints as ck
from conftest import convert, convert_cli

CAPSYS = None  # set by the autouse fixture below


@pytest.fixture(autouse=True)
def _capture(capsys):
    global CAPSYS
    CAPSYS = capsys
    yield
    CAPSYS = None


def expect_error(argv, *subs, cli=False, timeout=None):
    if cli or timeout:
        r = convert_cli(argv, timeout=timeout)
        rc, stderr = r.returncode, r.stderr
    else:
        rc, _, stderr = convert(argv, CAPSYS)
    errors = [l for l in stderr.splitlines() if l.startswith("error:")]
    assert rc == 1, (rc, stderr)
    assert len(errors) == 1, stderr
    assert all(l.startswith(("error:", "note:")) for l in stderr.splitlines()), stderr
    for s in subs:
        assert s in errors[0], f"{s!r} not in {errors[0]!r}"
    return errors[0]


# --------------------------------------------------------------------------- Marian


@pytest.fixture
def marian_dir(marian_models, tmp_path):
    """A writable copy of a converted-cleanly Marian directory (pytorch_model.bin)."""
    d = tmp_path / "opus-mt"
    shutil.copytree(marian_models("bin-swish-untied")["orig"], d)
    return d


@pytest.fixture
def marian_st_dir(marian_models, tmp_path):
    d = tmp_path / "opus-mt-st"
    shutil.copytree(marian_models("st-relu-no-head-no-bias")["orig"], d)
    return d


def edit_json(path, **changes):
    data = json.loads(path.read_text(encoding="utf-8"))
    for k, v in changes.items():
        if v is ck and k in data:
            del data[k]
        else:
            data[k] = v
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def edit_bin(d, fn):
    sd = torch.load(d / "pytorch_model.bin")
    fn(sd)
    torch.save(sd, d / "pytorch_model.bin")


def marian(d, tmp_path, *more):
    return ["marian", d, "-o", tmp_path / "out"] + list(more)


def test_marian_missing_tensor(marian_dir, tmp_path):
    edit_bin(marian_dir, lambda sd: sd.pop("model.decoder.layers.1.fc2.bias"))
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin", "missing tensor 'model.decoder.layers.1.fc2.bias'",
                 cli=True)


def test_marian_wrong_shape(marian_dir, tmp_path):
    def f(sd):
        sd["model.encoder.layers.0.fc1.weight"] = sd["model.encoder.layers.0.fc1.weight"].t().contiguous()
    edit_bin(marian_dir, f)
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin", "'model.encoder.layers.0.fc1.weight'",
                 "expected shape [64, 32], got [32, 64]")


def test_marian_unexpected_tensor(marian_dir, tmp_path):
    edit_bin(marian_dir, lambda sd: sd.__setitem__("model.encoder.layernorm_embedding.weight", torch.ones(32)))
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin",
                 "unexpected tensor 'model.encoder.layernorm_embedding.weight'")


def test_marian_nan_weight(marian_dir, tmp_path):
    def f(sd):
        sd["model.encoder.layers.0.fc1.bias"][3] = float("nan")
    edit_bin(marian_dir, f)
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin", "'model.encoder.layers.0.fc1.bias'", "NaN")


def test_marian_tied_lm_head_differs(marian_models, tmp_path):
    d = tmp_path / "tied"
    shutil.copytree(marian_models("bin-swish-tied-positions")["orig"], d)

    def f(sd):
        sd["lm_head.weight"] = sd["lm_head.weight"].clone() + 1
    edit_bin(d, f)
    expect_error(marian(d, tmp_path), "pytorch_model.bin", "'lm_head.weight'", "tie_word_embeddings")


@pytest.mark.parametrize("key,value,subs", [
    ("normalize_before", True, ["'normalize_before': true is not supported"]),
    ("add_bias_logits", True, ["'add_bias_logits'"]),
    ("normalize_embedding", True, ["'normalize_embedding'"]),
    ("activation_function", "gelu_new", ["'activation_function': \"gelu_new\" is not supported"]),
    ("encoder_attention_heads", 5, ["'decoder_attention_heads': 4 differs from encoder_attention_heads 5"]),
    ("model_type", "bart", ["'model_type'", "\"bart\""]),
    ("d_model", "32", ["'d_model': expected an integer"]),
    ("decoder_ffn_dim", 128, ["'decoder_ffn_dim': 128 differs from encoder_ffn_dim 64"]),
    ("eos_token_id", 3, ["'eos_token_id': 3, but", "vocab.json"]),
    ("vocab_size", 9999, ["'vocab_size': 9999, but 'model.shared.weight' has"]),
])
def test_marian_config_values(marian_dir, tmp_path, key, value, subs):
    edit_json(marian_dir / "config.json", **{key: value})
    expect_error(marian(marian_dir, tmp_path), "config.json", *subs)


def test_marian_heads_not_dividing(marian_dir, tmp_path):
    edit_json(marian_dir / "config.json", encoder_attention_heads=5, decoder_attention_heads=5)
    expect_error(marian(marian_dir, tmp_path), "config.json", "'encoder_attention_heads': 5 does not divide d_model 32")


def test_marian_learned_positions_missing(marian_dir, tmp_path):
    edit_json(marian_dir / "config.json", static_position_embeddings=False)
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin",
                 "missing tensor 'model.encoder.embed_positions.weight'", "static_position_embeddings")


def test_marian_vocab_larger_than_embedding(marian_dir, tmp_path):
    vocab = json.loads((marian_dir / "vocab.json").read_text(encoding="utf-8"))
    vocab["extra-token"] = len(vocab)
    (marian_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    n = len(vocab)
    expect_error(marian(marian_dir, tmp_path),
                 f"vocab.json: {n} tokens but model.shared.weight has {n - 1} rows")


def test_marian_vocab_gap(marian_dir, tmp_path):
    vocab = json.loads((marian_dir / "vocab.json").read_text(encoding="utf-8"))
    victim = next(t for t, i in vocab.items() if i == 5)
    del vocab[victim]
    (marian_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    expect_error(marian(marian_dir, tmp_path), "vocab.json", "id 5 is missing")


def test_marian_vocab_duplicate_id(marian_dir, tmp_path):
    vocab = json.loads((marian_dir / "vocab.json").read_text(encoding="utf-8"))
    vocab["another"] = 7
    (marian_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    expect_error(marian(marian_dir, tmp_path), "vocab.json", "both have id 7")


def test_marian_vocab_without_pad(marian_dir, tmp_path):
    vocab = json.loads((marian_dir / "vocab.json").read_text(encoding="utf-8"))
    n = vocab.pop("<pad>")
    vocab["<PAD>"] = n
    (marian_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    expect_error(marian(marian_dir, tmp_path), "vocab.json", "no pad token \"<pad>\"")


def test_marian_separate_vocabs_with_other_special_ids(marian_models, tmp_path):
    d = tmp_path / "sep"
    shutil.copytree(marian_models("bin-separate-vocabs")["orig"], d)
    vocab = json.loads((d / "target_vocab.json").read_text(encoding="utf-8"))
    first = next(t for t, i in vocab.items() if i == 2)
    vocab[first], vocab["<unk>"] = 1, 2
    (d / "target_vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    expect_error(marian(d, tmp_path), "target_vocab.json", "special tokens", "one set of special ids")


def test_marian_missing_spm(marian_dir, tmp_path):
    os.remove(marian_dir / "target.spm")
    expect_error(marian(marian_dir, tmp_path), "target.spm", "no such file")


def test_marian_spm_not_a_model(marian_dir, tmp_path):
    (marian_dir / "source.spm").write_bytes(b"not a sentencepiece model")
    expect_error(marian(marian_dir, tmp_path), "source.spm", "not a SentencePiece model")


def test_marian_invalid_config_json(marian_dir, tmp_path):
    (marian_dir / "config.json").write_text('{"d_model": 32,')
    expect_error(marian(marian_dir, tmp_path), "config.json", "invalid JSON")


def test_marian_pickle_that_runs_code(marian_dir, tmp_path):
    marker = tmp_path / "ran"
    ck.pickle_calling(marian_dir / "pytorch_model.bin", "os", "system", f"touch {marker}")
    expect_error(marian(marian_dir, tmp_path), "pytorch_model.bin", "os.system", cli=True)
    assert not marker.exists()


def test_marian_safetensors_truncated(marian_st_dir, tmp_path):
    path = marian_st_dir / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[:-4])
    expect_error(marian(marian_st_dir, tmp_path), "model.safetensors", "data_offsets")


def test_marian_safetensors_bad_dtype(marian_st_dir, tmp_path):
    path = marian_st_dir / "model.safetensors"
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8:8 + n].replace(b'"F32"', b'"I64"', 1)
    path.write_bytes(data[:8] + header + data[8 + n:])
    expect_error(marian(marian_st_dir, tmp_path), "model.safetensors", "unsupported dtype 'I64'")


def test_marian_not_a_directory(tmp_path):
    expect_error(["marian", tmp_path / "nowhere", "-o", tmp_path / "out"], "nowhere", "not a directory", cli=True)


def test_marian_into_its_own_directory(marian_dir):
    # It overwrote its inputs while reading them ("cannot copy ...: None").
    before = sorted(p.name for p in marian_dir.iterdir())
    expect_error(["marian", marian_dir, "-o", marian_dir], "the output directory is the model's own")
    assert sorted(p.name for p in marian_dir.iterdir()) == before


def test_marian_separate_vocabs_must_be_a_boolean(marian_dir, tmp_path):
    # "yes" was read as false.
    (marian_dir / "tokenizer_config.json").write_text(json.dumps({"separate_vocabs": "yes"}))
    expect_error(marian(marian_dir, tmp_path), "'separate_vocabs': expected true or false, got \"yes\"")


def test_a_directory_is_not_a_checkpoint(tmp_path):
    from tfmc.convert import common
    (tmp_path / "ckpt.pt").mkdir()
    with pytest.raises(common.ConversionError, match="it is a directory, not a torch.save"):
        common.load_torch_checkpoint(str(tmp_path / "ckpt.pt"))


def test_empty_output_path(marian_dir):
    expect_error(["marian", marian_dir, "-o", ""], "-o: the output directory's path is empty")


def test_marian_max_len_too_large(marian_dir, tmp_path):
    expect_error(marian(marian_dir, tmp_path, "--max-len", "65"), "--max-len 65", "max_position_embeddings (64)")


# --------------------------------------------------------------------------- fairseq


@pytest.fixture
def fairseq_files(fairseq_models, tmp_path):
    f = fairseq_models("args-sinusoidal-post-relu")
    d = tmp_path / "fs"
    shutil.copytree(os.path.dirname(f["ckpt"]), d)
    return {k: d / os.path.basename(v) for k, v in f.items() if k != "out"}


def fairseq(f, tmp_path, *more):
    return ["fairseq", f["ckpt"], "--src-dict", f["src_dict"], "--tgt-dict", f["tgt_dict"], "--src-spm",
            f["src_spm"], "--tgt-spm", f["tgt_spm"], "-o", tmp_path / "out"] + list(more)


def edit_ckpt(path, fn):
    ckpt = torch.load(path, weights_only=False)  # our own file
    fn(ckpt)
    torch.save(ckpt, path)


def set_args(**kw):
    def fn(ckpt):
        for k, v in kw.items():
            setattr(ckpt["args"], k, v)
    return fn


@pytest.mark.parametrize("key,value,subs", [
    ("layernorm_embedding", True, ["args.layernorm_embedding: True is not supported"]),
    ("adaptive_softmax_cutoff", "1000,2000", ["args.adaptive_softmax_cutoff", "adaptive softmax"]),
    ("cross_self_attention", True, ["args.cross_self_attention"]),
    ("activation_fn", "gelu_accurate", ["args.activation_fn: 'gelu_accurate' is not supported"]),
    ("decoder_output_dim", 64, ["args.decoder_output_dim: 64 differs from the embedding width 32"]),
    ("decoder_ffn_embed_dim", 128, ["args.decoder_ffn_embed_dim: 128", "one d_ff"]),
    ("decoder_attention_heads", 8, ["args.decoder_attention_heads: 8 differs"]),
    ("encoder_attention_heads", 5, ["args.decoder_attention_heads: 4 differs from args.encoder_attention_heads 5"]),
    ("arch", "lightconv_iwslt_de_en", ["args.arch: 'lightconv_iwslt_de_en' is not a fairseq transformer"]),
    ("encoder_layers", 3, ["args.encoder_layers: 3, but the checkpoint has 2 encoder layers"]),
    ("no_scale_embedding", "False", ["args.no_scale_embedding: expected True or False, got 'False'"]),
    ("share_all_embeddings", "true", ["args.share_all_embeddings: expected True or False, got 'true'"]),
])
def test_fairseq_option_values(fairseq_files, tmp_path, key, value, subs):
    edit_ckpt(fairseq_files["ckpt"], set_args(**{key: value}))
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt", *subs)


def test_fairseq_heads_not_dividing(fairseq_files, tmp_path):
    edit_ckpt(fairseq_files["ckpt"], set_args(encoder_attention_heads=5, decoder_attention_heads=5))
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt",
                 "args.encoder_attention_heads: 5 does not divide the model width 32")


def test_fairseq_missing_tensor(fairseq_files, tmp_path):
    edit_ckpt(fairseq_files["ckpt"], lambda c: c["model"].pop("decoder.layers.0.encoder_attn.k_proj.bias"))
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt",
                 "missing tensor 'decoder.layers.0.encoder_attn.k_proj.bias'", cli=True)


def test_fairseq_wrong_shape(fairseq_files, tmp_path):
    def f(c):
        c["model"]["encoder.layers.1.self_attn.out_proj.weight"] = torch.zeros(32, 16)
    edit_ckpt(fairseq_files["ckpt"], f)
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt",
                 "'encoder.layers.1.self_attn.out_proj.weight': expected shape [32, 32], got [32, 16]")


def test_fairseq_unexpected_tensor(fairseq_files, tmp_path):
    edit_ckpt(fairseq_files["ckpt"], lambda c: c["model"].__setitem__("encoder.layernorm_embedding.weight",
                                                                       torch.ones(32)))
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt",
                 "unexpected tensor 'encoder.layernorm_embedding.weight'")


def test_fairseq_dictionary_too_short(fairseq_files, tmp_path):
    path = fairseq_files["src_dict"]
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    n = len(lines) + 4
    expect_error(fairseq(fairseq_files, tmp_path),
                 f"dict.zh.txt: {n - 1} tokens (4 reserved + {n - 5} lines) but encoder.embed_tokens.weight has {n} rows")


def test_fairseq_dictionary_duplicate(fairseq_files, tmp_path):
    path = fairseq_files["tgt_dict"]
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[9] = lines[2]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    word = lines[2].rsplit(" ", 1)[0]
    expect_error(fairseq(fairseq_files, tmp_path), "dict.en.txt", f"line 10: token {word!r} repeats line 3")


def test_fairseq_dictionary_bad_line(fairseq_files, tmp_path):
    path = fairseq_files["tgt_dict"]
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = "justonefield"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expect_error(fairseq(fairseq_files, tmp_path), "dict.en.txt", "line 5: expected '<token> <count>")


def test_fairseq_pickle_that_runs_code(fairseq_files, tmp_path):
    marker = tmp_path / "ran"
    ck.pickle_calling(fairseq_files["ckpt"], "os", "system", f"touch {marker}")
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt", "os.system", cli=True)
    assert not marker.exists()


def test_fairseq_not_a_checkpoint(fairseq_files, tmp_path):
    torch.save({"state_dict": {}}, fairseq_files["ckpt"])
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt", "not a fairseq checkpoint")


def test_fairseq_no_model_options(fairseq_files, tmp_path):
    edit_ckpt(fairseq_files["ckpt"], lambda c: c.__setitem__("args", None))
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt", "neither cfg['model'] nor args")


def test_fairseq_spm_and_tokenizer_both(fairseq_files, tmp_path):
    expect_error(fairseq(fairseq_files, tmp_path, "--src-tokenizer", "word"),
                 "--src-spm and --src-tokenizer exclude each other")


# --------------------------------------------------------------------------- inputs of every subcommand


def test_bin_storage_record_shorter_than_its_tensor(marian_dir, tmp_path):
    # torch.load read past the end of the record: a wrong last element, exit 0.
    path = marian_dir / "pytorch_model.bin"
    with zipfile.ZipFile(path) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    victim = next(n for n in sorted(files) if "/data/" in n and len(files[n]) >= 8)
    files[victim] = files[victim][:-4]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    expect_error(marian(marian_dir, tmp_path, "--no-check"), "pytorch_model.bin", f"storage '{victim}'",
                 "is truncated")


def deep_json(depth=100000):
    return "[" * depth


@pytest.mark.parametrize("name", ["config.json", "vocab.json", "tokenizer_config.json", "model.safetensors"])
def test_json_nested_too_deeply(marian_st_dir, tmp_path, name):
    # RecursionError tracebacks; tfmc's loader refuses nesting past 256 levels.
    path = marian_st_dir / name
    if name == "model.safetensors":
        data = path.read_bytes()
        n = int.from_bytes(data[:8], "little")
        header = deep_json().encode()
        path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + n:])
        invalid = "invalid JSON header"
    else:
        path.write_text(deep_json())
        invalid = "invalid JSON"
    expect_error(marian(marian_st_dir, tmp_path), name, f"{invalid}: nested deeper than 256 levels")


def test_names_map_nested_too_deeply(tmp_path):
    names = tmp_path / "names.json"
    names.write_text('{"linear.bias": ' + deep_json())
    expect_error(["pytorch", tmp_path / "ckpt.pt", "-o", tmp_path / "out", "--layout", "tutorial", "--names", names],
                 "--names", "invalid JSON: nested deeper than 256 levels")


def edit_header(path, fn):
    """Rewrites a safetensors header through fn(header dict), keeping the data section."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    fn(header, [k for k in header if k != "__metadata__"])
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n:])


def set_shape(shape):
    def fn(h, names):
        h[names[0]]["shape"] = shape
    return fn


def same_offsets(h, names):
    first, second = [k for k in names if h[k]["shape"] == [32]][:2]
    h[second]["data_offsets"] = h[first]["data_offsets"]


def float_offsets(h, names):
    h[names[0]]["data_offsets"] = [float(v) for v in h[names[0]]["data_offsets"]]


@pytest.mark.parametrize("edit,subs", [
    # an OverflowError and a ValueError ("needs 0 bytes": np.prod wrapped around)
    (set_shape([2 ** 64]), ["shape must be a list of non-negative integers, got [18446744073709551616]"]),
    (set_shape([2 ** 62, 4]), ["shape [4611686018427387904, 4] is too large"]),
    # accepted, though tfmc's loader refuses them
    (same_offsets, ["overlap: data_offsets"]),
    (lambda h, names: h.__setitem__("__metadata__", {"format": 1}), ["'__metadata__' must map strings to strings"]),
    # reported as "outside the data section"
    (float_offsets, ["data_offsets must be [begin, end], two integers"]),
], ids=["shape-2**64", "shape-2**62x4", "overlap", "metadata", "float-offsets"])
def test_safetensors_header_as_tfmc_reads_it(marian_st_dir, tmp_path, edit, subs):
    edit_header(marian_st_dir / "model.safetensors", edit)
    expect_error(marian(marian_st_dir, tmp_path), "model.safetensors", *subs)


def test_marian_positions_beyond_memory(marian_dir, tmp_path):
    # MemoryError, even with --max-len 64: the whole sinusoid was built first.
    edit_json(marian_dir / "config.json", max_position_embeddings=10 ** 12)
    expect_error(marian(marian_dir, tmp_path, "--max-len", "64"), "config.json", "'max_position_embeddings'",
                 "to build the positional table, more than half of")


def test_fairseq_positions_beyond_memory(fairseq_files, tmp_path):
    edit_ckpt(fairseq_files["ckpt"], set_args(max_source_positions=10 ** 12, max_target_positions=10 ** 12))
    expect_error(fairseq(fairseq_files, tmp_path), "args.max_source_positions", "give a smaller --max-len")


def test_pytorch_max_len_beyond_memory(tmp_path):
    from tfmc.reference import seeds
    ckpt = tmp_path / "ckpt.pt"
    torch.save(seeds.TorchTransformerTranslator(11, 13, d_model=8, nhead=2, num_encoder_layers=1,
                                                num_decoder_layers=1, dim_feedforward=16, max_len=8).state_dict(), ckpt)
    expect_error(["pytorch", ckpt, "-o", tmp_path / "out", "--layout", "torch-nn-transformer", "--num-heads", 2,
                  "--max-len", 10 ** 12], "--max-len 1000000000000", "more than half of")


def test_fifo_inputs_do_not_hang(marian_dir, fairseq_files, tmp_path):
    # Both read forever, waiting for a writer.
    os.remove(marian_dir / "config.json")
    os.mkfifo(marian_dir / "config.json")
    expect_error(marian(marian_dir, tmp_path), "config.json", "it is a named pipe (FIFO), not a regular file",
                 timeout=120)
    os.remove(fairseq_files["src_dict"])
    os.mkfifo(fairseq_files["src_dict"])
    expect_error(fairseq(fairseq_files, tmp_path), "dict.zh.txt", "it is a named pipe (FIFO), not a regular file",
                 timeout=120)


def test_links_to_devices_are_not_files(marian_dir, fairseq_files, tmp_path):
    # "no such file" (and a dictionary linked to /dev/zero filled the memory).
    os.remove(marian_dir / "source.spm")
    os.symlink("/dev/zero", marian_dir / "source.spm")
    expect_error(marian(marian_dir, tmp_path), "source.spm", "a symbolic link to a character device '/dev/zero'",
                 "not a regular file")
    os.remove(fairseq_files["ckpt"])
    os.symlink("/dev/zero", fairseq_files["ckpt"])
    expect_error(fairseq(fairseq_files, tmp_path), "checkpoint_best.pt",
                 "a symbolic link to a character device '/dev/zero', not a torch.save() file")
