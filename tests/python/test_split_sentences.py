"""Paragraphs in, paragraphs out (`--split-sentences`, `split_sentences`).

A line made of several dev-set sentences must translate to exactly the
translations of those sentences, each translated on its own line (with the
same option, so a dev line that itself holds two sentences is split the same
way in both), joined with single spaces: on the CLI, the Python module and
`tfmc serve`. Run by ctest with the Python module (PYTHONPATH=build/python,
TFMC_BIN=build/bin/tfmc).
"""

import json
import os
import random
import re
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

import tfmc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZH_EN = os.path.join(ROOT, "examples", "zh-en", "model.json")
DEV = os.path.join(ROOT, "..", "shared", "data", "tatoeba-zh-en", "dev.zh")
TFMC = os.environ.get("TFMC_BIN", os.path.join(ROOT, "build", "bin", "tfmc"))
CACHE = os.environ.get("TFMC_CACHE_DIR", "")

# A sentence that ends with one of these marks (and closing quotes) can be
# told apart from the next; the 5 dev lines that end without one cannot, by
# any splitter, and do not start a pair.
ENDS = re.compile(r"[。！？!?；…][”\"』」）)]*$")


def dev_lines():
    with open(DEV, encoding="utf-8") as f:
        return f.read().splitlines()


def cli(lines, *options):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".zh", delete=False) as f:
        f.write("".join(line + "\n" for line in lines))
    try:
        env = dict(os.environ)
        if CACHE:
            env["TFMC_CACHE_DIR"] = CACHE
        out = subprocess.run([TFMC, "translate", ZH_EN, "-i", f.name, *options],
                             capture_output=True, text=True, env=env, check=True)
    finally:
        os.unlink(f.name)
    return out.stdout.split("\n")[:-1]


def join(parts):
    return " ".join(p for p in parts if p)


@pytest.fixture(scope="module")
def cases():
    lines = dev_lines()
    singles = cli(lines, "--split-sentences", "on")
    assert len(singles) == len(lines)
    sources, expected = [], []
    starts = [i for i in range(len(lines) - 1) if ENDS.search(lines[i])]
    assert len(starts) >= 990  # all but the few lines without a final mark
    for i in starts:
        sources.append(lines[i] + lines[i + 1])
        expected.append(join([singles[i], singles[i + 1]]))
    rng = random.Random(31)
    splittable = [i for i in range(len(lines)) if ENDS.search(lines[i])]
    for _ in range(100):
        picked = [rng.choice(splittable) for _ in range(4)] + [rng.randrange(len(lines))]
        sources.append("".join(lines[i] for i in picked))
        expected.append(join([singles[i] for i in picked]))
    return sources, expected


def test_cli_joins_sentence_translations(cases):
    sources, expected = cases
    got = cli(sources, "--split-sentences", "on")
    wrong = [(s, e, g) for s, e, g in zip(sources, expected, got) if e != g]
    assert len(got) == len(expected)
    assert not wrong, wrong[:3]


def test_python_module_joins_sentence_translations(cases):
    sources, expected = cases
    t = tfmc.Translator(ZH_EN, cache_dir=CACHE)
    assert t.translate(sources, split_sentences="on") == expected
    # The bundled model is sentence-level: "auto" (the default) splits.
    assert t.translate(sources[:50]) == expected[:50]
    assert t.translate(sources[:50], split_sentences="off") != expected[:50]
    with pytest.raises(ValueError, match="split_sentences"):
        t.translate(sources[:1], split_sentences="on", return_scores=True)
    with pytest.raises(ValueError, match="split_sentences"):
        t.translate(sources[:1], split_sentences="sometimes")


def test_serve_joins_sentence_translations(cases):
    sources, expected = cases
    proc = subprocess.Popen([TFMC, "serve", ZH_EN, "--port", "0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        port, deadline = None, time.time() + 120
        while port is None and time.time() < deadline:
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", proc.stderr.readline() or "")
            if m:
                port = int(m.group(1))
            assert proc.poll() is None, proc.stderr.read()
        assert port, "tfmc serve did not start"
        got = []
        # Requests of 20 lines: split, each line's sentences count against
        # --max-sentences (256).
        for first in range(0, len(sources), 20):
            body = json.dumps({"text": sources[first:first + 20],
                               "split_sentences": "on"}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                got += json.loads(r.read())["translations"]
        assert got == expected
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_one_output_line_per_input_line():
    lines = dev_lines()
    with open(DEV.replace("dev.zh", "train.zh"), encoding="utf-8") as f:
        train = f.read().splitlines()
    longest = sorted((l for l in train if ENDS.search(l)), key=len)[-200:]
    long_line = "".join(longest)  # 200 sentences
    assert len(long_line) >= 5000
    inputs = ["", "。。。", "！？", "   ", long_line, "我们走吧", "好。", lines[0]]
    got = cli(inputs, "--split-sentences", "on")
    assert len(got) == len(inputs)
    assert got[0] == "" and got[3] == ""
    assert got[-1] == cli([lines[0]], "--split-sentences", "off")[0]
    # No final mark: one sentence, as without splitting.
    assert got[5] == cli(["我们走吧"], "--split-sentences", "off")[0]


def test_split_options_refused_where_they_cannot_apply():
    for extra in (["--n-best", "2", "--beam-size", "2"], ["--scores"], ["--ids"]):
        out = subprocess.run([TFMC, "translate", ZH_EN, "--split-sentences", "on", *extra],
                             input="", capture_output=True, text=True)
        assert out.returncode != 0
        assert out.stderr.startswith("error: --split-sentences on") and out.stderr.count("\n") == 1
    out = subprocess.run([TFMC, "translate", ZH_EN, "--split-sentences", "maybe"],
                         input="", capture_output=True, text=True)
    assert out.returncode != 0 and "expected on, off or auto" in out.stderr
