"""tfmc-convert marian DIR -o OUT: a Hugging Face Marian (OPUS-MT) model
directory to a tfmc model directory (docs/convert.md, docs/model-format.md).

Reads config.json, model.safetensors or pytorch_model.bin (never running
code from it), vocab.json (target_vocab.json with separate vocabularies),
tokenizer_config.json when present, source.spm and target.spm. Writes
model.json, model.safetensors, vocab.txt (or source.vocab.txt and
target.vocab.txt) and copies of the two SentencePiece models. Then, unless
--no-check, runs the written model (tfmc.reference.tfm) and the original
(tfmc.reference.marian) on random id batches and fails when their logits
differ by more than 1e-4.
"""

import json
import os
import random
import struct

import numpy as np
import torch

from tfmc.convert.common import (ConfigReader, ConversionError, check_input_file, check_output_dir, copy_file, copy_fairseq_layers, fail, run_check, load_torch_checkpoint, note, state_dict_of,
                                 parse_json, read_input, read_json, table_size_problem, write_model_json,
                                 write_safetensors, write_vocab)

CHECK_TOLERANCE = 1e-4

# MarianConfig's defaults (transformers configuration_marian.py) for absent keys.
DEFAULTS = {
    "vocab_size": 58101, "max_position_embeddings": 1024,
    "encoder_layers": 12, "encoder_ffn_dim": 4096, "encoder_attention_heads": 16,
    "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "decoder_start_token_id": 58100,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
    "is_encoder_decoder": True,
}

# transformers' ACT2FN names -> tfmc's activation
ACTIVATIONS = {"swish": "silu", "silu": "silu", "relu": "relu", "gelu": "gelu"}

# Keys of BART-style configs (older OPUS-MT conversions carry them) that
# would change the computation; current transformers ignores them for
# Marian, so a value other than the default is ambiguous and refused.
MUST_BE_FALSE = {
    "normalize_before": "a LayerNorm before each sublayer",
    "normalize_embedding": "a LayerNorm after the embeddings",
    "add_final_layer_norm": "a final LayerNorm after each stack",
    "add_bias_logits": "a second output bias",
    "layernorm_embedding": "a LayerNorm after the embeddings",
    "scale_attn": "scaled attention outputs",
}

_ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "F64": ("<f8", 8), "BF16": (None, 2)}


def add_arguments(p):
    p.add_argument("model_dir", metavar="DIR",
                   help="the Marian model directory (config.json, pytorch_model.bin or model.safetensors, "
                        "vocab.json, source.spm, target.spm)")
    p.add_argument("-o", dest="output", metavar="OUT", required=True, help="output directory (created)")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32", help="weight storage (default f32)")
    p.add_argument("--max-len", type=int, metavar="N",
                   help="longest sequence tfmc runs (default: max_position_embeddings)")
    p.add_argument("--no-check", action="store_true",
                   help="skip running the written model against the original")


# --------------------------------------------------------------------------- reading


def _describe(value):
    """A JSON value as the C++ loader shows it: compact, at most 40 characters."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _indices(value):
    """A JSON list of non-negative 64-bit integers (SafeTensors.cpp readIndices), or None."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 63 for v in value):
        return None
    return value


def read_safetensors(path):
    """{name: float32 torch tensor} from a safetensors file, checked by the
    rules of tfmc's loader (docs/model-format.md, frontends/model/SafeTensors.cpp)
    with the dtypes a Marian checkpoint holds; every problem names the file
    and the tensor."""
    raw = read_input(path, "the weights", limit=None)
    if len(raw) < 8:
        fail(f"{path}: file is too short for a safetensors header ({len(raw)} bytes)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        fail(f"{path}: header length {n} exceeds the file size ({len(raw)} bytes)")
    header = parse_json(raw[8:8 + n], path, "invalid JSON header", offset=8)
    if not isinstance(header, dict):
        fail(f"{path}: header is not a JSON object, got {_describe(header)}")
    data = memoryview(raw)[8 + n:]
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            if not (isinstance(info, dict) and all(isinstance(v, str) for v in info.values())):
                fail(f"{path}: '__metadata__' must map strings to strings, got {_describe(info)}")
            continue
        if not isinstance(info, dict):
            fail(f"{path}: tensor '{name}': expected an object, got {_describe(info)}")
        for key in info:
            if key not in ("dtype", "shape", "data_offsets"):
                fail(f"{path}: tensor '{name}': unknown field '{key}'")
        for key in ("dtype", "shape", "data_offsets"):
            if key not in info:
                fail(f"{path}: tensor '{name}': missing field '{key}'")
        dtype, shape, offsets = info["dtype"], _indices(info["shape"]), _indices(info["data_offsets"])
        if not isinstance(dtype, str):
            fail(f"{path}: tensor '{name}': dtype must be a string, got {_describe(dtype)}")
        if dtype not in _ST_DTYPES:
            fail(f"{path}: tensor '{name}': unsupported dtype '{dtype}' (expected F32, F16, BF16 or F64)")
        if shape is None:
            fail(f"{path}: tensor '{name}': shape must be a list of non-negative integers, "
                 f"got {_describe(info['shape'])}")
        if offsets is None or len(offsets) != 2 or offsets[0] > offsets[1]:
            fail(f"{path}: tensor '{name}': data_offsets must be [begin, end], two integers with "
                 f"0 <= begin <= end, got {_describe(info['data_offsets'])}")
        b, e = offsets
        if e > len(data):
            fail(f"{path}: tensor '{name}': data_offsets [{b}, {e}] outside the data section ({len(data)} bytes)")
        kind, size = _ST_DTYPES[dtype]
        for dim in shape:  # Python integers: no wrap-around
            size *= dim
        if size >= 2 ** 63:
            fail(f"{path}: tensor '{name}': shape {shape} is too large")
        if e - b != size:
            fail(f"{path}: tensor '{name}': shape {shape} with dtype {dtype} needs {size} bytes, "
                 f"but data_offsets [{b}, {e}] span {e - b}")
        entries.append((b, e, name, dtype, kind, shape))
    # No two tensors may share a byte (empty spans hold none); gaps are allowed.
    furthest = None
    for entry in sorted(entries, key=lambda t: t[:3]):
        b, e, name = entry[:3]
        if b == e:
            continue
        if furthest is not None and b < furthest[1]:
            fail(f"{path}: tensors '{furthest[2]}' and '{name}' overlap: data_offsets "
                 f"[{furthest[0]}, {furthest[1]}] and [{b}, {e}]")
        if furthest is None or e > furthest[1]:
            furthest = entry
    out = {}
    for b, e, name, dtype, kind, shape in entries:
        if dtype == "BF16":
            arr = (np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(data[b:e], dtype=kind).astype(np.float32)
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


def read_weights(model_dir):
    """(path, {name: float32 tensor}); model.safetensors is preferred, as
    from_pretrained prefers it."""
    st = os.path.join(model_dir, "model.safetensors")
    bin_ = os.path.join(model_dir, "pytorch_model.bin")
    if os.path.exists(st):
        return st, read_safetensors(st)
    if os.path.exists(bin_):
        sd = state_dict_of(load_torch_checkpoint(bin_), bin_)
        out = {}
        for k, v in sd.items():
            if not v.is_floating_point():
                fail(f"{bin_}: tensor '{k}' has dtype {v.dtype}, expected floating point")
            out[k] = v.float()
        return bin_, out
    fail(f"{model_dir}: neither model.safetensors nor pytorch_model.bin found")


# --------------------------------------------------------------------------- config


class Config(ConfigReader):
    """config.json, with configuration_marian.py's defaults for absent keys."""

    def __init__(self, path, data):
        if not isinstance(data, dict):
            fail(f"{path}: expected a JSON object")
        self.path, self.data = path, data

    def get(self, key):
        return self.data.get(key, DEFAULTS.get(key))

    def bad(self, key, why):
        fail(f"{self.path}: '{key}': {why}")

    def show(self, value):
        return json.dumps(value)


def read_architecture(cfg):
    """The tfmc architecture fields a Marian config determines (shapes are
    checked against the tensors later)."""
    mt = cfg.data.get("model_type")
    if mt is not None and mt != "marian":
        cfg.bad("model_type", f"is {json.dumps(mt)}, expected \"marian\" (this converter reads Marian models)")
    if not cfg.bool("is_encoder_decoder"):
        cfg.bad("is_encoder_decoder", "false is not supported (tfmc runs encoder-decoder models)")
    for key, what in MUST_BE_FALSE.items():
        if key in cfg.data and cfg.data[key] not in (False, None):
            cfg.bad(key, f"{json.dumps(cfg.data[key])} is not supported ({what}); this converter handles "
                         f"Marian's post-norm layers only")
    act = cfg.get("activation_function")
    if act not in ACTIVATIONS:
        cfg.bad("activation_function", f"{json.dumps(act)} is not supported (tfmc has relu, gelu and "
                                       f"swish/silu; gelu_new and other approximations are not the same function)")
    d = cfg.int("d_model", 1)
    heads = cfg.int("encoder_attention_heads", 1)
    if cfg.int("decoder_attention_heads", 1) != heads:
        cfg.bad("decoder_attention_heads", f"{cfg.get('decoder_attention_heads')} differs from "
                                           f"encoder_attention_heads {heads} (tfmc has one head count)")
    if d % heads:
        cfg.bad("encoder_attention_heads", f"{heads} does not divide d_model {d}")
    ff = cfg.int("encoder_ffn_dim", 1)
    if cfg.int("decoder_ffn_dim", 1) != ff:
        cfg.bad("decoder_ffn_dim", f"{cfg.get('decoder_ffn_dim')} differs from encoder_ffn_dim {ff} "
                                   f"(tfmc has one d_ff)")
    static = cfg.data.get("static_position_embeddings", True)
    if not isinstance(static, bool):
        cfg.bad("static_position_embeddings", f"expected true or false, got {json.dumps(static)}")
    # The model's position table (transformers allocates all of it, and so
    # does the check's reference) must fit.
    n_pos = cfg.int("max_position_embeddings", 1)
    problem = table_size_problem(n_pos, d)
    if problem:
        cfg.bad("max_position_embeddings", problem)
    return {
        "d_model": d, "num_heads": heads,
        "num_encoder_layers": cfg.int("encoder_layers", 1), "num_decoder_layers": cfg.int("decoder_layers", 1),
        "d_ff": ff, "max_len": n_pos,
        "activation": ACTIVATIONS[act], "norm": "post", "layer_norm_eps": 1e-5,
        "embedding_scale": cfg.bool("scale_embedding"), "positional_encoding": "table",
    }, static


# --------------------------------------------------------------------------- vocabularies


def read_vocab(path):
    """vocab.json {token: id} -> tokens in id order (ids 0..N-1, no gaps, no repeats)."""
    data = read_json(path, "the vocabulary")
    if not isinstance(data, dict) or not data:
        fail(f"{path}: expected a non-empty JSON object mapping tokens to ids")
    by_id = {}
    for tok, i in data.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            fail(f"{path}: token {json.dumps(tok, ensure_ascii=False)}: id {json.dumps(i)} is not a "
                 f"non-negative integer")
        if i in by_id:
            fail(f"{path}: tokens {json.dumps(by_id[i], ensure_ascii=False)} and "
                 f"{json.dumps(tok, ensure_ascii=False)} both have id {i}")
        by_id[i] = tok
    n = len(by_id)
    if max(by_id) != n - 1:
        missing = next(i for i in range(n) if i not in by_id)
        fail(f"{path}: id {missing} is missing (ids must run from 0 to {n - 1} without gaps; "
             f"the largest is {max(by_id)})")
    return [by_id[i] for i in range(n)]


def token_id(tokens, path, token, role):
    try:
        return tokens.index(token)
    except ValueError:
        fail(f"{path}: no {role} token {json.dumps(token)}")


# --------------------------------------------------------------------------- tensors


class Weights:
    """The checkpoint's tensors by HF name; tracks which ones are used."""

    def __init__(self, path, tensors):
        self.path = path
        if not any(k.startswith("model.") for k in tensors):  # a bare MarianModel
            tensors = {(k if k in ("lm_head.weight", "final_logits_bias") else "model." + k): v
                       for k, v in tensors.items()}
        self.t = tensors
        self.used = set()

    def has(self, name):
        return name in self.t

    def get(self, name, shape=None):
        if name not in self.t:
            fail(f"{self.path}: missing tensor '{name}'")
        self.used.add(name)
        t = self.t[name]
        if shape is not None and list(t.shape) != list(shape):
            fail(f"{self.path}: tensor '{name}': expected shape {list(shape)}, got {list(t.shape)}")
        if not torch.isfinite(t).all():
            fail(f"{self.path}: tensor '{name}' holds NaN or infinite values")
        return t

    def same(self, names):
        """The one value of tensors that must be equal (tied); the first present."""
        present = [n for n in names if n in self.t]
        if not present:
            fail(f"{self.path}: missing tensor '{names[0]}'")
        first = self.get(present[0])
        for n in present[1:]:
            t = self.get(n)
            if t.shape != first.shape or not torch.equal(t, first):
                fail(f"{self.path}: tensors '{present[0]}' and '{n}' should be the same (tied) "
                     f"embedding but differ")
        return first, present[0]

    def check_all_used(self):
        extra = sorted(set(self.t) - self.used)
        if extra:
            more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
            fail(f"{self.path}: unexpected tensor '{extra[0]}'{more}: this converter does not know "
                 f"what it computes")


def sinusoid_table(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding's table (float64, cast to float32)."""
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    j = np.arange(dim)
    angle = pos / np.power(10000.0, 2 * (j // 2) / dim)[None, :]
    half = (dim + 1) // 2
    out = np.empty((n_pos, dim), dtype=np.float64)
    out[:, :half] = np.sin(angle[:, 0::2])
    out[:, half:] = np.cos(angle[:, 1::2])
    return torch.from_numpy(out.astype(np.float32))


def build_tensors(w, arch, cfg, static, max_len, src_rows, tgt_rows):
    """tfmc tensor name -> float32 tensor, in tfmc's canonical order."""
    d, ff = arch["d_model"], arch["d_ff"]
    out = {}
    share = cfg.bool("share_encoder_decoder_embeddings")
    if share:
        emb, emb_name = w.same(["model.shared.weight", "model.encoder.embed_tokens.weight",
                                "model.decoder.embed_tokens.weight"])
        enc_emb, dec_emb = emb, emb
        enc_name = dec_name = emb_name
    else:
        enc_name, dec_name = "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"
        enc_emb, dec_emb = w.get(enc_name), w.get(dec_name)
    for name, t in ((enc_name, enc_emb), (dec_name, dec_emb)):
        if t.dim() != 2 or t.shape[1] != d:
            fail(f"{w.path}: tensor '{name}': expected shape [vocabulary, {d}] (d_model {d}), "
                 f"got {list(t.shape)}")
    if src_rows is not None and enc_emb.shape[0] != src_rows[0]:
        fail(f"{src_rows[1]}: {src_rows[0]} tokens but {enc_name} has {enc_emb.shape[0]} rows")
    if tgt_rows is not None and dec_emb.shape[0] != tgt_rows[0]:
        fail(f"{tgt_rows[1]}: {tgt_rows[0]} tokens but {dec_name} has {dec_emb.shape[0]} rows")
    for key, rows in (("vocab_size", enc_emb.shape[0]),
                      ("decoder_vocab_size", dec_emb.shape[0])):
        v = cfg.data.get(key)
        if v is not None and v != rows:
            cfg.bad(key, f"{v}, but '{enc_name if key == 'vocab_size' else dec_name}' has {rows} rows")
    V = dec_emb.shape[0]
    out["encoder_embedding.weight"] = enc_emb
    out["decoder_embedding.weight"] = dec_emb

    copy_fairseq_layers(out, w.get, "model.", arch["num_encoder_layers"], arch["num_decoder_layers"], d, ff)

    if cfg.bool("tie_word_embeddings"):
        out_w = dec_emb
        if w.has("lm_head.weight"):
            lm = w.get("lm_head.weight")
            if lm.shape != dec_emb.shape or not torch.equal(lm, dec_emb):
                fail(f"{w.path}: tensor 'lm_head.weight' differs from '{dec_name}', but config.json's "
                     f"tie_word_embeddings (default true) ties them; set it to false to use lm_head.weight")
    else:
        out_w = w.get("lm_head.weight", [V, d])
    out["linear.weight"] = out_w
    if w.has("final_logits_bias"):
        b = w.get("final_logits_bias")
        if list(b.shape) not in ([1, V], [V]):
            fail(f"{w.path}: tensor 'final_logits_bias': expected shape [1, {V}], got {list(b.shape)}")
        out["linear.bias"] = b.reshape(V)
    else:
        note(f"{w.path} has no final_logits_bias: the output bias is zero (as transformers initialises it)")
        out["linear.bias"] = torch.zeros(V)

    n_pos = arch["max_len"]
    computed = None  # the sinusoid's first max_len rows: all a missing table needs
    for stack in ("encoder", "decoder"):
        name = f"model.{stack}.embed_positions.weight"
        if w.has(name):
            t = w.get(name, [n_pos, d])
            if static:
                diff = float((t - sinusoid_table(n_pos, d)).abs().max())
                if diff > 1e-5:
                    note(f"{w.path}: '{name}' differs from Marian's sinusoid by up to {diff:.3g}; "
                         f"using the stored table, as transformers does")
        elif not static:
            fail(f"{w.path}: missing tensor '{name}' (config.json: static_position_embeddings is false, "
                 f"so the positions are learned and must be in the weights)")
        else:
            computed = sinusoid_table(max_len, d) if computed is None else computed
            t = computed
        out[f"{stack}_positions.weight"] = t[:max_len]
    w.check_all_used()
    return out


# --------------------------------------------------------------------------- the check


def check(out_dir, model_dir, f16):
    """Logits of the written model (tfm reference) vs the original (marian
    reference) on random id batches. Returns the largest difference relative
    to max(1, |logit|)."""
    from tfmc.reference import marian as ref_marian
    from tfmc.reference import tfm as ref_tfm
    written = ref_tfm.load(out_dir)
    config = ref_marian.read_config(model_dir)
    weights = ref_marian.read_weights(model_dir)
    if f16:  # the original as the file holds it: every tensor rounded to f16
        d = config.get("d_model", ref_marian.CONFIG_DEFAULTS["d_model"])
        n = config.get("max_position_embeddings", ref_marian.CONFIG_DEFAULTS["max_position_embeddings"])
        table = ref_marian.sinusoid_table(n, d)
        weights = _marian_names(weights)
        for stack in ("encoder", "decoder"):
            weights.setdefault(f"model.{stack}.embed_positions.weight", table)
        weights = {k: v.half().float() for k, v in weights.items()}
    original = ref_marian.MarianReference(config, weights)
    return max_difference(written, original)


def _marian_names(weights):
    if any(k.startswith("model.") for k in weights):
        return dict(weights)
    return {(k if k in ("lm_head.weight", "final_logits_bias") else "model." + k): v for k, v in weights.items()}


def check_batches(model, rng):
    """Two batches of three rows: sources of ordinary ids (no pad, no eos),
    targets from decoder_start. Ids avoid pad, which decoding never produces."""
    s = model.special
    V = model.tgt_vocab_size
    avoid = {s["pad"], s["eos"]}
    ids = [i for i in range(min(V, model.src_vocab_size)) if i not in avoid] or [s["unk"]]
    # Sources fit max_len with their eos (at max_len 1, eos alone).
    longest = min(12, model.max_len - 1)
    batches = []
    for _ in range(2):
        srcs = [[rng.choice(ids) for _ in range(rng.randint(min(1, longest), longest))]
                for _ in range(3)]
        tgts = [[s.get("decoder_start", s.get("bos"))] +
                [rng.choice(ids) for _ in range(rng.randint(0, min(9, model.max_len - 1)))] for _ in range(3)]
        batches.append((srcs, tgts))
    return batches


def max_difference(written, original):
    """Largest |written - original| / max(1, |original|) over the valid
    positions of check_batches."""
    worst = 0.0
    for srcs, tgts in check_batches(written, random.Random(0)):
        a = written.forward_ids(srcs, tgts)
        b = original.forward_ids(srcs, tgts)
        for r, t in enumerate(tgts):
            x, y = a[r, :len(t)].astype(np.float64), b[r, :len(t)].astype(np.float64)
            scale = max(1.0, float(np.abs(y).max()))
            worst = max(worst, float(np.abs(x - y).max()) / scale)
    return worst


# --------------------------------------------------------------------------- run


def run(args):
    src = args.model_dir
    if not os.path.isdir(src):
        fail(f"{src}: not a directory (expected a Marian model directory)")
    check_output_dir(args.output, own=src)
    cfg = Config(os.path.join(src, "config.json"),
                 read_json(os.path.join(src, "config.json"), "the model configuration"))
    arch, static = read_architecture(cfg)
    n_pos = arch["max_len"]
    max_len = n_pos
    if args.max_len is not None:
        if not 1 <= args.max_len <= n_pos:
            fail(f"--max-len {args.max_len}: must be between 1 and max_position_embeddings ({n_pos})")
        max_len = args.max_len
    tok_cfg_path = os.path.join(src, "tokenizer_config.json")
    tok_cfg = read_json(tok_cfg_path, "the tokenizer configuration") if os.path.exists(tok_cfg_path) else {}
    if not isinstance(tok_cfg, dict):
        fail(f"{tok_cfg_path}: expected a JSON object")
    special_text = {}
    for key, default in (("eos_token", "</s>"), ("unk_token", "<unk>"), ("pad_token", "<pad>")):
        v = tok_cfg.get(key, default)
        if isinstance(v, dict):  # AddedToken serialised as {"content": ...}
            v = v.get("content")
        if not isinstance(v, str) or not v:
            fail(f"{tok_cfg_path}: '{key}': expected a token string, got {json.dumps(v)}")
        special_text[key] = v
    separate = tok_cfg.get("separate_vocabs", False)
    if not isinstance(separate, bool):
        fail(f"{tok_cfg_path}: 'separate_vocabs': expected true or false, got {json.dumps(separate)}")

    src_vocab_path = os.path.join(src, "vocab.json")
    tgt_vocab_path = os.path.join(src, "target_vocab.json") if separate else src_vocab_path
    src_tokens = read_vocab(src_vocab_path)
    tgt_tokens = read_vocab(tgt_vocab_path) if separate else src_tokens

    ids = {}
    for path, tokens, side in ((src_vocab_path, src_tokens, "source"), (tgt_vocab_path, tgt_tokens, "target")):
        ids[side] = {role: token_id(tokens, path, special_text[f"{role}_token"], role)
                     for role in ("eos", "unk", "pad")}
    if ids["source"] != ids["target"]:
        fail(f"{tgt_vocab_path}: special tokens {ids['target']} have other ids than in {src_vocab_path} "
             f"{ids['source']}; tfmc needs one set of special ids for both sides")
    special = ids["source"]
    for role in ("eos", "pad"):
        v = cfg.int(f"{role}_token_id")
        if v != special[role]:
            text = json.dumps(special_text[role + "_token"])
            cfg.bad(f"{role}_token_id", f"{v}, but {src_vocab_path} has {text} "
                                        f"at {special[role]}")
    start = cfg.int("decoder_start_token_id")
    if start >= len(tgt_tokens):
        cfg.bad("decoder_start_token_id", f"{start} is outside the target vocabulary ({len(tgt_tokens)} tokens)")
    never = {special["pad"]}
    bad_words = cfg.data.get("bad_words_ids")
    if bad_words is not None:
        if not (isinstance(bad_words, list) and all(isinstance(s, list) and s and
                                                    all(isinstance(i, int) and not isinstance(i, bool) and
                                                        0 <= i < len(tgt_tokens) for i in s) for s in bad_words)):
            cfg.bad("bad_words_ids", f"expected a list of lists of target ids, got {json.dumps(bad_words)}")
        for seq in bad_words:
            if len(seq) == 1 and seq[0] != special["eos"]:
                never.add(seq[0])
            else:
                note(f"{cfg.path}: bad_words_ids entry {seq} is not applied (tfmc bans single tokens, never eos)")

    spms = {}
    for name in ("source.spm", "target.spm"):
        path = os.path.join(src, name)
        check_input_file(path, f"the {name.split('.')[0]} SentencePiece model")
        try:
            import sentencepiece
            sentencepiece.SentencePieceProcessor(model_file=path)
        except ImportError:
            pass
        except Exception as e:
            fail(f"{path}: not a SentencePiece model ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
        spms[name] = path

    weights_path, tensors = read_weights(src)
    w = Weights(weights_path, tensors)
    tfm = build_tensors(w, arch, cfg, static, max_len,
                        (len(src_tokens), src_vocab_path), (len(tgt_tokens), tgt_vocab_path))
    arch["max_len"] = max_len

    out = args.output
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"{out}: cannot create the output directory: {e.strerror}")
    if separate:
        src_vocab, tgt_vocab = "source.vocab.txt", "target.vocab.txt"
        write_vocab(os.path.join(out, src_vocab), src_tokens, source=src_vocab_path)
        write_vocab(os.path.join(out, tgt_vocab), tgt_tokens, source=tgt_vocab_path)
    else:
        src_vocab = tgt_vocab = "vocab.txt"
        write_vocab(os.path.join(out, src_vocab), src_tokens, source=src_vocab_path)
    for name, path in spms.items():
        copy_file(path, os.path.join(out, name))
    write_safetensors(os.path.join(out, "model.safetensors"), tfm, dtype="F16" if args.dtype == "f16" else "F32")
    desc = {
        "format": "tfm-model", "version": 1,
        "architecture": arch,
        "source": {"vocab": src_vocab, "tokenizer": "sentencepiece", "model": "source.spm", "piece_ids": "vocab"},
        "target": {"vocab": tgt_vocab, "tokenizer": "sentencepiece", "model": "target.spm", "piece_ids": "vocab"},
        "special_tokens": {"pad": special["pad"], "eos": special["eos"], "unk": special["unk"],
                           "decoder_start": start, "never_generate": sorted(never)},
        "weights": "model.safetensors",
    }
    write_model_json(os.path.join(out, "model.json"), desc)
    print(f"wrote {out}: Marian, d_model {arch['d_model']}, {arch['num_encoder_layers']}+"
          f"{arch['num_decoder_layers']} layers, {arch['num_heads']} heads, d_ff {arch['d_ff']}, "
          f"{arch['activation']}, vocabulary {len(src_tokens)}"
          + ("" if not separate else f"/{len(tgt_tokens)}") + f", max_len {max_len}, weights {args.dtype}")
    if args.no_check:
        return 0
    f16 = args.dtype == "f16"
    return run_check(out, src, "tfmc.reference.marian", f16, lambda: check(out, src, f16), CHECK_TOLERANCE)
