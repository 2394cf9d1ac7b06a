"""Writes DIR/marian (a tiny random OPUS-MT-style directory, SentencePiece
models trained on 1000 lines of the shared Tatoeba text) and DIR/model (its
tfmc conversion by `tfmc.convert marian`), for the lit tests."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "convert"))
import checkpoints as ck  # noqa: E402
from tfmc.convert.__main__ import main  # noqa: E402

out = sys.argv[1]
data = os.path.join(os.path.dirname(ROOT), "shared", "data", "tatoeba-zh-en")


def lines(name):
    with open(os.path.join(data, name), encoding="utf-8") as f:
        return f.read().splitlines()[:1000]


os.makedirs(os.path.join(out, "spm"), exist_ok=True)
zh = ck.train_spm(lines("train.zh"), os.path.join(out, "spm", "zh"), 1200, 0.98)
en = ck.train_spm(lines("train.en"), os.path.join(out, "spm", "en"), 300, 1.0)
ck.make_marian(os.path.join(out, "marian"), zh, en, activation="swish", tie=False)
sys.exit(main(["marian", os.path.join(out, "marian"), "-o", os.path.join(out, "model")]))
