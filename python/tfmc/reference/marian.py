"""Hugging Face Marian (OPUS-MT) models, computed as transformers does it.

An independent float32 PyTorch implementation of what `MarianMTModel` and
`MarianTokenizer` (transformers 4.x, models/marian/modeling_marian.py and
tokenization_marian.py) compute, reading the ORIGINAL files of a model
directory: config.json, pytorch_model.bin or model.safetensors (Hugging Face
tensor names), vocab.json (and target_vocab.json when the vocabularies are
separate), source.spm, target.spm. It shares no code with the converter
(tfmc.convert.marian); tfmc.convert.marian's self-check and tests/convert
compare a converted model run by tfmc.reference.tfm against this.

What it relies on (docs/convert.md lists the source functions):

* embeddings: `embed_tokens(ids) * embed_scale` (sqrt(d_model) when
  `scale_embedding`), plus row p of the position table for position p
  (0-based, for the source and the target alike). The table is the one in
  the weights when they hold `model.{encoder,decoder}.embed_positions.weight`
  (from_pretrained loads it), else MarianSinusoidalPositionalEmbedding's:
  angle(p, j) = p / 10000^(2*(j//2)/d) in float64, sin of the even-j angles
  in the first ceil(d/2) features, cos of the odd-j angles in the rest,
  cast to float32;
* post-norm layers, LayerNorm eps 1e-5: encoder
  `x = LN(x + SelfAttn(x)); x = LN(x + FFN(x))`, decoder with the
  cross-attention between; no final LayerNorm, no embedding LayerNorm;
* attention: q = q_proj(x) * head_dim^-0.5, softmax(q k^T + mask) v per head,
  out_proj; masks are additive float32-min: source padding (id == pad) in
  the encoder and in cross-attention; the decoder self-attention is causal
  only (generate() passes no decoder attention mask; Marian's decoder
  starts with the pad id, which must not be masked);
* FFN: fc2(act(fc1(x))), act = ACT2FN[activation_function]
  (swish/silu = x*sigmoid(x), relu, gelu = exact erf form);
* logits: lm_head(x) + final_logits_bias; lm_head is tied to the decoder's
  input embeddings unless `tie_word_embeddings` is false.
* tokenization (MarianTokenizer): a leading `>>xx<<` language code (regex
  `>>.+<<`, which also removes later matches) is one token; the rest goes through source.spm's `encode(text,
  out_type=str)`; each piece is looked up BY ITS TEXT in vocab.json (a
  piece that is not there is `<unk>`); `</s>` is appended. Detokenization:
  ids -> tokens via vocab.json (target_vocab.json when separate), special
  tokens dropped (`skip_special_tokens=True`) or kept as their text,
  target.spm's `decode_pieces` on each run of ordinary tokens, stripped.
* decoding: DESIGN.md's greedy and beam search (tfmc.reference.tfm's
  search functions) from `decoder_start_token_id`, never generating pad
  (the converted config's `bad_words_ids`), eos = `eos_token_id`.

Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy,
sentencepiece).
"""

import json
import math
import os
import re

import numpy as np
import torch
import torch.nn.functional as F

from tfmc.reference import tfm as _tfm

LAYER_NORM_EPS = 1e-5  # nn.LayerNorm's default, which MarianEncoderLayer uses

# MarianConfig's defaults (configuration_marian.py), used for absent keys.
CONFIG_DEFAULTS = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024,
    "encoder_layers": 12, "encoder_ffn_dim": 4096, "encoder_attention_heads": 16,
    "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "decoder_start_token_id": 58100,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
}

ACTIVATIONS = {
    "swish": F.silu, "silu": F.silu, "relu": F.relu,
    "gelu": lambda x: F.gelu(x),  # exact erf form (transformers' GELUActivation)
}

_LANGUAGE_CODE = re.compile(r">>.+<<")  # MarianTokenizer.language_code_re (greedy)


def config_value(config, key):
    return config.get(key, CONFIG_DEFAULTS.get(key))


def sinusoid_table(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding's table: float64 angles, sines of
    the even-j angles first, cosines of the odd-j angles after, float32."""
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    j = np.arange(dim)
    angle = pos / np.power(10000.0, 2 * (j // 2) / dim)[None, :]
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    table = np.empty((n_pos, dim), dtype=np.float32)
    table[:, :half] = np.sin(angle[:, 0::2])
    table[:, half:] = np.cos(angle[:, 1::2])
    return torch.from_numpy(table)


# --------------------------------------------------------------------------- weights


def read_weights(model_dir):
    """{HF name: float32 tensor} from model.safetensors or pytorch_model.bin
    (safetensors first, as from_pretrained prefers it)."""
    st = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(st):
        return {k: torch.from_numpy(np.array(v)) for k, v in _tfm.read_safetensors(st).items()}
    obj = torch.load(os.path.join(model_dir, "pytorch_model.bin"), map_location="cpu",
                     weights_only=True)
    # A state_dict saved inside a dict ({"state_dict": ...} or {"model": ...}),
    # which tfmc-convert also reads.
    if isinstance(obj, dict) and not all(isinstance(v, torch.Tensor) for v in obj.values()):
        for key in ("state_dict", "model"):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    return {k: v.float() for k, v in obj.items()}


def _strip_prefix(weights):
    """A bare MarianModel's names lack the `model.` of MarianMTModel."""
    if any(k.startswith("model.") for k in weights):
        return dict(weights)
    return {("model." + k if k not in ("lm_head.weight", "final_logits_bias") else k): v
            for k, v in weights.items()}


def _one_of(weights, names):
    present = [weights[n] for n in names if n in weights]
    if not present:
        raise KeyError(f"none of {names} in the weights")
    return present[0]


# --------------------------------------------------------------------------- model


class MarianReference(_tfm.DecodingMixin):
    """MarianMTModel's forward pass on float32 tensors with HF names.

    special: pad, eos, unk, decoder_start, never_generate (what DESIGN.md's
    searches need); max_len: max_position_embeddings."""

    def __init__(self, config, weights, unk_id=None):
        self.config = dict(config)
        c = lambda k: config_value(self.config, k)
        w = _strip_prefix(weights)
        self.d = c("d_model")
        self.heads = c("encoder_attention_heads")
        self.dec_heads = c("decoder_attention_heads")
        self.act = ACTIVATIONS[c("activation_function")]
        self.scale = math.sqrt(self.d) if c("scale_embedding") else 1.0
        self.n_pos = c("max_position_embeddings")
        shared = ["model.shared.weight"]
        if c("share_encoder_decoder_embeddings"):
            enc_names = shared + ["model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"]
            dec_names = enc_names
        else:
            enc_names = ["model.encoder.embed_tokens.weight"]
            dec_names = ["model.decoder.embed_tokens.weight"]
        self.enc_emb = _one_of(w, enc_names)
        self.dec_emb = _one_of(w, dec_names)
        if c("tie_word_embeddings"):
            self.out_w = self.dec_emb
        else:
            self.out_w = w["lm_head.weight"]
        V = self.out_w.shape[0]
        self.out_b = w.get("final_logits_bias", torch.zeros(1, V)).reshape(V)
        self.enc_pos = w.get("model.encoder.embed_positions.weight")
        self.dec_pos = w.get("model.decoder.embed_positions.weight")
        if self.enc_pos is None or self.dec_pos is None:
            table = sinusoid_table(self.n_pos, self.d)
            self.enc_pos = table if self.enc_pos is None else self.enc_pos
            self.dec_pos = table if self.dec_pos is None else self.dec_pos
        self.w = w
        self.enc_layers = c("encoder_layers")
        self.dec_layers = c("decoder_layers")
        pad = c("pad_token_id")
        self.special = {"pad": pad, "eos": c("eos_token_id"), "unk": unk_id,
                        "decoder_start": c("decoder_start_token_id"), "never_generate": [pad]}

    @property
    def max_len(self):
        return self.n_pos

    # -- pieces

    def _linear(self, x, name):
        return F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def _norm(self, x, name):
        return F.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"],
                            LAYER_NORM_EPS)

    def _attention(self, x, kv, name, heads, mask):
        """mask: additive float [B, 1 or Tq, Tk]."""
        B, Tq, d = x.shape
        Tk = kv.shape[1]
        dh = d // heads
        q = self._linear(x, name + ".q_proj") * dh ** -0.5
        k = self._linear(kv, name + ".k_proj")
        v = self._linear(kv, name + ".v_proj")
        q = q.view(B, Tq, heads, dh).transpose(1, 2)
        k = k.view(B, Tk, heads, dh).transpose(1, 2)
        v = v.view(B, Tk, heads, dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) + mask[:, None]
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self._linear(out.transpose(1, 2).reshape(B, Tq, d), name + ".out_proj")

    def _ffn(self, x, name):
        return self._linear(self.act(self._linear(x, name + ".fc1")), name + ".fc2")

    @staticmethod
    def _padding_mask(src, pad):
        neg = torch.finfo(torch.float32).min
        return torch.zeros(src.shape, dtype=torch.float32).masked_fill(src == pad, neg)[:, None, :]

    # -- DecodingMixin interface

    def encode(self, src):
        """src [B, S]: ids + eos, right-padded with pad."""
        S = src.shape[1]
        x = self.enc_emb[src] * self.scale + self.enc_pos[:S][None]
        mask = self._padding_mask(src, self.special["pad"])
        for i in range(self.enc_layers):
            p = f"model.encoder.layers.{i}"
            x = self._norm(x + self._attention(x, x, p + ".self_attn", self.heads, mask),
                           p + ".self_attn_layer_norm")
            x = self._norm(x + self._ffn(x, p), p + ".final_layer_norm")
        return x

    def decode(self, tgt, mem, src):
        """tgt [B, T] (starts with decoder_start) -> logits [B, T, V]."""
        T = tgt.shape[1]
        x = self.dec_emb[tgt] * self.scale + self.dec_pos[:T][None]
        neg = torch.finfo(torch.float32).min
        causal = torch.triu(torch.full((T, T), neg), diagonal=1)[None]
        cross = self._padding_mask(src, self.special["pad"])
        for i in range(self.dec_layers):
            p = f"model.decoder.layers.{i}"
            x = self._norm(x + self._attention(x, x, p + ".self_attn", self.dec_heads, causal),
                           p + ".self_attn_layer_norm")
            x = self._norm(x + self._attention(x, mem, p + ".encoder_attn", self.dec_heads, cross),
                           p + ".encoder_attn_layer_norm")
            x = self._norm(x + self._ffn(x, p), p + ".final_layer_norm")
        return F.linear(x, self.out_w) + self.out_b

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


# --------------------------------------------------------------------------- tokenizer


class MarianTokenizerReference:
    """MarianTokenizer (transformers 4.x): vocab.json ids for source.spm's
    pieces, target.spm's decode_pieces for the output; target_vocab.json for
    the output ids when tokenizer_config.json says separate_vocabs."""

    def __init__(self, model_dir):
        import sentencepiece as spm
        self.dir = model_dir
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.encoder = json.load(f)
        tok_config = os.path.join(model_dir, "tokenizer_config.json")
        separate = False
        if os.path.exists(tok_config):
            with open(tok_config, encoding="utf-8") as f:
                separate = json.load(f).get("separate_vocabs", False) is True
        if separate:
            with open(os.path.join(model_dir, "target_vocab.json"), encoding="utf-8") as f:
                self.target_encoder = json.load(f)
        else:
            self.target_encoder = self.encoder
        self.decoder = {i: t for t, i in self.target_encoder.items()}
        self.src_spm = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.tgt_spm = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))
        self.unk_id = self.encoder["<unk>"]
        self.eos_id = self.encoder["</s>"]
        self.pad_id = self.encoder["<pad>"]
        self.special_tokens = {"</s>", "<unk>", "<pad>"}

    def pieces(self, text):
        """The tokens of one source line (a leading >>xx<< code, then pieces)."""
        m = _LANGUAGE_CODE.match(text)
        code = [m.group(0)] if m else []
        text = _LANGUAGE_CODE.sub("", text)  # remove_language_code removes every match
        return code + self.src_spm.encode(text, out_type=str)

    def encode(self, text):
        """Source ids WITHOUT the final </s> (DecodingMixin.source_ids adds it)."""
        return [self.encoder.get(p, self.unk_id) for p in self.pieces(text)]

    def decode(self, ids, skip_special_tokens=True):
        """MarianTokenizer.decode: ids -> tokens -> target.spm decode_pieces."""
        tokens = [self.decoder.get(i, "<unk>") for i in ids]
        out, run = "", []
        for tok in tokens:
            if tok in self.special_tokens:
                if skip_special_tokens:
                    continue
                out += self.tgt_spm.decode_pieces(run) + tok + " "
                run = []
            else:
                run.append(tok)
        out += self.tgt_spm.decode_pieces(run)
        return out.strip()


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def load(model_dir):
    """(model, tokenizer) for a Marian model directory."""
    config = read_config(model_dir)
    tok = MarianTokenizerReference(model_dir)
    model = MarianReference(config, read_weights(model_dir), unk_id=tok.unk_id)
    return model, tok


def translate(model, tok, text, beam_size=1, **options):
    """Text -> (text, ids) with DESIGN.md's greedy (beam_size 1) or the best
    beam hypothesis; `options` go to the search (max_length, ...)."""
    ids = tok.encode(text)
    if beam_size == 1:
        out = model.greedy(ids, **options)
    else:
        out = model.beam(ids, beam_size, **options)[0][0]
    return tok.decode(out), out
