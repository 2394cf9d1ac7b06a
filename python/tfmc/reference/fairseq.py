"""fairseq `transformer` translation models, computed as fairseq does it.

An independent float32 PyTorch implementation of what fairseq's
TransformerModel (fairseq/models/transformer/transformer_{encoder,decoder}.py,
fairseq/modules/transformer_layer.py, multihead_attention.py,
sinusoidal_positional_embedding.py, learned_positional_embedding.py,
fairseq/utils.py make_positions) and its Dictionary
(fairseq/data/dictionary.py) compute, reading the ORIGINAL files: a
checkpoint (`args` Namespace or `cfg` dict, and `model`, fairseq's tensor
names), dict.SRC.txt / dict.TGT.txt and, optionally, the SentencePiece
models used with `--bpe sentencepiece`. It shares no code with the converter
(tfmc.convert.fairseq), which checks its output against this.

What it relies on (docs/convert.md lists the source functions):

* embeddings: `embed_scale * embed_tokens(ids)` (embed_scale = sqrt(d)
  unless `no_scale_embedding`) + the positional embedding of
  make_positions(ids): non-pad tokens are numbered padding_idx+1,
  padding_idx+2, ... and pad tokens get padding_idx. Sinusoidal: fairseq's
  get_embedding (float32: half = d//2, freq_i = exp(-i * ln(10000)/(half-1)),
  row p = [sin(p*freq), cos(p*freq)], row padding_idx zero); learned: the
  table's row. The encoder then zeroes padded positions;
* layers: post-norm (`x = LN(residual + f(x))`) or, with
  `{encoder,decoder}_normalize_before`, pre-norm (`x = residual + f(LN(x))`)
  plus the stack's final `layer_norm` (the decoder's unless
  `no_decoder_final_norm`); LayerNorm eps 1e-5;
* attention: q = q_proj(x) * head_dim^-0.5, keys masked with -inf where the
  source is pad (encoder, cross-attention), decoder self-attention causal
  plus target padding;
* FFN fc2(act(fc1(x))), act relu / gelu (exact erf) / swish (x*sigmoid(x));
* logits: output_projection (no bias), tied to the decoder's embed_tokens
  with `share_decoder_input_output_embed` / `share_all_embeddings`;
* Dictionary: `<s> <pad> </s> <unk>` = 0..3, then dict.txt's lines `token
  count [#fairseq:overwrite]`; encode_line splits on whitespace, unknown
  words -> unk, appends eos; string() joins symbols with spaces (eos
  dropped, unk as `<unk>`); `--bpe sentencepiece`: text -> " ".join(pieces)
  before, `replace(" ", "").replace("\u2581", " ").strip()` after;
* decoding: DESIGN.md's greedy and beam search from eos (fairseq's
  sequence_generator starts every hypothesis with eos), never generating
  pad (sequence_generator sets lprobs[:, pad] = -inf; bos is not banned).

Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy,
sentencepiece).
"""

import math
import re

import torch
import torch.nn.functional as F

from tfmc.reference import tfm as _tfm

LAYER_NORM_EPS = 1e-5
SPECIAL_SYMBOLS = ["<s>", "<pad>", "</s>", "<unk>"]  # Dictionary() adds these first
BOS, PAD, EOS, UNK = 0, 1, 2, 3

# base_architecture's defaults (transformer_legacy.py) for keys a checkpoint may lack.
ARCH_DEFAULTS = {
    "encoder_normalize_before": False, "decoder_normalize_before": False,
    "encoder_learned_pos": False, "decoder_learned_pos": False,
    "activation_fn": "relu", "share_decoder_input_output_embed": False,
    "share_all_embeddings": False, "no_token_positional_embeddings": False,
    "no_scale_embedding": False, "layernorm_embedding": False,
    "no_decoder_final_norm": False, "max_source_positions": 1024,
    "max_target_positions": 1024, "cross_self_attention": False,
    "adaptive_softmax_cutoff": None, "encoder_attention_heads": 8,
    "decoder_attention_heads": 8,
}

# TransformerConfig's nested fields (cfg.model.encoder.embed_dim) -> flat names.
_NESTED = ("embed_dim", "ffn_embed_dim", "layers", "attention_heads", "normalize_before",
           "learned_pos", "layerdrop", "output_dim", "input_dim", "embed_path", "layers_to_keep")

ACTIVATIONS = {"relu": F.relu, "gelu": lambda x: F.gelu(x), "swish": F.silu}

_SPACE = re.compile(r"\s+")


def _as_dict(obj):
    if obj is None:
        return None
    if isinstance(obj, dict):
        return dict(obj)
    return dict(vars(obj))  # an argparse.Namespace (or the converters' stand-in)


def flat_config(ckpt):
    """The model options of a checkpoint as one flat dict: `cfg['model']`
    (newer) or `args` (older), nested TransformerConfig groups flattened
    (`encoder.embed_dim` -> `encoder_embed_dim`)."""
    cfg = _as_dict(ckpt.get("cfg"))
    model = _as_dict(cfg.get("model")) if cfg else None
    if model is None:
        model = _as_dict(ckpt.get("args"))
    flat = {}
    for k, v in model.items():
        if k in ("encoder", "decoder") and isinstance(v, dict):
            for sub, val in v.items():
                if sub in _NESTED:
                    flat.setdefault(f"{k}_{sub}", val)
        else:
            flat[k] = v
    return flat


def option(cfg, key):
    v = cfg.get(key)
    return ARCH_DEFAULTS.get(key) if v is None else v


def sinusoidal_table(num, dim, padding_idx):
    """SinusoidalPositionalEmbedding.get_embedding, op for op in float32."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -step)
    angle = torch.arange(num, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).view(num, -1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(num, 1)], dim=1)
    if padding_idx is not None:
        table[padding_idx, :] = 0
    return table


def make_positions(ids, padding_idx):
    """fairseq.utils.make_positions: pad -> padding_idx, others counted from padding_idx+1."""
    mask = ids.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


def upgrade_state_dict(sd, enc_layers, dec_layers):
    """fairseq's upgrade_state_dict_named renames: layer_norms.K and packed
    in_proj_* attention weights."""
    sd = dict(sd)
    maps = [("encoder", enc_layers, {"0": "self_attn_layer_norm", "1": "final_layer_norm"}),
            ("decoder", dec_layers, {"0": "self_attn_layer_norm", "1": "encoder_attn_layer_norm",
                                     "2": "final_layer_norm"})]
    for stack, n, m in maps:
        for i in range(n):
            for old, new in m.items():
                for t in ("weight", "bias"):
                    k = f"{stack}.layers.{i}.layer_norms.{old}.{t}"
                    if k in sd:
                        sd[f"{stack}.layers.{i}.{new}.{t}"] = sd.pop(k)
    for k in [k for k in sd if k.endswith(".in_proj_weight") or k.endswith(".in_proj_bias")]:
        base, kind = k.rsplit(".", 1)
        t = "weight" if kind == "in_proj_weight" else "bias"
        q, kk, v = sd.pop(k).chunk(3, dim=0)
        sd[f"{base}.q_proj.{t}"], sd[f"{base}.k_proj.{t}"], sd[f"{base}.v_proj.{t}"] = q, kk, v
    return sd


def _layer_count(sd, stack):
    idx = {int(k.split(".")[2]) for k in sd if k.startswith(f"{stack}.layers.")}
    return max(idx) + 1 if idx else 0


class FairseqReference(_tfm.DecodingMixin):
    """TransformerModel's forward pass on float32 tensors with fairseq names."""

    def __init__(self, cfg, state_dict, pad=PAD, eos=EOS, unk=UNK, bos=BOS):
        self.cfg = dict(cfg)
        sd = {k: v.float() for k, v in state_dict.items() if torch.is_floating_point(v)}
        self.enc_layers = _layer_count(sd, "encoder")
        self.dec_layers = _layer_count(sd, "decoder")
        sd = upgrade_state_dict(sd, self.enc_layers, self.dec_layers)
        versions = {s: float(state_dict.get(f"{s}.version", torch.tensor([1.0]))[0])
                    for s in ("encoder", "decoder")}
        self.w = sd
        self.pad, self.eos = pad, eos
        self.enc_emb = sd["encoder.embed_tokens.weight"]
        self.dec_emb = sd["decoder.embed_tokens.weight"]
        self.d = self.enc_emb.shape[1]
        o = lambda k: option(self.cfg, k)
        self.enc_heads = o("encoder_attention_heads")
        self.dec_heads = o("decoder_attention_heads")
        self.act = ACTIVATIONS[o("activation_fn")]
        self.scale = 1.0 if o("no_scale_embedding") else math.sqrt(self.d)
        self.enc_pre = bool(o("encoder_normalize_before"))
        self.dec_pre = bool(o("decoder_normalize_before"))
        self.enc_final = self.enc_pre and versions["encoder"] >= 2
        self.dec_final = self.dec_pre and not o("no_decoder_final_norm") and versions["decoder"] > 2
        if "decoder.output_projection.weight" in sd:
            self.out_w = sd["decoder.output_projection.weight"]
        elif o("share_decoder_input_output_embed") or o("share_all_embeddings"):
            self.out_w = self.dec_emb
        else:
            self.out_w = sd["decoder.embed_out"]
        self.max_source_positions = o("max_source_positions")
        self.max_target_positions = o("max_target_positions")
        self.positions = {}
        for stack, learned in (("encoder", o("encoder_learned_pos")), ("decoder", o("decoder_learned_pos"))):
            if o("no_token_positional_embeddings"):
                self.positions[stack] = None
            elif learned:
                self.positions[stack] = sd[f"{stack}.embed_positions.weight"]
            else:
                self.positions[stack] = "sinusoidal"
        self.special = {"pad": pad, "eos": eos, "unk": unk, "bos": bos,
                        "decoder_start": eos, "never_generate": [pad]}

    @property
    def max_len(self):
        return min(self.max_source_positions, self.max_target_positions)

    # -- pieces

    def _linear(self, x, name, bias=True):
        return F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"] if bias else None)

    def _norm(self, x, name):
        return F.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"],
                            LAYER_NORM_EPS)

    def _position_embedding(self, stack, ids):
        kind = self.positions[stack]
        if kind is None:
            return 0.0
        pos = make_positions(ids, self.pad)
        if isinstance(kind, str):
            table = sinusoidal_table(max(int(pos.max()) + 1, self.pad + 1), self.d, self.pad)
        else:
            table = kind
        return table[pos]

    def _attention(self, x, kv, name, heads, key_pad=None, causal=False):
        B, Tq, d = x.shape
        Tk = kv.shape[1]
        dh = d // heads
        q = self._linear(x, name + ".q_proj") * dh ** -0.5
        k = self._linear(kv, name + ".k_proj")
        v = self._linear(kv, name + ".v_proj")
        q = q.view(B, Tq, heads, dh).transpose(1, 2)
        k = k.view(B, Tk, heads, dh).transpose(1, 2)
        v = v.view(B, Tk, heads, dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3))
        if causal:
            future = torch.triu(torch.full((Tq, Tk), float("-inf")), 1)
            scores = scores + future
        if key_pad is not None:
            scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self._linear(out.transpose(1, 2).reshape(B, Tq, d), name + ".out_proj")

    def _ffn(self, x, name):
        return self._linear(self.act(self._linear(x, name + ".fc1")), name + ".fc2")

    def _sublayer(self, x, f, norm, pre):
        if pre:
            return x + f(self._norm(x, norm))
        return self._norm(x + f(x), norm)

    # -- DecodingMixin interface

    def encode(self, src):
        pad_mask = src.eq(self.pad)
        x = self.scale * self.enc_emb[src] + self._position_embedding("encoder", src)
        x = x * (1 - pad_mask.unsqueeze(-1).type_as(x))
        for i in range(self.enc_layers):
            p = f"encoder.layers.{i}"
            x = self._sublayer(x, lambda e: self._attention(e, e, p + ".self_attn", self.enc_heads, pad_mask),
                               p + ".self_attn_layer_norm", self.enc_pre)
            x = self._sublayer(x, lambda e: self._ffn(e, p), p + ".final_layer_norm", self.enc_pre)
        if self.enc_final:
            x = self._norm(x, "encoder.layer_norm")
        return x

    def decode(self, tgt, mem, src):
        x = self.scale * self.dec_emb[tgt] + self._position_embedding("decoder", tgt)
        tgt_pad = tgt.eq(self.pad) if tgt.eq(self.pad).any() else None
        src_pad = src.eq(self.pad)
        for i in range(self.dec_layers):
            p = f"decoder.layers.{i}"
            x = self._sublayer(x, lambda e: self._attention(e, e, p + ".self_attn", self.dec_heads,
                                                            tgt_pad, causal=True),
                               p + ".self_attn_layer_norm", self.dec_pre)
            x = self._sublayer(x, lambda e: self._attention(e, mem, p + ".encoder_attn", self.dec_heads,
                                                            src_pad),
                               p + ".encoder_attn_layer_norm", self.dec_pre)
            x = self._sublayer(x, lambda e: self._ffn(e, p), p + ".final_layer_norm", self.dec_pre)
        if self.dec_final:
            x = self._norm(x, "decoder.layer_norm")
        return F.linear(x, self.out_w)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


# --------------------------------------------------------------------------- dictionary / text


class Dictionary:
    """fairseq.data.Dictionary as loaded from a dict.txt."""

    def __init__(self, symbols):
        self.symbols = list(symbols)
        self.indices = {}
        for i, s in enumerate(self.symbols):
            self.indices[s] = i  # a later #fairseq:overwrite entry wins the lookup

    @classmethod
    def load(cls, path):
        symbols = list(SPECIAL_SYMBOLS)
        seen = set(symbols)
        with open(path, encoding="utf-8") as f:
            for line in f.readlines():
                word, field = line.rstrip().rsplit(" ", 1)
                overwrite = field == "#fairseq:overwrite"
                if overwrite:
                    word, field = word.rsplit(" ", 1)
                int(field)
                if word in seen and not overwrite:
                    raise RuntimeError(f"Duplicate word found when loading Dictionary: '{word}'")
                seen.add(word)
                symbols.append(word)
        return cls(symbols)

    def __len__(self):
        return len(self.symbols)

    def encode_line(self, line):
        """Ids of the whitespace-separated words, unknown -> unk, WITHOUT the
        eos encode_line appends (DecodingMixin.source_ids adds it)."""
        words = _SPACE.sub(" ", line).strip().split()
        return [self.indices.get(w, UNK) for w in words]

    def string(self, ids):
        return " ".join(self.symbols[i] if i != UNK else "<unk>" for i in ids if i != EOS)


class FairseqTextReference:
    """Text <-> ids as fairseq-interactive does with `--bpe sentencepiece`
    (or with no bpe: whitespace-separated tokens)."""

    def __init__(self, src_dict, tgt_dict, src_spm=None, tgt_spm=None):
        import sentencepiece as spm
        self.src_dict, self.tgt_dict = src_dict, tgt_dict
        self.src_spm = spm.SentencePieceProcessor(model_file=src_spm) if src_spm else None
        self.tgt_spm = spm.SentencePieceProcessor(model_file=tgt_spm) if tgt_spm else None

    def encode(self, text):
        if self.src_spm is not None:
            text = " ".join(self.src_spm.encode(text, out_type=str))
        return self.src_dict.encode_line(text)

    def decode(self, ids):
        s = self.tgt_dict.string(ids)
        if self.tgt_spm is not None:
            s = s.replace(" ", "").replace("\u2581", " ").strip()
        return s


def load(ckpt_path, src_dict_path, tgt_dict_path, src_spm=None, tgt_spm=None):
    """(model, text) for a fairseq checkpoint and its dictionaries."""
    from tfmc.convert.common import load_torch_checkpoint
    ckpt = load_torch_checkpoint(ckpt_path, allow={("argparse", "Namespace")})
    model = FairseqReference(flat_config(ckpt), ckpt["model"])
    text = FairseqTextReference(Dictionary.load(src_dict_path), Dictionary.load(tgt_dict_path),
                                src_spm, tgt_spm)
    return model, text


def translate(model, text_ref, text, beam_size=1, **options):
    ids = text_ref.encode(text)
    if beam_size == 1:
        out = model.greedy(ids, **options)
    else:
        out = model.beam(ids, beam_size, **options)[0][0]
    return text_ref.decode(out), out
