"""PyTorch models with the tutorial seeds' module structure and parameter names,
bugs fixed (see docs/seeds.md).

The three tutorials in /work/shared/seeds are what our users' checkpoints look
like. These modules reproduce their `state_dict` names exactly, so that
`torch.save(model.state_dict())` gives a checkpoint of the same shape as a
user's, while computing DESIGN.md's semantics: key padding masks in encoder
self-attention and cross-attention, causal + target padding mask in decoder
self-attention, masked scores set to -1e9 before the softmax, the sinusoidal
positional table of tfmc.reference.tfm, an optional sqrt(d_model) embedding scale.

* PerHeadTranslationTransformer  seed 000 (one nn.Linear per head, GELU FFN)
* TutorialTransformer            seed 001 (DESIGN.md's names, post-norm, ReLU)
* SeedEncoder                    seed 002 (encoder only: token ids -> states)
* TorchTransformerTranslator     a translator around torch.nn.Transformer

Each translation model has forward(src, tgt) -> logits plus tfm's
id-level helpers (forward_ids, greedy, beam, encode_states) through
tfm.DecodingMixin, so every model decodes with the same search code.
They are used by make_fixtures.py and tests/importer.

Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy).
"""

import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from tfmc.reference import tfm as ref

NEG_MASK = ref.NEG_MASK

# torch 1.13's nn.TransformerEncoder takes a nested-tensor fast path in eval
# mode and warns that the API is a prototype; the results are the same.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")


def padding_masks(src, tgt, pad):
    """Boolean masks (True = masked) as DESIGN.md defines them:
    encoder self-attention [B,S,S] and cross-attention [B,T,S] hide source pad
    keys; decoder self-attention [B,T,T] is causal and hides target pad keys.
    tgt may be None (encoder only)."""
    S = src.shape[1]
    enc = (src == pad)[:, None, :].expand(-1, S, -1)
    if tgt is None:
        return enc, None, None
    T = tgt.shape[1]
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    self_mask = causal[None] | (tgt == pad)[:, None, :]
    cross = (src == pad)[:, None, :].expand(-1, T, -1)
    return enc, self_mask, cross


class PositionEncoding(nn.Module):
    """The seeds' positional encoding module: a registered buffer `pe`
    [max_len, d_model] (so it appears in the state_dict, as in the seeds),
    holding tfm's table; forward adds its first L rows."""

    def __init__(self, max_len, d_model):
        super().__init__()
        self.register_buffer("pe", ref.positional_encoding(max_len, d_model))

    def forward(self, x):
        return x + self.pe[: x.shape[1]]


# --------------------------------------------------------------------------- seed 000


class AttentionHead(nn.Module):
    """Seed 000's EncoderAttentionHead / DecoderAttentionHead: one head with
    its own query/key/value linears (d_model -> head_size). Fixed: the mask is
    applied (the seed discarded masked_fill's result) and comes from the
    padding/causal rules instead of being causal everywhere."""

    def __init__(self, d_model, head_size):
        super().__init__()
        self.head_size = head_size
        self.query = nn.Linear(d_model, head_size)
        self.key = nn.Linear(d_model, head_size)
        self.value = nn.Linear(d_model, head_size)

    def forward(self, x, mem, mask):
        q = self.query(x)
        k = self.key(mem)
        v = self.value(mem)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        scores = scores.masked_fill(mask, NEG_MASK)
        return torch.softmax(scores, dim=-1) @ v


class PerHeadAttention(nn.Module):
    """Seed 000's MultiHeadAttention / MaskedMultiHeadAttention: heads.{h} and
    the output projection multi_header; heads are concatenated in order."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.head_size = d_model // n_heads
        self.heads = nn.ModuleList(AttentionHead(d_model, self.head_size) for _ in range(n_heads))
        self.multi_header = nn.Linear(d_model, d_model)

    def forward(self, x, mem, mask):
        return self.multi_header(torch.cat([h(x, mem, mask) for h in self.heads], dim=-1))


def _seed_ffn(d_model, hidden, activation):
    """nn.Sequential(Linear, GELU|ReLU, Linear): parameters ffn.0.* and ffn.2.*."""
    act = nn.GELU() if activation == "gelu" else nn.ReLU()  # nn.GELU() is the exact erf form
    return nn.Sequential(nn.Linear(d_model, hidden), act, nn.Linear(hidden, d_model))


class PerHeadEncoderLayer(nn.Module):
    """Seed 000's TransformerEncoder (one layer):
    x = x + self_attn(x); x = x + ffn(ln1(x)); x = ln2(x)."""

    def __init__(self, d_model, n_heads, r_mlp, activation, eps):
        super().__init__()
        self.mha = PerHeadAttention(d_model, n_heads)
        self.ln1 = nn.LayerNorm(d_model, eps=eps)
        self.ffn = _seed_ffn(d_model, d_model * r_mlp, activation)
        self.ln2 = nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, mask):
        out = x + self.mha(x, x, mask)
        out = out + self.ffn(self.ln1(out))
        return self.ln2(out)


class PerHeadDecoderLayer(nn.Module):
    """Seed 000's TransformerDecoder (one layer):
    x = x + self_attn(x); x = x + ffn(ln1(x)); x = x + cross_attn(ln2(x)); x = ln3(x).
    Fixed: self-attention is causal (+ target padding); the cross-attention
    (edha) masks source padding only, not causally."""

    def __init__(self, d_model, n_heads, r_mlp, activation, eps):
        super().__init__()
        self.mha = PerHeadAttention(d_model, n_heads)
        self.ln1 = nn.LayerNorm(d_model, eps=eps)
        self.edha = PerHeadAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model, eps=eps)
        self.ffn = _seed_ffn(d_model, d_model * r_mlp, activation)
        self.ln3 = nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, mem, self_mask, cross_mask):
        out = x + self.mha(x, x, self_mask)
        out = out + self.ffn(self.ln1(out))
        out = out + self.edha(self.ln2(out), mem, cross_mask)
        return self.ln3(out)


class PerHeadTranslationTransformer(nn.Module, ref.DecodingMixin):
    """Seed 000's TranslationTransformer (cn -> en) with its parameter names:
    cn_embd, cn_positional_encoding.pe (buffer), transformer_encoder.{i}.*,
    en_embd, en_positional_encoding.pe (buffer), transformer_decoder.{i}.*,
    predict_word.0 (Linear; predict_word.1 is the Softmax).

    Fixed: the stacks are ModuleLists called with the masks and in the right
    argument order (the seed called nn.Sequential with two inputs, encoder
    output and target swapped); forward returns logits (probs() applies the
    seed's Softmax)."""

    def __init__(self, d_model, max_seq_length, n_heads, n_layers, cn_vocab_size, cn_padding_idx,
                 en_vocab_size, en_padding_idx, r_mlp=4, activation="gelu", layer_norm_eps=1e-5,
                 embedding_scale=False, n_decoder_layers=None, special=None):
        super().__init__()
        self.special = dict(special or ref.DEFAULT_SPECIAL)
        self.d_model = d_model
        self.max_seq_length = max_seq_length
        self.n_heads = n_heads
        self.embedding_scale = embedding_scale
        n_dec = n_layers if n_decoder_layers is None else n_decoder_layers
        layer_args = (d_model, n_heads, r_mlp, activation, layer_norm_eps)
        self.cn_embd = nn.Embedding(cn_vocab_size, d_model, padding_idx=cn_padding_idx)
        self.cn_positional_encoding = PositionEncoding(max_seq_length, d_model)
        self.transformer_encoder = nn.ModuleList(PerHeadEncoderLayer(*layer_args) for _ in range(n_layers))
        self.en_embd = nn.Embedding(en_vocab_size, d_model, padding_idx=en_padding_idx)
        self.en_positional_encoding = PositionEncoding(max_seq_length, d_model)
        self.transformer_decoder = nn.ModuleList(PerHeadDecoderLayer(*layer_args) for _ in range(n_dec))
        self.predict_word = nn.Sequential(nn.Linear(d_model, en_vocab_size), nn.Softmax(dim=-1))

    @property
    def max_len(self):
        return self.max_seq_length

    def output_layer(self):
        return self.predict_word[0]

    def _scale(self):
        return math.sqrt(self.d_model) if self.embedding_scale else 1.0

    def encode(self, src):
        enc_mask, _, _ = padding_masks(src, None, self.special["pad"])
        x = self.cn_positional_encoding(self.cn_embd(src) * self._scale())
        for layer in self.transformer_encoder:
            x = layer(x, enc_mask)
        return x

    def decode(self, tgt, mem, src):
        _, self_mask, cross_mask = padding_masks(src, tgt, self.special["pad"])
        y = self.en_positional_encoding(self.en_embd(tgt) * self._scale())
        for layer in self.transformer_decoder:
            y = layer(y, mem, self_mask, cross_mask)
        return self.predict_word[0](y)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)

    def probs(self, src, tgt):
        """What the seed's forward returned: the softmax of the logits."""
        return self.predict_word[1](self.forward(src, tgt))


# --------------------------------------------------------------------------- seed 001


class TutorialAttention(nn.Module):
    """Seed 001's MultiHeadAttention: query/key/value/output_linear, heads
    split by view. The mask keeps positions where it is True (the seed's
    convention). Fixed: masked scores are replaced by -1e9 (the seed added
    masked_fill's result to the scores, doubling the unmasked ones)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.depth = d_model // num_heads
        self.query_linear = nn.Linear(d_model, d_model)
        self.key_linear = nn.Linear(d_model, d_model)
        self.value_linear = nn.Linear(d_model, d_model)
        self.output_linear = nn.Linear(d_model, d_model)

    def split_heads(self, x):
        B, T, d = x.size()
        return x.view(B, T, self.num_heads, self.depth).transpose(1, 2)

    def forward(self, query, key, value, keep):
        q = self.split_heads(self.query_linear(query))
        k = self.split_heads(self.key_linear(key))
        v = self.split_heads(self.value_linear(value))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.depth)
        scores = scores.masked_fill(keep == 0, NEG_MASK)
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        B, _, T, _ = out.size()
        return self.output_linear(out.transpose(1, 2).contiguous().view(B, T, -1))


class TutorialFeedForward(nn.Module):
    """Seed 001's FeedForward: linear2(relu(linear1(x)))."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


class TutorialEncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, eps):
        super().__init__()
        self.self_attention = TutorialAttention(d_model, num_heads)
        self.feed_forward = TutorialFeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, mask):
        x = self.norm1(x + self.self_attention(x, x, x, mask))
        return self.norm2(x + self.feed_forward(x))


class TutorialDecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, eps):
        super().__init__()
        self.masked_self_attention = TutorialAttention(d_model, num_heads)
        self.enc_dec_attention = TutorialAttention(d_model, num_heads)
        self.feed_forward = TutorialFeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.norm3 = nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, mem, src_mask, tgt_mask):
        x = self.norm1(x + self.masked_self_attention(x, x, x, tgt_mask))
        x = self.norm2(x + self.enc_dec_attention(x, mem, mem, src_mask))
        return self.norm3(x + self.feed_forward(x))


class TutorialTransformer(nn.Module, ref.DecodingMixin):
    """Seed 001's Transformer (DESIGN.md's default names), post-norm, ReLU:
    encoder_embedding, decoder_embedding, positional_encoding.pe (buffer
    [1, max_len, d_model], as in the seed), encoder_layers.{i}.*,
    decoder_layers.{i}.*, linear. Fixed: scores are masked, not doubled; the
    target mask hides padding *keys* (the seed's hid padding query rows)."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, num_heads, num_layers, d_ff, max_len,
                 dropout=0.0, layer_norm_eps=1e-5, special=None):
        super().__init__()
        self.special = dict(special or ref.DEFAULT_SPECIAL)
        self.max_seq_len = max_len
        self.encoder_embedding = nn.Embedding(src_vocab_size, d_model)
        self.decoder_embedding = nn.Embedding(tgt_vocab_size, d_model)
        self.positional_encoding = nn.Module()
        self.positional_encoding.register_buffer("pe", ref.positional_encoding(max_len, d_model)[None])
        args = (d_model, num_heads, d_ff, layer_norm_eps)
        self.encoder_layers = nn.ModuleList(TutorialEncoderLayer(*args) for _ in range(num_layers))
        self.decoder_layers = nn.ModuleList(TutorialDecoderLayer(*args) for _ in range(num_layers))
        self.linear = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    @property
    def max_len(self):
        return self.max_seq_len

    def output_layer(self):
        return self.linear

    def generate_mask(self, src, tgt):
        """Keep-masks (True = attend): src [B,1,1,S]; tgt [B,1,T,T] causal and not pad keys."""
        pad = self.special["pad"]
        src_mask = (src != pad).unsqueeze(1).unsqueeze(2)
        T = tgt.size(1)
        nopeak = (1 - torch.triu(torch.ones(1, T, T), diagonal=1)).bool()
        tgt_mask = (tgt != pad).unsqueeze(1).unsqueeze(2) & nopeak
        return src_mask, tgt_mask

    def _embed(self, table, ids):
        return self.dropout(table(ids) + self.positional_encoding.pe[:, : ids.size(1)])

    def encode(self, src):
        src_mask = (src != self.special["pad"]).unsqueeze(1).unsqueeze(2)
        x = self._embed(self.encoder_embedding, src)
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return x

    def decode(self, tgt, mem, src):
        src_mask, tgt_mask = self.generate_mask(src, tgt)
        y = self._embed(self.decoder_embedding, tgt)
        for layer in self.decoder_layers:
            y = layer(y, mem, src_mask, tgt_mask)
        return self.linear(y)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


# --------------------------------------------------------------------------- seed 002


class TokenEmbedding(nn.Embedding):
    """Seed 002's token embedding (an nn.Embedding: parameter `weight`)."""

    def __init__(self, vocab_size, d_model, padding_idx=0):
        super().__init__(vocab_size, d_model, padding_idx=padding_idx)


class TransformerEmbedding(nn.Module):
    """Seed 002's TransformerEmbedding: tok_emb (TokenEmbedding) + pos_emb
    (positional encoding, buffer `pe`), then dropout."""

    def __init__(self, vocab_size, d_model, max_len, dropout=0.1, embedding_scale=False, pad=0):
        super().__init__()
        self.tok_emb = TokenEmbedding(vocab_size, d_model, padding_idx=pad)
        self.pos_emb = PositionEncoding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(d_model) if embedding_scale else 1.0

    def forward(self, tokens):
        return self.dropout(self.pos_emb(self.tok_emb(tokens) * self.scale))


class SeedMultiHeadAttention(nn.Module):
    """Seed 002's MultiHeadAttention (d_model, n_head, dropout): w_q, w_k, w_v
    projections (head h = columns [h*dh, (h+1)*dh)) and the output w_o."""

    def __init__(self, d_model, n_head, dropout=0.1):
        super().__init__()
        self.n_head = n_head
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask):
        B, Tq, d = q.shape
        Tk = k.shape[1]
        dh = d // self.n_head

        def split(t, T):  # [B,T,d] -> [B,H,T,dh]
            return t.view(B, T, self.n_head, dh).transpose(1, 2)

        q, k, v = split(self.w_q(q), Tq), split(self.w_k(k), Tk), split(self.w_v(v), Tk)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
        scores = scores.masked_fill(mask[:, None], NEG_MASK)
        out = self.dropout(torch.softmax(scores, dim=-1)) @ v
        return self.w_o(out.transpose(1, 2).reshape(B, Tq, d))


class LayerNorm(nn.Module):
    """Seed 002's hand-written LayerNorm: gamma, beta, biased variance."""

    def __init__(self, d_model, eps=1e-12):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta


class PositionwiseFFN(nn.Module):
    """Seed 002's PositionwiseFFN: fc2(dropout(relu(fc1(x))))."""

    def __init__(self, d_model, hidden, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(d_model, hidden)
        self.fc2 = nn.Linear(hidden, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class SeedEncoderLayer(nn.Module):
    """Seed 002's EncoderLayer, post-norm:
    x = norm1(x + self_attn(x)); x = norm2(x + ffn(x)).
    Fixed: norm1 is a LayerNorm (the seed wrote self.LayerNorm)."""

    def __init__(self, d_model, n_head, hidden, dropout=0.1, eps=1e-12):
        super().__init__()
        self.multihead = SeedMultiHeadAttention(d_model, n_head, dropout)
        self.norm1 = LayerNorm(d_model, eps)
        self.dropout1 = nn.Dropout(dropout)
        self.ffn = PositionwiseFFN(d_model, hidden, dropout)
        self.norm2 = LayerNorm(d_model, eps)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask):
        x = self.norm1(x + self.dropout1(self.multihead(x, x, x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


class SeedEncoder(nn.Module, ref.DecodingMixin):
    """Seed 002's Encoder: embedding (TransformerEmbedding) + layers.{i}.
    forward(tokens) -> states [B, L, d_model]. Fixed: the layers loop uses
    self.layers (the seed's `layers` was undefined) and the key padding mask
    is built from the tokens (the seed passed none)."""

    def __init__(self, vocab_size, d_model, max_len, n_head, hidden, n_layer, dropout=0.1,
                 layer_norm_eps=1e-12, embedding_scale=False, special=None):
        super().__init__()
        self.special = dict(special or ref.DEFAULT_SPECIAL)
        self.max_seq_len = max_len
        self.embedding = TransformerEmbedding(vocab_size, d_model, max_len, dropout,
                                              embedding_scale, self.special["pad"])
        self.layers = nn.ModuleList(SeedEncoderLayer(d_model, n_head, hidden, dropout, layer_norm_eps)
                                    for _ in range(n_layer))

    @property
    def max_len(self):
        return self.max_seq_len

    def forward(self, tokens):
        mask, _, _ = padding_masks(tokens, None, self.special["pad"])
        x = self.embedding(tokens)
        for layer in self.layers:
            x = layer(x, mask)
        return x

    def encode(self, src):
        return self.forward(src)


def seed_encoder_names():
    """The tools/tfmc-import-pytorch --names map (tfmc name -> SeedEncoder name)
    for SeedEncoder checkpoints; committed as tests/e2e/fixtures/encoder-only/names.json."""
    names = {"encoder_embedding.weight": "embedding.tok_emb.weight"}
    for tfm, seed in (("query", "w_q"), ("key", "w_k"), ("value", "w_v"), ("output", "w_o")):
        for wb in ("weight", "bias"):
            names[f"encoder_layers.{{i}}.self_attention.{tfm}_linear.{wb}"] = f"layers.{{i}}.multihead.{seed}.{wb}"
    for tfm, seed in (("linear1", "fc1"), ("linear2", "fc2")):
        for wb in ("weight", "bias"):
            names[f"encoder_layers.{{i}}.feed_forward.{tfm}.{wb}"] = f"layers.{{i}}.ffn.{seed}.{wb}"
    for k in (1, 2):
        names[f"encoder_layers.{{i}}.norm{k}.weight"] = f"layers.{{i}}.norm{k}.gamma"
        names[f"encoder_layers.{{i}}.norm{k}.bias"] = f"layers.{{i}}.norm{k}.beta"
    return names

# --------------------------------------------------------------------------- torch.nn.Transformer


class TorchTransformerTranslator(nn.Module, ref.DecodingMixin):
    """A translator around torch.nn.Transformer (batch_first, dropout 0):
    src_embedding, tgt_embedding (nn.Embedding), transformer (nn.Transformer,
    which always has the final norms encoder.norm / decoder.norm) and
    generator (nn.Linear). The positional table is a non-persistent buffer,
    so it is not in the state_dict."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=32, nhead=4, num_encoder_layers=2,
                 num_decoder_layers=2, dim_feedforward=64, activation="relu", norm_first=False,
                 layer_norm_eps=1e-5, max_len=64, embedding_scale=False, special=None):
        super().__init__()
        self.special = dict(special or ref.DEFAULT_SPECIAL)
        self.d_model = d_model
        self.max_seq_len = max_len
        self.embedding_scale = embedding_scale
        self.src_embedding = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, d_model)
        self.register_buffer("pe", ref.positional_encoding(max_len, d_model), persistent=False)
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward, dropout=0.0,
            activation=activation, layer_norm_eps=layer_norm_eps, batch_first=True,
            norm_first=norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size)

    @property
    def max_len(self):
        return self.max_seq_len

    def output_layer(self):
        return self.generator

    def _embed(self, table, ids):
        scale = math.sqrt(self.d_model) if self.embedding_scale else 1.0
        return table(ids) * scale + self.pe[: ids.shape[1]]

    def _masks(self, src, tgt):
        pad = self.special["pad"]
        T = tgt.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        return causal, src == pad, tgt == pad

    def forward(self, src, tgt):
        causal, src_pad, tgt_pad = self._masks(src, tgt)
        out = self.transformer(self._embed(self.src_embedding, src), self._embed(self.tgt_embedding, tgt),
                               tgt_mask=causal, src_key_padding_mask=src_pad,
                               tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)

    def encode(self, src):
        return self.transformer.encoder(self._embed(self.src_embedding, src),
                                        src_key_padding_mask=src == self.special["pad"])

    def decode(self, tgt, mem, src):
        causal, src_pad, tgt_pad = self._masks(src, tgt)
        out = self.transformer.decoder(self._embed(self.tgt_embedding, tgt), mem, tgt_mask=causal,
                                       tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)


# --------------------------------------------------------------------------- random weights


@torch.no_grad()
def randomize(model, seed, out_gain=1.0):
    """Non-degenerate random weights for any of these models (as
    tfm.random_init): linears ~ N(0, 1/fan_in) (the output
    projection x out_gain) with biases ~ N(0, 0.1), embeddings ~ N(0, 1),
    LayerNorm scales ~ 1 + N(0, 0.1) and shifts ~ N(0, 0.1)."""
    g = torch.Generator().manual_seed(seed)
    out = model.output_layer() if hasattr(model, "output_layer") else None

    def normal(t, std, mean=0.0):
        t.copy_(torch.randn(t.shape, generator=g) * std + mean)

    for name, p in model.named_parameters():
        owner_name, attr = name.rpartition(".")[::2]
        owner = model.get_submodule(owner_name) if owner_name else model
        if isinstance(owner, nn.Embedding):
            normal(p, 1.0)
        elif isinstance(owner, (nn.LayerNorm, LayerNorm)):
            normal(p, 0.1, 1.0 if attr in ("weight", "gamma") else 0.0)
        elif p.dim() == 2:  # nn.Linear weights and MultiheadAttention's in_proj_weight
            normal(p, (out_gain if owner is out else 1.0) / math.sqrt(p.shape[1]))
        else:
            normal(p, 0.1)
    return model
