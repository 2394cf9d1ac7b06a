"""Self-tests of the PyTorch reference.

    /usr/bin/python3 tests/reference/test_reference.py
"""

import math
import os
import random
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfm_reference as ref  # noqa: E402

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
            np.testing.assert_allclose(batch[b, : len(t)], single, atol=1e-5)

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
            tgts = ref.read_ids(os.path.join(d, "tgt.ids"))
            logits = np.load(os.path.join(d, "logits.npy"))
            np.testing.assert_allclose(model.forward_ids(srcs, tgts), logits, atol=1e-5)
            expected = ref.read_ids(os.path.join(d, "greedy-min0-max20.ids"))
            self.assertEqual([model.greedy(s, 0, 20) for s in srcs], expected, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
