"""The strongest eager PyTorch decoder we could write for the benchmark.

Same model, same semantics as tests/reference, but built for speed: fused
QKV projection for self-attention, cross-attention keys/values computed once
per batch, a preallocated KV cache written in place, no autograd, and every
linear layer through oneDNN (torch.utils.mkldnn.MkldnnLinear): Debian's
torch has only a generic BLAS, 10x slower than oneDNN for these shapes. With
--blas, linear layers use addmm, and addmv (matrix-vector) at batch 1. Greedy decoding of exactly N tokens (eos is
barred, as with tfmc --min-length N --max-length N).

Prints one JSON line: encoder seconds, decode seconds, tokens, tokens/s.
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.mkldnn as mkldnn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from tfmc.reference import tfm as ref  # noqa: E402


class FastDecoder:
    def __init__(self, model, blas=False):
        self.m = model
        self.blas = blas
        a = model.arch
        self.h = a["num_heads"]
        self.d = a["d_model"]
        self.dh = self.d // self.h
        self.pre = a["norm"] == "pre"
        self.act = F.relu if a["activation"] == "relu" else F.gelu
        self.eps = a["layer_norm_eps"]
        self.layers = []
        for layer in model.decoder_layers:
            sa, ca = layer.masked_self_attention, layer.enc_dec_attention
            qkv = nn.Linear(self.d, 3 * self.d)
            with torch.no_grad():
                qkv.weight.copy_(torch.cat([sa.query_linear.weight, sa.key_linear.weight,
                                            sa.value_linear.weight]))
                qkv.bias.copy_(torch.cat([sa.query_linear.bias, sa.key_linear.bias,
                                          sa.value_linear.bias]))
            self.layers.append(dict(
                qkv=self.fast(qkv), so=self.fast(sa.output_linear), cq=self.fast(ca.query_linear),
                ck=self.fast(ca.key_linear), cv=self.fast(ca.value_linear),
                co=self.fast(ca.output_linear), ff1=self.fast(layer.feed_forward.linear1),
                ff2=self.fast(layer.feed_forward.linear2),
                n1=layer.norm1, n2=layer.norm2, n3=layer.norm3))
        self.out = self.fast(model.linear)
        # The encoder (the reference module's) gets the same fast linears.
        for layer in model.encoder_layers:
            for att in ("query_linear", "key_linear", "value_linear", "output_linear"):
                setattr(layer.self_attention, att, self.fast(getattr(layer.self_attention, att)))
            for ff in ("linear1", "linear2"):
                setattr(layer.feed_forward, ff, self.fast(getattr(layer.feed_forward, ff)))

    def fast(self, linear):
        if self.blas:
            return linear
        return mkldnn.MkldnnLinear(linear, torch.float)

    def lin(self, x, mod):
        if self.blas:
            if x.shape[0] == 1:  # matrix-vector product
                return torch.addmv(mod.bias, mod.weight, x[0]).unsqueeze(0)
            return torch.addmm(mod.bias, x, mod.weight.t())
        return mod(x)

    def ln(self, x, mod):
        return F.layer_norm(x, (self.d,), mod.weight, mod.bias, self.eps)

    def attend(self, q, k, v, lengths):
        """q [B,d]; k, v [B,T,d] -> [B,d]; keys >= lengths[b] masked."""
        B, T = k.shape[0], k.shape[1]
        qh = q.view(B, self.h, 1, self.dh)
        kh = k.view(B, T, self.h, self.dh).transpose(1, 2)
        vh = v.view(B, T, self.h, self.dh).transpose(1, 2)
        s = torch.matmul(qh, kh.transpose(2, 3)) / math.sqrt(self.dh)
        if lengths is not None:
            mask = torch.arange(T)[None, :] >= lengths[:, None]
            s = s.masked_fill(mask[:, None, None, :], -1e9)
        return torch.matmul(torch.softmax(s, dim=-1), vh).reshape(B, self.d)

    @torch.no_grad()
    def translate(self, src_rows, steps):
        m, sp = self.m, self.m.special
        src = m.pad_batch([m.source_ids(r) for r in src_rows])
        lengths = torch.tensor([len(m.source_ids(r)) for r in src_rows])
        t0 = time.perf_counter()
        mem = m.encode(src)
        cross = [(self.lin(mem.reshape(-1, self.d), L["ck"]).view(mem.shape),
                  self.lin(mem.reshape(-1, self.d), L["cv"]).view(mem.shape)) for L in self.layers]
        t1 = time.perf_counter()
        B = src.shape[0]
        cache = [(torch.empty(B, steps, self.d), torch.empty(B, steps, self.d)) for _ in self.layers]
        pe = ref.positional_encoding(steps, self.d)
        scale = math.sqrt(self.d) if m.arch["embedding_scale"] else 1.0
        tokens = torch.full((B,), sp["bos"], dtype=torch.long)
        barred = torch.tensor([sp["pad"], sp["bos"], sp["eos"]])
        out = []
        for t in range(steps):
            x = m.decoder_embedding(tokens) * scale + pe[t]
            for L, (kc, vc), (ck, cv) in zip(self.layers, cache, cross):
                y = self.ln(x, L["n1"]) if self.pre else x
                q, k, v = self.lin(y, L["qkv"]).split(self.d, dim=1)
                kc[:, t] = k
                vc[:, t] = v
                a = self.lin(self.attend(q, kc[:, : t + 1], vc[:, : t + 1], None), L["so"])
                x = x + a if self.pre else self.ln(x + a, L["n1"])
                y = self.ln(x, L["n2"]) if self.pre else x
                a = self.lin(self.attend(self.lin(y, L["cq"]), ck, cv, lengths), L["co"])
                x = x + a if self.pre else self.ln(x + a, L["n2"])
                y = self.ln(x, L["n3"]) if self.pre else x
                f = self.lin(self.act(self.lin(y, L["ff1"])), L["ff2"])
                x = x + f if self.pre else self.ln(x + f, L["n3"])
            if self.pre:
                x = F.layer_norm(x, (self.d,), m.decoder_norm.weight, m.decoder_norm.bias, self.eps)
            logits = self.lin(x, self.out)
            logits[:, barred] = -float("inf")
            tokens = torch.argmax(logits, dim=1)
            out.append(tokens)
        t2 = time.perf_counter()
        return torch.stack(out, 1), t1 - t0, t2 - t1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lines", type=int, default=0, help="use only the first N lines")
    p.add_argument("--blas", action="store_true", help="linear layers through torch's BLAS")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model = ref.load(args.model).eval()
    dec = FastDecoder(model, args.blas)
    rows = ref.read_ids(args.src)
    if args.lines:
        rows = rows[: args.lines]
    enc = dec_time = 0.0
    tokens = 0
    dec.translate(rows[: args.batch_size], 2)  # warm-up
    for i in range(0, len(rows), args.batch_size):
        batch = rows[i: i + args.batch_size]
        out, e, d = dec.translate(batch, args.steps)
        enc += e
        dec_time += d
        tokens += out.numel()
    print(json.dumps({"encode_s": enc, "decode_s": dec_time, "tokens": tokens,
                      "tokens_per_s": tokens / dec_time}))


if __name__ == "__main__":
    main()
