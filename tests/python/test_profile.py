"""The Python module's profile (Translator(..., profile=True)): the profiled
variant translates exactly as the plain one, profile() returns one row per
compiled op that ran (counted against the fused IR of `tfmc compile`), the
runtime's phases and the rest, adding up to the translate calls' time;
profile_text() gives the CLI's formats. Run by ctest with the Python module
(PYTHONPATH=build/python, TFMC_BIN=build/bin/tfmc).
"""

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

import tfmc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZH_EN = os.path.join(ROOT, "examples", "zh-en", "model.json")
DEV = os.path.join(ROOT, "..", "shared", "data", "tatoeba-zh-en", "dev.zh")
TFMC = os.environ.get("TFMC_BIN", os.path.join(ROOT, "build", "bin", "tfmc"))


def fused_ops():
    out = subprocess.run([TFMC, "compile", ZH_EN, "--emit=fused"], check=True,
                         capture_output=True, text=True).stdout
    ops, function = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*func\.func @(\w+)", line)
        if m:
            function = m.group(1)
            ops[function] = 0
        elif function and re.search(r"(= |^\s+)tfm\.[a-z_]+ ", line):
            ops[function] += 1
    return ops


@pytest.fixture(scope="module")
def lines():
    with open(DEV, encoding="utf-8") as f:
        return f.read().splitlines()[:64]


@pytest.mark.parametrize("kernels", ["library", "loops"])
def test_profiled_translation_and_rows(lines, kernels):
    plain = tfmc.Translator(ZH_EN, kernels=kernels)
    expected = plain.translate(lines, beam_size=2)
    profiled = tfmc.Translator(ZH_EN, kernels=kernels, profile=True)
    assert profiled.translate(lines, beam_size=2) == expected
    p = profiled.profile()
    assert p["host"].startswith("cpu: ")
    assert p["wall_seconds"] > 0 and p["bandwidth_gbs"] > 0
    calls = {f["name"]: f["calls"] for f in p["functions"]}
    # Beam search steps end in the candidates (decode_beam, tfm-beam-head).
    assert set(calls) == {"encode", "decode_beam"}
    ops = fused_ops()
    rows = {}
    for r in p["rows"]:
        if r["category"] == "op":
            rows[r["function"]] = rows.get(r["function"], 0) + 1
            assert r["calls"] == calls[r["function"]]
    assert rows == {f: ops[f] for f in calls}
    assert sum(r["seconds"] for r in p["rows"]) == pytest.approx(p["wall_seconds"], rel=1e-3)
    kinds = {r["kind"] for r in p["rows"] if r["category"] == "runtime"}
    assert {"runtime: tokenize", "runtime: detokenize", "runtime: cache moves",
            "runtime: search and the rest"} <= kinds
    # Sorted by time.
    seconds = [r["seconds"] for r in p["rows"]]
    assert seconds == sorted(seconds, reverse=True)

    as_json = json.loads(profiled.profile_text("json"))
    assert len(as_json["rows"]) == len(p["rows"])
    for r in as_json["rows"]:
        if r["calls"]:
            assert r["flop_per_call"] == pytest.approx(r["flop"] / r["calls"])
    assert profiled.profile_text("csv").count("\n") == len(p["rows"]) + 1
    ET.fromstring(profiled.profile_text("svg"))
    with pytest.raises(ValueError):
        profiled.profile_text("xml")

    profiled.reset_profile()
    assert profiled.profile()["wall_seconds"] == 0
    del profiled  # one profiling translator per process at a time


def test_profile_needs_the_profiled_variant():
    plain = tfmc.Translator(ZH_EN)
    with pytest.raises(RuntimeError, match="not loaded for profiling"):
        plain.profile()
