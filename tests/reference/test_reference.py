"""Self-tests of the PyTorch reference.

    /usr/bin/python3 tests/reference/test_reference.py
"""

import json
import math
import os
import random
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tfmc.reference import tfm as ref  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "fixtures")
ARCH = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64,
            max_len=64, activation="relu", norm="post", layer_norm_eps=1e-5,
            embedding_scale=False, positional_encoding="sinusoidal")


def make(seed=7, **over):
    model = ref.TranslationTransformer(dict(ARCH, **over), 37, 41).eval()
    return ref.random_init(model, seed, qk_gain=4.0, out_gain=2.0)


def lines(seed, n, vocab, lo=1, hi=15, low=4):
    rng = random.Random(seed)
    return [[rng.randrange(low, vocab) for _ in range(rng.randint(lo, hi))] for _ in range(n)]


def torch_nn_forward(model, src_lines, tgt_lines):
    """The same model run through torch.nn.Transformer{Encoder,Decoder}Layer (independent path)."""
    a, d = model.arch, model.arch["d_model"]
    kw = dict(d_model=d, nhead=a["num_heads"], dim_feedforward=a["d_ff"], dropout=0.0,
              activation=a["activation"], layer_norm_eps=a["layer_norm_eps"], batch_first=True,
              norm_first=a["norm"] == "pre")

    def copy_attn(dst, src):
        dst.in_proj_weight.copy_(torch.cat([src.query_linear.weight, src.key_linear.weight,
                                            src.value_linear.weight]))
        dst.in_proj_bias.copy_(torch.cat([src.query_linear.bias, src.key_linear.bias,
                                          src.value_linear.bias]))
        dst.out_proj.weight.copy_(src.output_linear.weight)
        dst.out_proj.bias.copy_(src.output_linear.bias)

    def copy_common(dst, src, norms):
        dst.linear1.load_state_dict(src.feed_forward.linear1.state_dict())
        dst.linear2.load_state_dict(src.feed_forward.linear2.state_dict())
        for n in norms:
            getattr(dst, n).load_state_dict(getattr(src, n).state_dict())

    src = model.pad_batch([model.source_ids(s) for s in src_lines])
    tgt = model.pad_batch(tgt_lines)
    scale = math.sqrt(d) if a["embedding_scale"] else 1.0

    def embed(table, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.float64)[:, None]
        div = torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
        pe = torch.stack([torch.sin(pos / div), torch.cos(pos / div)], dim=-1).reshape(-1, d)
        return table.weight[ids] * scale + pe.float()

    with torch.no_grad():
        x = embed(model.encoder_embedding, src)
        for mine in model.encoder_layers:
            layer = nn.TransformerEncoderLayer(**kw).eval()
            copy_attn(layer.self_attn, mine.self_attention)
            copy_common(layer, mine, ["norm1", "norm2"])
            x = layer(x, src_key_padding_mask=src == 0)
        mem = model.encoder_norm(x) if a["norm"] == "pre" else x
        y = embed(model.decoder_embedding, tgt)
        T = tgt.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        for mine in model.decoder_layers:
            layer = nn.TransformerDecoderLayer(**kw).eval()
            copy_attn(layer.self_attn, mine.masked_self_attention)
            copy_attn(layer.multihead_attn, mine.enc_dec_attention)
            copy_common(layer, mine, ["norm1", "norm2", "norm3"])
            y = layer(y, mem, tgt_mask=causal, tgt_key_padding_mask=tgt == 0,
                      memory_key_padding_mask=src == 0)
        if a["norm"] == "pre":
            y = model.decoder_norm(y)
        return model.linear(y).numpy()


class ReferenceTest(unittest.TestCase):
    def test_matches_torch_nn_layers(self):
        srcs, tgts = lines(1, 5, 37), [[1] + t for t in lines(2, 5, 41, 0, 9, 3)]
        for norm in ("post", "pre"):
            for act in ("relu", "gelu"):
                model = make(norm=norm, activation=act, embedding_scale=norm == "pre")
                mine = model.forward_ids(srcs, tgts)
                theirs = torch_nn_forward(model, srcs, tgts)
                for b, t in enumerate(tgts):
                    np.testing.assert_allclose(mine[b, : len(t)], theirs[b, : len(t)], atol=1e-4)

    def test_batch_rows_are_independent(self):
        model = make(norm="pre")
        srcs, tgts = lines(3, 6, 37, 1, 20), [[1] + t for t in lines(4, 6, 41, 0, 12, 3)]
        batch = model.forward_ids(srcs, tgts)
        for b, (s, t) in enumerate(zip(srcs, tgts)):
            single = model.forward_ids([s], [t])[0]
            # float32 GEMMs of a batch and of one row sum in different
            # orders: up to 1.3e-5 measured, on rows whose logits reach 4.5,
            # so the bound scales with the row's largest logit (as the C++
            # tests' comparisons do); a row leaking into another would
            # differ by far more.
            scale = max(1.0, float(np.abs(single).max()))
            np.testing.assert_allclose(batch[b, : len(t)], single, rtol=0, atol=1e-5 * scale)

    def test_greedy_is_argmax_of_teacher_forcing(self):
        model = make()
        for s in lines(5, 6, 37):
            for mn in (0, 5):
                out = model.greedy(s, mn, 20)
                logits = model.forward_ids([s], [[1] + out])[0].astype(np.float64)
                for t in range(len(logits)):
                    logits[t, [0, 1] + ([2] if t < mn else [])] = -np.inf
                steps = np.argmax(logits, axis=-1)
                self.assertEqual(list(steps[: len(out)]), out)
                if len(out) < 20:
                    self.assertEqual(steps[len(out)], 2)
                self.assertTrue(len(out) >= mn or len(out) == 20)

    def test_beam_one_is_greedy(self):
        for norm in ("post", "pre"):
            model = make(norm=norm)
            for s in lines(6, 5, 37):
                for mn, mx in ((0, 20), (5, 20), (0, 3)):
                    [(ids, _)] = model.beam(s, 1, 1.0, mn, mx)
                    self.assertEqual(ids, model.greedy(s, mn, mx))

    def test_beam_scores_are_normalised_log_probs(self):
        model = make(norm="pre")
        s = lines(7, 1, 37)[0]
        for ids, score in model.beam(s, 4, 0.6, 0, 20):
            tgt = [1] + ids
            logp = torch.log_softmax(torch.from_numpy(model.forward_ids([s], [tgt])[0]), -1).numpy()
            seq = ids + ([2] if len(ids) < 20 else [])
            total = sum(float(logp[t, tok]) for t, tok in enumerate(seq))
            self.assertAlmostEqual(score, total / len(seq) ** 0.6, places=4)

    def test_source_truncation(self):
        model = make(max_len=8)
        self.assertEqual(model.source_ids(list(range(4, 14))), [4, 5, 6, 7, 8, 9, 10, 2])
        self.assertEqual(model.source_ids([5] * 7), [5] * 7 + [2])

    def test_export_load_roundtrip(self):
        model = make(norm="pre", activation="gelu")
        srcs, tgts = lines(8, 3, 37), [[1] + t for t in lines(9, 3, 41, 0, 5, 3)]
        with tempfile.TemporaryDirectory() as d:
            ref.export(model, d)
            names = list(ref.read_safetensors(os.path.join(d, "model.safetensors")))
            self.assertEqual(names, list(model.state_dict()))
            with open(os.path.join(d, "tgt.vocab")) as f:
                self.assertEqual(f.read().split()[:5], ["<pad>", "<s>", "</s>", "<unk>", "t4"])
            loaded = ref.load(d)
            np.testing.assert_array_equal(model.forward_ids(srcs, tgts), loaded.forward_ids(srcs, tgts))

    def test_state_dict_names(self):
        names = set(make(norm="pre").state_dict())
        for n in ("encoder_embedding.weight", "decoder_embedding.weight",
                  "encoder_layers.1.self_attention.output_linear.bias",
                  "encoder_layers.0.feed_forward.linear2.weight", "encoder_layers.0.norm2.weight",
                  "decoder_layers.1.enc_dec_attention.key_linear.weight",
                  "decoder_layers.0.masked_self_attention.query_linear.bias",
                  "decoder_layers.1.norm3.bias", "encoder_norm.weight", "decoder_norm.bias",
                  "linear.weight", "linear.bias"):
            self.assertIn(n, names)
        self.assertFalse(any("norm" in n and "layers" not in n for n in make().state_dict()))

    def test_fixtures_reproduce(self):
        if not os.path.isdir(FIXTURES):
            self.skipTest("no fixtures")
        for name in sorted(os.listdir(FIXTURES)):
            d = os.path.join(FIXTURES, name)
            if not os.path.isdir(d):
                continue
            model = ref.load(d)
            srcs = ref.read_ids(os.path.join(d, "src.ids"))
            if not model.has_decoder:  # encoder-only: states.npy instead of logits
                states = np.load(os.path.join(d, "states.npy"))
                np.testing.assert_allclose(model.encode_states(srcs), states, atol=1e-5, err_msg=name)
                continue
            tgts = ref.read_ids(os.path.join(d, "tgt.ids"))
            logits = np.load(os.path.join(d, "logits.npy"))
            np.testing.assert_allclose(model.forward_ids(srcs, tgts), logits, atol=1e-5, err_msg=name)
            expected = ref.read_ids(os.path.join(d, "greedy-min0-max20.ids"))
            self.assertEqual([model.greedy(s, 0, 20) for s in srcs], expected, name)


def fake_logits(vocab, seed=0):
    """A deterministic step_logits callable (no model): float32 logits that
    depend on the whole prefix, for testing the search rules alone."""
    def step(prefixes):
        out = []
        for p in prefixes:
            rng = np.random.default_rng([seed] + list(p))
            out.append(rng.normal(size=vocab).astype(np.float32))
        return np.stack(out)
    return step


def has_repeated_ngram(ids, n):
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return len(grams) != len(set(grams))


OPTION_SETS = [
    dict(max_length_factor=1.5, max_length_offset=2),
    dict(no_repeat_ngram_size=1), dict(no_repeat_ngram_size=2), dict(no_repeat_ngram_size=3),
    dict(repetition_penalty=1.5), dict(repetition_penalty=0.8),
    dict(max_length_factor=2.0, max_length_offset=3, no_repeat_ngram_size=3, repetition_penalty=1.3),
]


class DecodingOptionsTest(unittest.TestCase):
    """max_length_factor / max_length_offset, no_repeat_ngram_size and
    repetition_penalty (docs/reference.md, "Decoding options")."""

    def test_length_limit(self):
        self.assertEqual(ref.length_limit(20, 5), 20)                     # factor 0: off
        self.assertEqual(ref.length_limit(20, None, 0.0, -7), 20)
        self.assertEqual(ref.length_limit(30, 2, 1.5, 2), 5)               # ceil(3.0) + 2
        self.assertEqual(ref.length_limit(30, 3, 1.5, 2), 7)               # ceil(4.5) + 2
        self.assertEqual(ref.length_limit(30, 20, 1.5, 2), 30)             # capped by max_length
        self.assertEqual(ref.length_limit(100, 25, 2.2, 0), 56)            # 2.2 * 25 = 55.00000000000001
        self.assertEqual(ref.length_limit(200, 45, 1.4, 1), 64)            # 1.4 * 45 = 62.99999999999999
        self.assertEqual(ref.length_limit(100, 4, 0.25, 0), 1)
        with self.assertRaises(ValueError):
            ref.length_limit(20, 5, -1.0, 0)
        with self.assertRaises(ValueError):
            ref.length_limit(20, None, 1.0, 0)

    def test_ngram_forbidden(self):
        eos = 2
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 7, 5], 0, eos), [])
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 7, 5], 1, eos), [5, 6, 7])
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 7, 5], 2, eos), [6, 7])
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 7, 5], 3, eos), [])
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 6, 5], 3, eos), [6])
        self.assertEqual(ref.ngram_forbidden([5, 6, 5, 6, 5], 4, eos), [6])
        self.assertEqual(ref.ngram_forbidden([5, 5], 2, eos), [5])
        self.assertEqual(ref.ngram_forbidden([5], 2, eos), [])             # no earlier bigram
        self.assertEqual(ref.ngram_forbidden([5, 6], 4, eos), [])          # t < N - 1
        self.assertEqual(ref.ngram_forbidden([], 1, eos), [])
        self.assertEqual(ref.ngram_forbidden([4, 2, 4], 2, eos), [])       # eos never forbidden

    def test_repetition_penalty_values(self):
        logits = np.array([2.0, -2.0, 0.0, 1.0, 3.0], dtype=np.float32)
        out = ref.apply_repetition_penalty(logits, [0, 1, 2, 0], 2.0)
        np.testing.assert_array_equal(out, np.array([1.0, -4.0, 0.0, 1.0, 3.0], dtype=np.float32))
        self.assertEqual(out.dtype, np.float32)
        self.assertEqual(logits[0], 2.0)                                   # input unchanged
        out = ref.apply_repetition_penalty(logits, [4, 1], 0.5)            # P < 1 boosts
        np.testing.assert_array_equal(out, np.array([2.0, -1.0, 0.0, 1.0, 6.0], dtype=np.float32))
        x = np.array([0.1], dtype=np.float32)                              # float32 arithmetic
        self.assertEqual(ref.apply_repetition_penalty(x, [0], 1.3)[0], np.float32(0.1) / np.float32(1.3))
        self.assertIs(ref.apply_repetition_penalty(logits, [0], 1.0), logits)
        for bad in (0.0, -1.0, float("nan")):
            with self.assertRaises(ValueError):
                ref.greedy_search(fake_logits(8), ref.DEFAULT_SPECIAL, repetition_penalty=bad)
        with self.assertRaises(ValueError):
            ref.beam_search(fake_logits(8), ref.DEFAULT_SPECIAL, 2, no_repeat_ngram_size=-1)

    def test_defaults_reproduce_fixtures(self):
        """Explicit defaults (A = 0, N = 0, P = 1) give the committed version-1 expectations."""
        defaults = dict(max_length_factor=0.0, max_length_offset=10, no_repeat_ngram_size=0,
                        repetition_penalty=1.0)
        for name in ("pre-gelu-scale", "seed000"):
            d = os.path.join(FIXTURES, name)
            if not os.path.isdir(d):
                self.skipTest("no fixtures")
            with open(os.path.join(d, "cases.json")) as f:
                case = json.load(f)
            model = ref.load(d)
            srcs = ref.read_ids(os.path.join(d, "src.ids"))
            for g in case["greedy"]:
                if "repetition_penalty" in g:
                    continue
                want = ref.read_ids(os.path.join(d, g["file"]))
                got = [model.greedy(s, g["min_length"], g["max_length"], **defaults) for s in srcs]
                self.assertEqual(got, want, f"{name} {g['file']}")
            b = case["beam"][0]
            want = read_nbest(os.path.join(d, b["file"]))
            for i, s in enumerate(srcs):
                got = model.beam(s, b["beam_size"], b["length_penalty"], b["min_length"],
                                 b["max_length"], b["n_best"], **defaults)
                self.assertEqual([ids for ids, _ in got], [ids for ids, _ in want[i]], f"{name} line {i}")
                for (_, x), (_, y) in zip(got, want[i]):
                    self.assertAlmostEqual(x, y, delta=1e-4)

    def test_no_repeat_ngram(self):
        model = make(norm="pre")
        srcs = lines(20, 4, 37, 1, 12)
        for s in srcs:
            for n in (1, 2, 3):
                # min_length keeps eos away, so the rule has long outputs to act on
                out = model.greedy(s, 15, 30, no_repeat_ngram_size=n)
                self.assertFalse(has_repeated_ngram(out, n), (n, out))
                if n == 1:
                    self.assertEqual(len(out), len(set(out)))
                self.assertEqual(out, self._greedy_by_hand(model, s, 15, 30, n, 1.0))
                for ids, _ in model.beam(s, 3, 1.0, 5, 20, no_repeat_ngram_size=n):
                    self.assertFalse(has_repeated_ngram(ids, n), (n, ids))

    def test_repetition_penalty(self):
        model = make(norm="post")
        for s in lines(21, 4, 37, 1, 12):
            for p in (1.5, 0.8, 1.3):
                out = model.greedy(s, 3, 20, repetition_penalty=p)
                self.assertEqual(out, self._greedy_by_hand(model, s, 3, 20, 0, p), (p, s))
            plain = model.greedy(s, 0, 20)
            self.assertEqual(model.greedy(s, 0, 20, repetition_penalty=1.0), plain)

    def _greedy_by_hand(self, model, src, min_length, max_length, n, p):
        """Greedy from teacher-forced logits of growing prefixes, rules applied inline."""
        out = []
        while len(out) < max_length:
            row = model.forward_ids([src], [[1] + out])[0, -1].astype(np.float32)
            for v in set(out):
                row[v] = row[v] / np.float32(p) if row[v] > 0 else row[v] * np.float32(p)
            logits = row.astype(np.float64)
            logits[[0, 1]] = -np.inf
            if len(out) < min_length:
                logits[2] = -np.inf
            if n:
                t = len(out)
                for i in range(t - n + 1):
                    if out[i:i + n - 1] == out[t - n + 1:] and out[i + n - 1] != 2:
                        logits[out[i + n - 1]] = -np.inf
            if not np.isfinite(logits).any():
                break
            tok = int(np.argmax(logits))
            if tok == 2:
                break
            out.append(tok)
        return out

    def test_length_rule_caps_each_row(self):
        model = make(max_len=8)               # sources longer than 7 ids are truncated
        srcs = [[5], [6, 7], [8, 9, 10, 11], list(range(4, 14)), list(range(4, 30))]
        for a, b, mx in ((1.5, 2, 30), (3.0, 10, 40), (0.5, 1, 20), (2.0, -3, 20), (0.0, 10, 12)):
            for s in srcs:
                S = min(len(s), 7) + 1
                self.assertEqual(len(model.source_ids(s)), S)
                cap = min(mx, model.max_len)  # greedy/beam cap max_length at max_len first
                limit = cap if a == 0 else min(cap, math.ceil(a * S) + b)
                # eos banned throughout: every row runs exactly to its limit
                out = model.greedy(s, 1000, mx, max_length_factor=a, max_length_offset=b)
                self.assertEqual(len(out), max(limit, 0), (a, b, s))
                free = model.greedy(s, 0, mx, max_length_factor=a, max_length_offset=b)
                self.assertLessEqual(len(free), max(limit, 0))
                self.assertEqual(free, model.greedy(s, 0, max(limit, 0)))
                if limit < 1:
                    continue
                for ids, score in model.beam(s, 3, 0.7, 1000, mx, max_length_factor=a,
                                             max_length_offset=b):
                    self.assertEqual(len(ids), limit)
                    logp = torch.log_softmax(torch.from_numpy(model.forward_ids([s], [[1] + ids])[0]), -1)
                    total = sum(float(logp[t, tok]) for t, tok in enumerate(ids))
                    self.assertAlmostEqual(score, total / limit ** 0.7, places=4)

    def test_beam_one_is_greedy_with_options(self):
        model = make(norm="pre")
        for s in lines(22, 4, 37, 1, 15):
            for opts in OPTION_SETS:
                for mn in (0, 4):
                    [(ids, _)] = model.beam(s, 1, 1.0, mn, 20, **opts)
                    self.assertEqual(ids, model.greedy(s, mn, 20, **opts), (opts, mn))

    def test_everything_forbidden_ends_the_row(self):
        # vocab 6: only 3, 4, 5 are real tokens; N = 1 and eos banned by min_length
        step = fake_logits(6, seed=3)
        out = ref.greedy_search(step, ref.DEFAULT_SPECIAL, 10, 20, no_repeat_ngram_size=1,
                                src_length=4)
        self.assertEqual(sorted(out), [3, 4, 5])
        for ids, _ in ref.beam_search(step, ref.DEFAULT_SPECIAL, 2, 1.0, 2, 20, no_repeat_ngram_size=1):
            self.assertEqual(len(ids), len(set(ids)))

    def test_option_fixtures_reproduce(self):
        """The decoding-option cases in the fixtures (entries with the new keys)."""
        found = 0
        for name in sorted(os.listdir(FIXTURES)) if os.path.isdir(FIXTURES) else []:
            d = os.path.join(FIXTURES, name)
            entries = {"greedy": [], "beam": []}
            for fname in ("cases.json", "cases-decoding.json"):
                if os.path.exists(os.path.join(d, fname)):
                    with open(os.path.join(d, fname)) as f:
                        c = json.load(f)
                    for kind in entries:
                        entries[kind] += [e for e in c.get(kind, []) if "repetition_penalty" in e]
            if not entries["greedy"] and not entries["beam"]:
                continue
            model = ref.load(d)
            srcs = ref.read_ids(os.path.join(d, "src.ids"))
            for g in entries["greedy"]:
                found += 1
                opts = {k: g[k] for k in OPTION_KEYS}
                self.assertGreaterEqual(g["min_margin"], 1e-4)
                want = ref.read_ids(os.path.join(d, g["file"]))
                got = [model.greedy(s, g["min_length"], g["max_length"], **opts) for s in srcs]
                self.assertEqual(got, want, f"{name} {g['file']}")
            for b in entries["beam"]:
                found += 1
                opts = {k: b[k] for k in OPTION_KEYS}
                self.assertGreaterEqual(b["min_margin"], 1e-4)
                want = read_nbest(os.path.join(d, b["file"]))
                for i, s in enumerate(srcs):
                    got = model.beam(s, b["beam_size"], b["length_penalty"], b["min_length"],
                                     b["max_length"], b["n_best"], **opts)
                    self.assertEqual([x for x, _ in got], [x for x, _ in want[i]], f"{name} {b['file']} {i}")
                    for (_, x), (_, y) in zip(got, want[i]):
                        self.assertAlmostEqual(x, y, delta=1e-4)
        if not found:
            self.skipTest("no decoding-option fixture cases")


OPTION_KEYS = ("max_length_factor", "max_length_offset", "no_repeat_ngram_size", "repetition_penalty")


def read_nbest(path):
    """beam-*.txt -> {line index: [(ids, score)]} in file order."""
    out = {}
    with open(path) as f:
        for line in f.read().splitlines():
            i, ids, score = (x.strip() for x in line.split("|||"))
            out.setdefault(int(i), []).append(([int(t) for t in ids.split()], float(score)))
    return out


class RecipeTest(unittest.TestCase):
    """Block recipes (encoder_layer / decoder_layer), final norms, encoder-only models."""

    def test_parser_errors(self):
        """tfmc's messages (tests/unit/frontends/LayerRecipeTest.cpp); the
        cross-check with tfmc itself is in tests/importer."""
        bad = {
            "": "column 1: expected a statement",
            " \t\r\n": "column 5: expected a statement",
            "x = self_attn(x)": "column 17: no ffn (an encoder layer needs exactly one)",
            "x = self_attn(x); x = ffn(x); x = ffn(x)": "column 35: ffn occurs more than once (a layer has one)",
            "x = self_attn(x) + ffn(y)": "column 24: 'y' is used before it is assigned",
            "x = self_attn(x); x = foo(x) + ffn(x)": "column 23: 'foo' is used before it is assigned",
            "x = self_attn(x);; x = ffn(x)": "column 18: expected a value name, found ';'",
            "x = self_attn(x); x = ffn(x); x = x + cross_attn(x)":
                "column 39: cross_attn is only allowed in a decoder layer",
            "ffn = self_attn(x); x = ffn(x)": "column 1: 'ffn' is a sublayer, not a value name",
            "norm0 = x; x = self_attn(x) + ffn(x)": "column 1: 'norm0' is a sublayer, not a value name",
            "x = self_attn(x); x = ffn": "column 26: expected '(', found the end of the recipe",
            "x = self_attn(x) * ffn(x)": "column 18: unexpected character '*'",
            "x = self_attn(x); x = norm0(ffn(x))": "column 23: unknown sublayer 'norm0' (norms are norm1 ... norm9)",
            "x = norm10(x) + self_attn(x) + ffn(x)": "column 5: unknown sublayer 'norm10' (norms are norm1 ... norm9)",
            "x = x + self_attn(x); h = ffn(x)":
                "column 23: the value assigned to 'h' is never used (the layer output is the final x)",
            "h = x; x = self_attn(x) + ffn(x)":
                "column 1: the value assigned to 'h' is never used (the layer output is the final x)",
            # Only space, tab, CR and LF are whitespace; columns count UTF-8 bytes.
            "x = x +\x0bself_attn(x) + ffn(x)": "column 8: unexpected character '\\x0b'",
            "x = x + self_attn(x) + ffn(x)\u00a0": "column 30: unexpected character '\\xc2'",
            "h\u00e9 = x": "column 2: unexpected character '\\xc3'",
            "/* \u00e9 */ x = y": "column 1: unexpected character '/'",
            "x = ffn(x); x = self_attn(x) + \u00e9": "column 32: unexpected character '\\xc3'",
            "x = \u00e9\u00e9 + y": "column 5: unexpected character '\\xc3'",
        }
        for text, message in bad.items():
            with self.assertRaises(ref.RecipeError) as cm:
                ref.Recipe(text, "encoder")
            self.assertEqual(cm.exception.message, message, repr(text))
            self.assertEqual(str(cm.exception), f"encoder recipe {text!r}: {message}")
            self.assertEqual(ref.recipe_problem(text, "encoder"), message)
        # A missing sublayer is reported at the column after the text (UTF-8 bytes).
        self.assertEqual(ref.recipe_problem("x = self_attn(x); x = ffn(x)", "decoder"),
                         "column 29: no cross_attn (a decoder layer needs exactly one)")
        self.assertEqual(ref.recipe_problem("x = self_attn(x)\n\n", "encoder"),
                         "column 19: no ffn (an encoder layer needs exactly one)")
        r = ref.Recipe(" h = norm3(x) ;x=x+ self_attn(h)+ffn(norm1(h));\n", "encoder")
        self.assertEqual(str(r), "h = norm3(x); x = x + self_attn(h) + ffn(norm1(h))")
        self.assertEqual(r.norms, [1, 3])
        # `norm` alone and other non-sublayer names are values.
        r = ref.Recipe("norm = norm1(x); x = x + self_attn(norm) + ffn(norm)", "encoder")
        self.assertEqual(r.norms, [1])
        # Overwriting x before its old value is read is fine when the new value uses it.
        self.assertIsNone(ref.recipe_problem("h = ffn(x); x = self_attn(x); x = x + h", "encoder"))

    def test_shorthand_equals_explicit_recipes(self):
        srcs, tgts = lines(10, 4, 37), [[1] + t for t in lines(11, 4, 41, 0, 9, 3)]
        for norm in ("post", "pre"):
            short = make(norm=norm)
            explicit_arch = {k: v for k, v in short.arch.items() if k != "norm"}
            explicit_arch.update(encoder_layer=ref.SHORTHAND_RECIPES[("encoder", norm)],
                                 decoder_layer=ref.SHORTHAND_RECIPES[("decoder", norm)],
                                 encoder_final_norm=norm == "pre", decoder_final_norm=norm == "pre")
            explicit = ref.TranslationTransformer(explicit_arch, 37, 41).eval()
            self.assertEqual(list(explicit.state_dict()), list(short.state_dict()))
            explicit.load_state_dict(short.state_dict())
            np.testing.assert_array_equal(explicit.forward_ids(srcs, tgts), short.forward_ids(srcs, tgts))

    def test_recipe_is_interpreted(self):
        """A parallel encoder block and an unusual decoder, checked against the same
        modules combined by hand."""
        arch = dict(ARCH, encoder_layer="h = norm1(x); x = x + self_attn(h) + ffn(h); x = norm2(x)",
                    decoder_layer="y = self_attn(x) + x; x = norm2(cross_attn(norm1(y)) + y + ffn(y))",
                    decoder_final_norm=True)
        del arch["norm"]
        model = ref.random_init(ref.TranslationTransformer(arch, 37, 41).eval(), 5, out_gain=2.0)
        self.assertEqual([n for n in model.state_dict() if ".1.norm" in n],
                         ["encoder_layers.1.norm1.weight", "encoder_layers.1.norm1.bias",
                          "encoder_layers.1.norm2.weight", "encoder_layers.1.norm2.bias",
                          "decoder_layers.1.norm1.weight", "decoder_layers.1.norm1.bias",
                          "decoder_layers.1.norm2.weight", "decoder_layers.1.norm2.bias"])
        self.assertFalse(model.encoder_final_norm)
        self.assertTrue(model.decoder_final_norm)
        srcs, tgts = lines(12, 3, 37), [[1] + t for t in lines(13, 3, 41, 0, 9, 3)]
        src = model.pad_batch([model.source_ids(s) for s in srcs])
        tgt = model.pad_batch(tgts)
        with torch.no_grad():
            S, T = src.shape[1], tgt.shape[1]
            enc_mask = (src == 0)[:, None, :].expand(-1, S, -1)
            x = model._embed(model.encoder_embedding, src)
            for L in model.encoder_layers:
                h = L.norm1(x)
                x = L.norm2(x + L.self_attention(h, h, enc_mask) + L.feed_forward(h))
            mem = x
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)[None] | (tgt == 0)[:, None, :]
            cross = (src == 0)[:, None, :].expand(-1, T, -1)
            x = model._embed(model.decoder_embedding, tgt)
            for L in model.decoder_layers:
                y = L.masked_self_attention(x, x, causal) + x
                x = L.norm2(L.enc_dec_attention(L.norm1(y), mem, cross) + y + L.feed_forward(y))
            want = model.linear(model.decoder_norm(x)).numpy()
        np.testing.assert_allclose(model.forward_ids(srcs, tgts), want, atol=1e-6)
        with tempfile.TemporaryDirectory() as d:
            ref.export(model, d)
            with open(os.path.join(d, "model.json")) as f:
                written = json.load(f)["architecture"]
            self.assertNotIn("norm", written)
            self.assertEqual(list(written)[-3:], ["encoder_layer", "decoder_layer", "decoder_final_norm"])
            loaded = ref.load(d)
            np.testing.assert_array_equal(loaded.forward_ids(srcs, tgts), model.forward_ids(srcs, tgts))

    def test_version1_model_json_is_unchanged(self):
        with tempfile.TemporaryDirectory() as d:
            ref.export(make(norm="pre"), d)
            with open(os.path.join(d, "model.json")) as f:
                desc = json.load(f)
        self.assertEqual(list(desc["architecture"]), list(ref.ARCH_FIELDS))
        self.assertEqual(list(desc), ["format", "version", "architecture", "source", "target",
                                      "special_tokens", "weights"])

    def test_encoder_only(self):
        arch = dict(ARCH, num_decoder_layers=0, norm="pre")
        model = ref.random_init(ref.TranslationTransformer(arch, 37, None).eval(), 6)
        self.assertFalse(model.has_decoder)
        self.assertTrue(all(n.startswith("encoder_") for n in model.state_dict()))
        self.assertIn("encoder_norm.weight", model.state_dict())
        srcs = lines(14, 4, 37, 1, 20)
        states = model.encode_states(srcs)
        width = max(len(s) for s in srcs) + 1
        self.assertEqual(states.shape, (4, width, 32))
        for b, s in enumerate(srcs):
            self.assertFalse(states[b, len(s) + 1:].any())
            self.assertTrue(np.abs(states[b, : len(s) + 1]).sum(-1).all())
            single = model.encode_states([s])[0]
            np.testing.assert_allclose(states[b, : len(s) + 1], single, atol=1e-5)
        with tempfile.TemporaryDirectory() as d:
            ref.export(model, d)
            with open(os.path.join(d, "model.json")) as f:
                desc = json.load(f)
            self.assertNotIn("target", desc)
            self.assertFalse(os.path.exists(os.path.join(d, "tgt.vocab")))
            np.testing.assert_array_equal(ref.load(d).encode_states(srcs), states)
        with self.assertRaisesRegex(ValueError, "decoder_layer is not allowed"):
            ref.TranslationTransformer(dict(arch, decoder_layer="x = ffn(x)"), 37, None)

    def test_architecture_errors(self):
        no_norm = {k: v for k, v in ARCH.items() if k != "norm"}
        with self.assertRaisesRegex(ValueError, "architecture.norm missing"):
            ref.TranslationTransformer(no_norm, 37, 41)
        with self.assertRaisesRegex(ValueError, "architecture.norm missing .*decoder_layer"):
            ref.TranslationTransformer(dict(no_norm, encoder_layer="x = self_attn(x) + ffn(x)"), 37, 41)
        with tempfile.TemporaryDirectory() as d:
            ref.export(make(), d)
            path = os.path.join(d, "model.json")
            with open(path) as f:
                desc = json.load(f)
            for field, value, message in (("encoder_layers", "x", "unknown field 'architecture.encoder_layers'"),
                                          ("encoder_final_norm", "yes", "expected a boolean"),
                                          ("decoder_layer", "x = self_attn(x) + ffn(x)", "no cross_attn")):
                bad = json.loads(json.dumps(desc))
                bad["architecture"][field] = value
                with open(path, "w") as f:
                    json.dump(bad, f)
                with self.assertRaisesRegex(ValueError, message):
                    ref.load(d)

if __name__ == "__main__":
    unittest.main(verbosity=2)
