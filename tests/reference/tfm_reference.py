"""Independent PyTorch reference ("oracle") for tfmc.

Implements the semantics of DESIGN.md ("Model description file" and
"Semantics") as plainly as possible: float32 everywhere, no KV cache, greedy
and beam search by full recomputation, one source row at a time.

Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy).
"""

import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SPECIAL_NAMES = ["<pad>", "<s>", "</s>", "<unk>"]
DEFAULT_SPECIAL = {"pad": 0, "bos": 1, "eos": 2, "unk": 3}
NEG_MASK = -1e9  # value written into masked attention scores

ARCH_FIELDS = {
    "d_model": int, "num_heads": int, "num_encoder_layers": int,
    "num_decoder_layers": int, "d_ff": int, "max_len": int,
    "activation": str, "norm": str, "layer_norm_eps": float,
    "embedding_scale": bool, "positional_encoding": str,
}


def positional_encoding(length, d_model):
    """pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(...), in float64, cast to float32."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, two_i / d_model)
    pe = np.zeros((length, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return torch.from_numpy(pe.astype(np.float32))


# --------------------------------------------------------------------------- model


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query_linear = nn.Linear(d_model, d_model)
        self.key_linear = nn.Linear(d_model, d_model)
        self.value_linear = nn.Linear(d_model, d_model)
        self.output_linear = nn.Linear(d_model, d_model)
        # Dropout on the attention probabilities while training (set by
        # examples/zh-en/train.py); no effect in eval mode or at 0.
        self.attention_dropout = 0.0

    def forward(self, x, mem, mask):
        """x [B,Tq,d], mem [B,Tk,d], mask [B,Tq,Tk] bool (True = masked)."""
        B, Tq, d = x.shape
        Tk = mem.shape[1]
        H = self.num_heads
        dh = d // H

        def heads(t, T):  # [B,T,d] -> [B,H,T,dh]; head h = columns [h*dh, (h+1)*dh)
            return t.view(B, T, H, dh).transpose(1, 2)

        q = heads(self.query_linear(x), Tq)
        k = heads(self.key_linear(mem), Tk)
        v = heads(self.value_linear(mem), Tk)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(mask[:, None, :, :], NEG_MASK)
        probs = torch.softmax(scores, dim=-1)
        if self.training and self.attention_dropout > 0:
            probs = F.dropout(probs, self.attention_dropout)
        out = torch.matmul(probs, v)
        return self.output_linear(out.transpose(1, 2).reshape(B, Tq, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, activation):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.activation = activation

    def forward(self, x):
        h = self.linear1(x)
        h = torch.relu(h) if self.activation == "relu" else F.gelu(h)  # exact erf gelu
        return self.linear2(h)


class EncoderLayer(nn.Module):
    def __init__(self, a):
        super().__init__()
        d, eps = a["d_model"], a["layer_norm_eps"]
        self.pre = a["norm"] == "pre"
        self.self_attention = MultiHeadAttention(d, a["num_heads"])
        self.feed_forward = FeedForward(d, a["d_ff"], a["activation"])
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.norm2 = nn.LayerNorm(d, eps=eps)

    def forward(self, x, mask):
        if self.pre:
            h = self.norm1(x)
            x = x + self.self_attention(h, h, mask)
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, x, mask))
        return self.norm2(x + self.feed_forward(x))


class DecoderLayer(nn.Module):
    def __init__(self, a):
        super().__init__()
        d, eps = a["d_model"], a["layer_norm_eps"]
        self.pre = a["norm"] == "pre"
        self.masked_self_attention = MultiHeadAttention(d, a["num_heads"])
        self.enc_dec_attention = MultiHeadAttention(d, a["num_heads"])
        self.feed_forward = FeedForward(d, a["d_ff"], a["activation"])
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.norm3 = nn.LayerNorm(d, eps=eps)

    def forward(self, x, mem, self_mask, cross_mask):
        if self.pre:
            h = self.norm1(x)
            x = x + self.masked_self_attention(h, h, self_mask)
            x = x + self.enc_dec_attention(self.norm2(x), mem, cross_mask)
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.masked_self_attention(x, x, self_mask))
        x = self.norm2(x + self.enc_dec_attention(x, mem, cross_mask))
        return self.norm3(x + self.feed_forward(x))


class TranslationTransformer(nn.Module):
    def __init__(self, arch, src_vocab_size, tgt_vocab_size, special=None):
        super().__init__()
        self.arch = dict(arch)
        self.special = dict(special or DEFAULT_SPECIAL)
        a = self.arch
        d = a["d_model"]
        if d % a["num_heads"] != 0 or d % 2 != 0:
            raise ValueError("num_heads must divide d_model and d_model must be even")
        if a["norm"] not in ("post", "pre") or a["activation"] not in ("relu", "gelu"):
            raise ValueError("bad norm/activation")
        self.encoder_embedding = nn.Embedding(src_vocab_size, d)
        self.decoder_embedding = nn.Embedding(tgt_vocab_size, d)
        self.encoder_layers = nn.ModuleList(EncoderLayer(a) for _ in range(a["num_encoder_layers"]))
        self.decoder_layers = nn.ModuleList(DecoderLayer(a) for _ in range(a["num_decoder_layers"]))
        if a["norm"] == "pre":
            self.encoder_norm = nn.LayerNorm(d, eps=a["layer_norm_eps"])
            self.decoder_norm = nn.LayerNorm(d, eps=a["layer_norm_eps"])
        self.linear = nn.Linear(d, tgt_vocab_size)

    @property
    def src_vocab_size(self):
        return self.encoder_embedding.num_embeddings

    @property
    def tgt_vocab_size(self):
        return self.linear.out_features

    def _embed(self, table, ids):
        d = self.arch["d_model"]
        scale = math.sqrt(d) if self.arch["embedding_scale"] else 1.0
        return table(ids) * scale + positional_encoding(ids.shape[1], d)[None]

    def encode(self, src):
        """src: LongTensor [B,S] (eos appended, right-padded)."""
        pad = self.special["pad"]
        S = src.shape[1]
        mask = (src == pad)[:, None, :].expand(-1, S, -1)
        x = self._embed(self.encoder_embedding, src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x) if self.arch["norm"] == "pre" else x

    def decode(self, tgt, mem, src):
        """tgt [B,T] (starts with bos, right-padded) -> logits [B,T,V]."""
        pad = self.special["pad"]
        T = tgt.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        self_mask = causal[None] | (tgt == pad)[:, None, :]
        cross_mask = (src == pad)[:, None, :].expand(-1, T, -1)
        x = self._embed(self.decoder_embedding, tgt)
        for layer in self.decoder_layers:
            x = layer(x, mem, self_mask, cross_mask)
        if self.arch["norm"] == "pre":
            x = self.decoder_norm(x)
        return self.linear(x)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)

    # ------------------------------------------------------------ id-level helpers

    def source_ids(self, ids):
        """Token ids (no eos) -> source sequence: ids + eos, truncated to max_len."""
        ids = list(ids)
        max_len = self.arch["max_len"]
        if len(ids) + 1 > max_len:
            ids = ids[: max_len - 1]
        return ids + [self.special["eos"]]

    def pad_batch(self, rows):
        width = max(len(r) for r in rows)
        pad = self.special["pad"]
        return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)

    @torch.no_grad()
    def forward_ids(self, src_lines, tgt_lines):
        """Teacher forcing. src_lines: id lists without eos; tgt_lines: id lists starting with bos.
        Returns numpy float32 [B, T, V], T = longest target."""
        src = self.pad_batch([self.source_ids(s) for s in src_lines])
        tgt = self.pad_batch(tgt_lines)
        return self.forward(src, tgt).numpy().astype(np.float32)

    @torch.no_grad()
    def next_logits(self, src_ids, prefixes):
        """Logits of the last position for each prefix (all equal length), one source row."""
        src = torch.tensor([self.source_ids(src_ids)], dtype=torch.long)
        mem = self.encode(src)
        n = len(prefixes)
        tgt = torch.tensor(prefixes, dtype=torch.long)
        logits = self.decode(tgt, mem.expand(n, -1, -1), src.expand(n, -1))
        return logits[:, -1, :].numpy().astype(np.float32)

    def _disallowed(self, generated, min_length):
        s = self.special
        bad = [s["pad"], s["bos"]]
        if generated < min_length:
            bad.append(s["eos"])
        return bad

    def greedy(self, src_ids, min_length=0, max_length=20, margins=None):
        """Greedy decoding of one source line. Returns generated ids (no bos/eos).
        If `margins` is a list, appends best-minus-second-best allowed logit per step."""
        s = self.special
        out = []
        for _ in range(max_length):
            logits = self.next_logits(src_ids, [[s["bos"]] + out])[0].astype(np.float64)
            logits[self._disallowed(len(out), min_length)] = -np.inf
            tok = int(np.argmax(logits))  # first maximum = lowest id on ties
            if margins is not None:
                margins.append(logits[tok] - np.max(np.delete(logits, tok)))
            if tok == s["eos"]:
                break
            out.append(tok)
        return out

    def beam(self, src_ids, beam_size, alpha=1.0, min_length=0, max_length=20, n_best=None,
             margins=None):
        """Beam search of one source line as in DESIGN.md.
        Returns [(ids, normalised_score)] best first (at most n_best, default beam_size).
        If `margins` is a list, appends score gaps at every decision boundary."""
        s, K = self.special, beam_size
        active = [([], 0.0)]             # (generated ids, summed log-prob)
        finished = []                    # (norm score, finish order, ids)
        for step in range(max_length):
            L = step + 1                 # generated tokens incl. this step's token
            logits = torch.from_numpy(self.next_logits(src_ids, [[s["bos"]] + h for h, _ in active]))
            logp = torch.log_softmax(logits, dim=-1).numpy().astype(np.float64)
            logp[:, self._disallowed(step, min_length)] = -np.inf
            cands = [(sc + logp[h, v], h, v) for h, (_, sc) in enumerate(active)
                     for v in range(logp.shape[1])]
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            top = cands[: 2 * K]
            nxt, last_taken = [], None
            for rank, (score, h, v) in enumerate(top):
                if v == s["eos"]:
                    if rank < K:
                        finished.append((score / L ** alpha, len(finished), active[h][0]))
                elif len(nxt) < K:
                    nxt.append((active[h][0] + [v], score))
                    last_taken = rank
            if margins is not None:
                cuts = {K - 1, 2 * K - 1} | ({last_taken} if last_taken is not None else set())
                for r in cuts:
                    if r + 1 < len(cands) and np.isfinite(cands[r][0]):
                        margins.append(cands[r][0] - cands[r + 1][0])
            if len(finished) >= K:
                break
            active = nxt
        else:  # reached max_length with fewer than K finished
            for ids, score in active:
                finished.append((score / max(max_length, 1) ** alpha, len(finished), ids))
        finished.sort(key=lambda f: (-f[0], f[1]))
        n = n_best or K
        if margins is not None:
            for i in range(min(n, len(finished) - 1)):
                margins.append(finished[i][0] - finished[i + 1][0])
        return [(ids, float(sc)) for sc, _, ids in finished[:n]]


# --------------------------------------------------------------------------- init


@torch.no_grad()
def random_init(model, seed, eos_bias=0.0, qk_gain=1.0, out_gain=1.0):
    """Non-degenerate random weights: linears ~ N(0, 1/fan_in) with small non-zero biases,
    embeddings ~ N(0, 1), LayerNorm weights ~ 1 + noise."""
    g = torch.Generator().manual_seed(seed)

    def normal(t, std, mean=0.0):
        t.copy_(torch.randn(t.shape, generator=g) * std + mean)

    for name, p in model.named_parameters():
        if "embedding" in name:
            normal(p, 1.0)
        elif "norm" in name:
            normal(p, 0.1, 1.0 if name.endswith("weight") else 0.0)
        elif name.endswith("weight"):
            gain = qk_gain if ("query" in name or "key" in name) else out_gain if name == "linear.weight" else 1.0
            normal(p, gain / math.sqrt(p.shape[1]))
        else:
            normal(p, 0.1)
    model.linear.bias[model.special["eos"]] += eos_bias
    return model


# --------------------------------------------------------------------------- safetensors

_DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (None, 2), "F64": (np.float64, 8)}


def write_safetensors(path, tensors, dtype="F32"):
    """tensors: ordered dict name -> float32 numpy array, stored as `dtype` (F32 or F16)."""
    np_dtype = {"F32": "<f4", "F16": "<f2"}[dtype]
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype=np_dtype).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)  # align the data section to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """-> dict name -> float32 numpy array (F16/BF16/F64 converted)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode())
    data = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        if not (0 <= b <= e <= len(data)):
            raise ValueError(f"{name}: data_offsets outside the file")
        kind, size = _DTYPES[info["dtype"]]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if e - b != count * size:
            raise ValueError(f"{name}: byte size does not match shape")
        if info["dtype"] == "BF16":
            u16 = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
            arr = u16.view(np.float32)
        else:
            arr = np.frombuffer(data[b:e], dtype=np.dtype(kind).newbyteorder("<")).astype(np.float32)
        out[name] = arr.reshape(info["shape"])
    return out


# --------------------------------------------------------------------------- export / load


def vocab_tokens(size, prefix):
    return SPECIAL_NAMES + [f"{prefix}{i}" for i in range(len(SPECIAL_NAMES), size)]


def export(model, out_dir, src_vocab_size=None, tgt_vocab_size=None, arch=None):
    """Write model.json, src.vocab, tgt.vocab and model.safetensors into out_dir."""
    arch = dict(arch or model.arch)
    src_vocab_size = src_vocab_size or model.src_vocab_size
    tgt_vocab_size = tgt_vocab_size or model.tgt_vocab_size
    os.makedirs(out_dir, exist_ok=True)
    desc = {
        "format": "tfm-model", "version": 1,
        "architecture": {k: arch[k] for k in ARCH_FIELDS},
        "source": {"vocab": "src.vocab", "tokenizer": "char"},
        "target": {"vocab": "tgt.vocab", "tokenizer": "word"},
        "special_tokens": dict(model.special),
        "weights": "model.safetensors",
    }
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
        f.write("\n")
    for fname, size, prefix in (("src.vocab", src_vocab_size, "s"), ("tgt.vocab", tgt_vocab_size, "t")):
        with open(os.path.join(out_dir, fname), "w") as f:
            f.write("\n".join(vocab_tokens(size, prefix)) + "\n")
    tensors = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)


def load(path):
    """Load a model from a model directory or a model.json path."""
    json_path = path if path.endswith(".json") else os.path.join(path, "model.json")
    base = os.path.dirname(os.path.abspath(json_path))
    with open(json_path) as f:
        desc = json.load(f)
    if desc.get("format") != "tfm-model" or desc.get("version") != 1:
        raise ValueError("not a tfm-model version 1 description")
    arch = desc["architecture"]
    for k, typ in ARCH_FIELDS.items():
        if k not in arch:
            raise ValueError(f"architecture.{k} missing")
        arch[k] = typ(arch[k])
    if arch["positional_encoding"] != "sinusoidal":
        raise ValueError("only sinusoidal positional encoding is supported")
    weights = read_safetensors(os.path.join(base, desc["weights"]))
    src_v = weights["encoder_embedding.weight"].shape[0]
    tgt_v = weights["decoder_embedding.weight"].shape[0]
    model = TranslationTransformer(arch, src_v, tgt_v, desc.get("special_tokens"))
    expected = model.state_dict()
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if missing or extra:
        raise ValueError(f"tensor mismatch: missing {missing}, extra {extra}")
    for k, v in weights.items():
        if tuple(v.shape) != tuple(expected[k].shape):
            raise ValueError(f"{k}: shape {v.shape}, expected {tuple(expected[k].shape)}")
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    return model.eval()


# --------------------------------------------------------------------------- id files


def read_ids(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f.read().splitlines()]


def write_ids(path, lines):
    with open(path, "w") as f:
        for line in lines:
            f.write(" ".join(map(str, line)) + "\n")


def format_nbest(i, ids, score):
    return f"{i} ||| {' '.join(map(str, ids))} ||| {score:.6f}"
