"""Tests of tfmc.convert.common, what every converter subcommand shares:
reading torch.save() files without running code from them (both formats,
the `allow`ed argparse.Namespace of fairseq checkpoints), and writing
vocabularies, weights and model.json.

    /usr/bin/python3 -m pytest tests/importer/test_convert_common.py -q
"""

import argparse
import builtins
import json
import os
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from tfmc.convert import common  # noqa: E402
from tfmc.convert.common import ConversionError  # noqa: E402
from tfmc.reference import tfm as ref  # noqa: E402

NAMESPACE = {("argparse", "Namespace")}


class WritesAFile:
    """Unpickling this would create a file: what a malicious checkpoint could do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


def tensors():
    w = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    return {"w": w, "wt": w.t(), "rows": w[1:3], "h": w[0].half(), "i": torch.arange(5), "empty": torch.zeros(0)}


def same(a, b):
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("zip_format", [True, False])
def test_fairseq_like_checkpoint_with_namespace(tmp_path, zip_format):
    path = tmp_path / "ckpt.pt"
    obj = {"args": argparse.Namespace(arch="transformer", encoder_layers=6, lr=[0.25], share=True),
           "model": tensors(), "extra_state": {"epoch": 3, "loss": 1.5}, "optimizer_history": [{"lr": 0.1}]}
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    got = common.load_torch_checkpoint(str(path), allow=NAMESPACE)
    args = got["args"]
    assert type(args) is common.PickledNamespace
    assert (args.arch, args.encoder_layers, args.lr, args.share) == ("transformer", 6, [0.25], True)
    assert "arch" in args and "decoder_layers" not in args
    assert got["extra_state"] == {"epoch": 3, "loss": 1.5}
    assert same(common.state_dict_of(got, str(path)), obj["model"])
    # without allow, the namespace is refused and named
    with pytest.raises(ConversionError, match=r"^refusing to load '.*': it holds Python objects other than tensors "
                                              r"and plain containers \(Unsupported class argparse.Namespace\)"):
        common.load_torch_checkpoint(str(path))


@pytest.mark.parametrize("zip_format", [True, False])
@pytest.mark.parametrize("how", [{}, {"restricted": True}, {"allow": NAMESPACE}])
def test_other_objects_are_refused_not_run(tmp_path, zip_format, how):
    marker = tmp_path / "pwned"
    path = tmp_path / "ckpt.pt"
    torch.save({"model": tensors(), "x": WritesAFile(marker)}, path, _use_new_zipfile_serialization=zip_format)
    with pytest.raises(ConversionError, match=r"^refusing to load '.*': it holds Python objects other than "
                                              r"tensors and plain containers \(Unsupported class (io|builtins)\.open\)"):
        common.load_torch_checkpoint(str(path), **how)
    assert not marker.exists()


@pytest.mark.parametrize("zip_format", [True, False])
def test_python_floats_beside_the_weights(tmp_path, zip_format):
    # A training script's checkpoint: the weights, a loss, a config with a
    # dropout rate. torch 1.13's weights_only reader has no float opcode
    # ("Unsupported operand 71"); the restricted reader takes them.
    path = tmp_path / "ckpt.pt"
    obj = {"state_dict": tensors(), "loss": 2.5, "cfg": {"dropout": 0.1, "layers": 6, "name": "x"},
           "history": [1.25, -0.5, float("inf")]}
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    got = common.load_torch_checkpoint(str(path))
    assert got["loss"] == 2.5 and got["cfg"] == obj["cfg"] and got["history"] == obj["history"]
    assert same(common.state_dict_of(got, str(path)), obj["state_dict"])


@pytest.mark.parametrize("zip_format", [True, False])
def test_restricted_reader_gives_what_torch_load_gives(tmp_path, zip_format):
    path = tmp_path / "ckpt.pt"
    torch.save(tensors(), path, _use_new_zipfile_serialization=zip_format)
    assert same(common.load_torch_checkpoint(str(path), restricted=True), tensors())
    assert same(common.load_torch_checkpoint(str(path)), tensors())


def test_reading_errors_name_the_file(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"junk")
    for how in ({}, {"restricted": True}, {"allow": NAMESPACE}):
        with pytest.raises(ConversionError, match=r"^cannot read checkpoint '.*junk.pt': not a torch.save\(\) file"):
            common.load_torch_checkpoint(str(junk), **how)
    with pytest.raises(ConversionError, match=r"^cannot open checkpoint '.*absent.pt': no such file$"):
        common.load_torch_checkpoint(str(tmp_path / "absent.pt"))
    with pytest.raises(ValueError, match="cannot rebuild"):
        common.load_torch_checkpoint(str(junk), allow={("os", "system")})
    scripted = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 3)), str(scripted))
    with pytest.raises(ConversionError, match="it is a TorchScript archive"):
        common.load_torch_checkpoint(str(scripted), allow=NAMESPACE)
    with pytest.raises(ConversionError, match=r"does not hold a state_dict .* under 'state_dict' or 'model'\)$"):
        common.state_dict_of([torch.ones(1)], "x.pt")
    with pytest.raises(ConversionError, match=r"^'x.pt': state_dict entry 'b' is a int, not a tensor$"):
        common.state_dict_of({"a": torch.ones(1), "b": 3, "c": "x"}, "x.pt", keys=())


def test_write_vocab(tmp_path):
    path = tmp_path / "v"
    common.write_vocab(str(path), ["<pad>", "▁a", "b\rc"])
    assert ref.read_vocab(str(path)) == ["<pad>", "▁a", "b\rc"]
    for tokens, message in (([], "the vocabulary is empty"), (["a", ""], "token 1 is empty"),
                            (["a", "b\nc"], "token 1 'b\\\\nc' holds a line break"),
                            (["a", "b\r"], "token 1 .* holds a line break"),
                            (["\ufeffa"], "token 0 .* starts with a byte order mark"),
                            (["a", "b", "a"], "token 2 'a' repeats token 0")):
        with pytest.raises(ConversionError, match=r"^'dict.txt': " + message):
            common.write_vocab(str(tmp_path / "w"), tokens, source="dict.txt")
    assert not (tmp_path / "w").exists()


def test_write_safetensors_and_model_json(tmp_path):
    t = {"a": torch.randn(3, 2), "b": np.arange(4, dtype=np.float64), "c": torch.ones(2, dtype=torch.float16)}
    common.write_safetensors(str(tmp_path / "f32"), t)
    common.write_safetensors(str(tmp_path / "f16"), t, dtype="F16")
    back = ref.read_safetensors(str(tmp_path / "f32"))
    assert list(back) == ["a", "b", "c"] and np.array_equal(back["a"], t["a"].numpy())
    assert np.array_equal(back["b"], t["b"].astype(np.float32))
    assert np.array_equal(ref.read_safetensors(str(tmp_path / "f16"))["a"], t["a"].half().float().numpy())
    common.write_model_json(str(tmp_path / "model.json"), {"format": "tfm-model", "x": "▁"})
    text = (tmp_path / "model.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and json.loads(text) == {"format": "tfm-model", "x": "▁"}
    with pytest.raises(ConversionError, match=r"^cannot write '.*': "):
        common.write_model_json(str(tmp_path / "absent" / "model.json"), {})
