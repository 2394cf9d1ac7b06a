"""tfmc-convert fairseq CKPT.pt --src-dict D --tgt-dict D -o OUT: a fairseq
`transformer` translation checkpoint to a tfmc model directory
(docs/convert.md, docs/model-format.md).

Reads the checkpoint's `cfg['model']` (newer fairseq) or `args` (older) and
`model` tensors without running code from the file (an argparse.Namespace is
rebuilt as a plain attribute holder), the two dictionaries (dict.SRC.txt,
dict.TGT.txt) and, with --src-spm / --tgt-spm, the SentencePiece models of
`--bpe sentencepiece`. Writes model.json, model.safetensors, src.vocab,
tgt.vocab (and src.spm, tgt.spm). Then, unless --no-check, runs the written
model (tfmc.reference.tfm) and the original (tfmc.reference.fairseq) on
random id batches and fails when their logits differ by more than 1e-4.
"""

import math
import os

import torch

from tfmc.convert.common import (ConfigReader, ConversionError, check_input_file, check_output_dir, copy_file, copy_fairseq_layers, fail, run_check, load_torch_checkpoint, note, write_model_json,
                                 read_input, table_size_problem, write_safetensors, write_vocab)
from tfmc.convert.marian import max_difference

CHECK_TOLERANCE = 1e-4
RESERVED = ["<s>", "<pad>", "</s>", "<unk>"]  # fairseq Dictionary's first four symbols
BOS, PAD, EOS, UNK = 0, 1, 2, 3

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu"}

# base_architecture's defaults (fairseq transformer_legacy.py) for keys an
# older checkpoint does not have: every feature flag added later is off.
DEFAULTS = {
    "encoder_normalize_before": False, "decoder_normalize_before": False,
    "encoder_learned_pos": False, "decoder_learned_pos": False, "activation_fn": "relu",
    "share_decoder_input_output_embed": False, "share_all_embeddings": False,
    "no_token_positional_embeddings": False, "no_scale_embedding": False,
    "layernorm_embedding": False, "no_decoder_final_norm": False,
    "max_source_positions": 1024, "max_target_positions": 1024,
}

# Options that change the computation in ways tfmc cannot express: key -> what it does.
REFUSED = {
    "layernorm_embedding": "a LayerNorm after the embeddings",
    "adaptive_softmax_cutoff": "an adaptive softmax output layer",
    "adaptive_input": "adaptive input embeddings",
    "cross_self_attention": "cross+self attention in one block",
    "no_cross_attention": "a decoder without cross-attention",
    "scale_attn": "NormFormer's attention LayerNorm",
    "scale_fc": "NormFormer's FFN LayerNorm",
    "scale_heads": "NormFormer's per-head scaling",
    "scale_resids": "NormFormer's residual scaling",
    "encoder_layers_to_keep": "pruned encoder layers",
    "decoder_layers_to_keep": "pruned decoder layers",
    "base_layers": "BASE layers",
    "decoder_recurrent_stacking": "recurrently stacked decoder layers",
}

_NESTED = ("embed_dim", "ffn_embed_dim", "layers", "attention_heads", "normalize_before", "learned_pos",
           "output_dim", "input_dim", "layers_to_keep")

NON_WEIGHTS = ("encoder.version", "decoder.version", "encoder.embed_positions._float_tensor",
               "decoder.embed_positions._float_tensor", "encoder.embed_positions.weights",
               "decoder.embed_positions.weights")


def add_arguments(p):
    p.add_argument("checkpoint", metavar="CKPT.pt", help="a fairseq checkpoint (checkpoint_best.pt)")
    p.add_argument("--src-dict", required=True, metavar="FILE", help="the source dictionary (dict.SRC.txt)")
    p.add_argument("--tgt-dict", required=True, metavar="FILE", help="the target dictionary (dict.TGT.txt)")
    p.add_argument("--src-spm", metavar="FILE", help="the source SentencePiece model (--bpe sentencepiece)")
    p.add_argument("--tgt-spm", metavar="FILE", help="the target SentencePiece model")
    p.add_argument("--src-tokenizer", choices=["word", "char"],
                   help="how tfmc splits source text when there is no --src-spm (required then)")
    p.add_argument("--tgt-tokenizer", choices=["word", "char"],
                   help="how tfmc joins target tokens when there is no --tgt-spm (required then)")
    p.add_argument("-o", dest="output", metavar="OUT", required=True, help="output directory (created)")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32", help="weight storage (default f32)")
    p.add_argument("--max-len", type=int, metavar="N",
                   help="longest sequence tfmc runs (default min(max_source_positions, max_target_positions))")
    p.add_argument("--no-check", action="store_true", help="skip running the written model against the original")


# --------------------------------------------------------------------------- configuration


class Options(ConfigReader):
    """The model options, flattened, with the path each came from for errors
    (`args.encoder_embed_dim`, `cfg.model.encoder.embed_dim`)."""

    def __init__(self, path, ckpt):
        self.path = path
        self.values, self.where = {}, {}
        cfg = ckpt.get("cfg")
        model, prefix = None, None
        if cfg is not None:
            if not isinstance(cfg, dict):
                fail(f"{path}: 'cfg' is a {type(cfg).__name__}, expected a dict")
            model = cfg.get("model")
            prefix = "cfg.model"
        if model is None:
            model, prefix = ckpt.get("args"), "args"
        if model is None:
            fail(f"{path}: neither cfg['model'] nor args holds the model options (is this a fairseq checkpoint?)")
        items = model.items() if isinstance(model, dict) else vars(model).items()
        for k, v in items:
            if k in ("encoder", "decoder") and isinstance(v, dict):
                for sub, val in v.items():
                    if sub in _NESTED and f"{k}_{sub}" not in self.values:
                        self.values[f"{k}_{sub}"] = val
                        self.where[f"{k}_{sub}"] = f"{prefix}.{k}.{sub}"
            else:
                self.values[k] = v
                self.where[k] = f"{prefix}.{k}"
        self.prefix = prefix

    def name(self, key):
        return self.where.get(key, f"{self.prefix}.{key}")

    def bad(self, key, why):
        fail(f"{self.path}: {self.name(key)}: {why}")

    def get(self, key):
        v = self.values.get(key)
        return DEFAULTS.get(key) if v is None else v

    def set(self, key):
        """Whether an option is on (None, False, 0, '' and [] are off). A
        flag (a key whose default is False) given as a string is an error:
        fairseq takes any non-empty string as on, "False" included, and the
        reading intended is anybody's guess."""
        v = self.values.get(key)
        if isinstance(DEFAULTS.get(key), bool) and isinstance(v, str):
            self.bad(key, f"expected True or False, got {v!r} (fairseq reads any non-empty string as on)")
        return v not in (None, False, 0, "", [])

    TRUE_FALSE = "True or False"

    def missing(self, key, minimum):
        fail(f"{self.path}: missing option {self.name(key)}")

    def int(self, key, minimum=1, default=None):
        return super().int(key, minimum, default)


def read_options(opts):
    arch = opts.values.get("_name") if opts.prefix == "cfg.model" else None
    arch = arch or opts.values.get("arch")
    if arch is not None:
        if not isinstance(arch, str) or not (arch == "transformer" or arch.startswith("transformer_")) or \
                arch.startswith(("transformer_lm", "transformer_align", "transformer_from_pretrained")):
            opts.bad("_name" if "_name" in opts.values else "arch",
                     f"{arch!r} is not a fairseq transformer translation model (this converter reads the "
                     f"'transformer' architecture family)")
    for key, what in REFUSED.items():
        if opts.set(key):
            opts.bad(key, f"{opts.values[key]!r} is not supported ({what})")
    act = opts.get("activation_fn")
    if act not in ACTIVATIONS:
        opts.bad("activation_fn", f"{act!r} is not supported (tfmc has relu, gelu (exact erf form) and "
                                  f"swish; gelu_accurate/gelu_fast are the tanh approximation)")
    heads = opts.int("encoder_attention_heads")
    if opts.int("decoder_attention_heads") != heads:
        opts.bad("decoder_attention_heads",
                 f"{opts.get('decoder_attention_heads')} differs from {opts.name('encoder_attention_heads')} "
                 f"{heads} (tfmc has one head count)")
    return act, heads


# --------------------------------------------------------------------------- dictionaries


def read_dictionary(path):
    """fairseq Dictionary symbols: the 4 reserved ones, then dict.txt's tokens."""
    raw = read_input(path, "a fairseq dictionary")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text (byte {e.start})")
    symbols = list(RESERVED)
    first = {s: f"reserved entry {i}" for i, s in enumerate(RESERVED)}
    for n, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip() and n == text.count("\n") + 1:
            break  # after the final newline
        parts = line.rstrip().rsplit(" ", 1)
        if len(parts) != 2:
            fail(f"{path}: line {n}: expected '<token> <count> [#fairseq:overwrite]', got {line!r}")
        word, field = parts
        overwrite = field == "#fairseq:overwrite"
        if overwrite:
            parts = word.rsplit(" ", 1)
            if len(parts) != 2:
                fail(f"{path}: line {n}: expected '<token> <count> #fairseq:overwrite', got {line!r}")
            word, field = parts
        try:
            int(field)
        except ValueError:
            fail(f"{path}: line {n}: the count {field!r} is not an integer")
        if word in first:
            fail(f"{path}: line {n}: token {word!r} repeats {first[word]}"
                 + (" (#fairseq:overwrite entries make two ids with one text, which a tfmc vocabulary "
                    "cannot hold)" if overwrite else ""))
        first[word] = f"line {n}"
        symbols.append(word)
    return symbols


# --------------------------------------------------------------------------- tensors


class StateDict:
    def __init__(self, path, sd):
        self.path = path
        self.t = {}
        for k, v in sd.items():
            if not isinstance(k, str) or not isinstance(v, torch.Tensor):
                fail(f"{path}: model entry {k!r} is not a named tensor")
            self.t[k] = v
        self.used = set(n for n in NON_WEIGHTS if n in self.t)

    def has(self, name):
        return name in self.t

    def get(self, name, shape=None):
        if name not in self.t:
            fail(f"{self.path}: missing tensor '{name}'")
        self.used.add(name)
        t = self.t[name]
        if not t.is_floating_point():
            fail(f"{self.path}: tensor '{name}' has dtype {t.dtype}, expected floating point")
        t = t.float()
        if shape is not None and list(t.shape) != list(shape):
            fail(f"{self.path}: tensor '{name}': expected shape {list(shape)}, got {list(t.shape)}")
        if not torch.isfinite(t).all():
            fail(f"{self.path}: tensor '{name}' holds NaN or infinite values")
        return t

    def layers(self, stack):
        idx = set()
        for k in self.t:
            parts = k.split(".")
            if len(parts) > 3 and parts[0] == stack and parts[1] == "layers" and parts[2].isdigit():
                idx.add(int(parts[2]))
        if idx and idx != set(range(max(idx) + 1)):
            missing = min(set(range(max(idx) + 1)) - idx)
            fail(f"{self.path}: missing tensors of layer '{stack}.layers.{missing}'")
        return max(idx) + 1 if idx else 0

    def upgrade(self, n_enc, n_dec):
        """fairseq's upgrade_state_dict_named renames (old layer_norms.K names,
        packed in_proj attention weights)."""
        maps = (("encoder", n_enc, {"0": "self_attn_layer_norm", "1": "final_layer_norm"}),
                ("decoder", n_dec, {"0": "self_attn_layer_norm", "1": "encoder_attn_layer_norm",
                                    "2": "final_layer_norm"}))
        for stack, n, m in maps:
            for i in range(n):
                for old, new in m.items():
                    for t in ("weight", "bias"):
                        k = f"{stack}.layers.{i}.layer_norms.{old}.{t}"
                        if k in self.t:
                            self.t[f"{stack}.layers.{i}.{new}.{t}"] = self.t.pop(k)
        for k in [k for k in self.t if k.endswith((".in_proj_weight", ".in_proj_bias"))]:
            base, kind = k.rsplit(".", 1)
            t = "weight" if kind == "in_proj_weight" else "bias"
            packed = self.t.pop(k)
            if packed.shape[0] % 3:
                fail(f"{self.path}: tensor '{k}': {packed.shape[0]} rows cannot be split into q, k and v")
            for name, part in zip(("q_proj", "k_proj", "v_proj"), packed.chunk(3, dim=0)):
                self.t[f"{base}.{name}.{t}"] = part

    def version(self, stack):
        v = self.t.get(f"{stack}.version")
        return 1.0 if v is None or v.numel() == 0 else float(v.reshape(-1)[0])

    def check_all_used(self):
        extra = sorted(set(self.t) - self.used)
        if extra:
            more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
            fail(f"{self.path}: unexpected tensor '{extra[0]}'{more}: this converter does not know "
                 f"what it computes")


def sinusoidal_positions(first, count, dim, padding_idx):
    """Rows first .. first+count-1 of fairseq's SinusoidalPositionalEmbedding
    table, computed with its float32 operations (so the values are fairseq's)."""
    num = first + count
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -step)
    angle = torch.arange(num, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).view(num, -1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(num, 1)], dim=1)
    table[padding_idx, :] = 0
    return table[first:]


def build(sd, opts, heads, max_len_arg, src_symbols, tgt_symbols, src_dict_path, tgt_dict_path):
    """(architecture dict, tfmc tensors, model.json extras)."""
    n_enc, n_dec = sd.layers("encoder"), sd.layers("decoder")
    if n_enc == 0:
        fail(f"{sd.path}: missing tensor 'encoder.layers.0.fc1.weight' (no encoder layers)")
    if n_dec == 0:
        fail(f"{sd.path}: missing tensor 'decoder.layers.0.fc1.weight' (no decoder layers)")
    for stack, n in (("encoder", n_enc), ("decoder", n_dec)):
        want = opts.values.get(f"{stack}_layers")
        if want is not None and want != n:
            opts.bad(f"{stack}_layers", f"{want}, but the checkpoint has {n} {stack} layers")
    sd.upgrade(n_enc, n_dec)

    enc_emb = sd.get("encoder.embed_tokens.weight")
    dec_emb = sd.get("decoder.embed_tokens.weight")
    if enc_emb.dim() != 2 or dec_emb.dim() != 2:
        fail(f"{sd.path}: tensor 'encoder.embed_tokens.weight': expected a matrix, got {list(enc_emb.shape)}")
    d = enc_emb.shape[1]
    for key in ("encoder_embed_dim", "decoder_embed_dim", "decoder_input_dim", "decoder_output_dim"):
        v = opts.values.get(key)
        if v is not None and v != d:
            opts.bad(key, f"{v} differs from the embedding width {d} (tfmc has one d_model; "
                          f"project_in_dim/project_out_dim layers are not supported)")
    if dec_emb.shape[1] != d:
        fail(f"{sd.path}: tensor 'decoder.embed_tokens.weight': width {dec_emb.shape[1]} differs from "
             f"the encoder's {d}")
    if d % heads:
        opts.bad("encoder_attention_heads", f"{heads} does not divide the model width {d}")
    if enc_emb.shape[0] != len(src_symbols):
        fail(f"{src_dict_path}: {len(src_symbols)} tokens (4 reserved + {len(src_symbols) - 4} lines) but "
             f"encoder.embed_tokens.weight has {enc_emb.shape[0]} rows")
    if dec_emb.shape[0] != len(tgt_symbols):
        fail(f"{tgt_dict_path}: {len(tgt_symbols)} tokens (4 reserved + {len(tgt_symbols) - 4} lines) but "
             f"decoder.embed_tokens.weight has {dec_emb.shape[0]} rows")
    if opts.set("share_all_embeddings") and not torch.equal(enc_emb, dec_emb):
        fail(f"{sd.path}: tensors 'encoder.embed_tokens.weight' and 'decoder.embed_tokens.weight' differ, "
             f"but {opts.name('share_all_embeddings')} says they are one")
    ff = sd.get("encoder.layers.0.fc1.weight").shape[0]
    for key in ("encoder_ffn_embed_dim", "decoder_ffn_embed_dim"):
        v = opts.values.get(key)
        if v is not None and v != ff:
            opts.bad(key, f"{v}, but encoder.layers.0.fc1.weight has {ff} rows (tfmc has one d_ff)")

    enc_pre, dec_pre = opts.bool("encoder_normalize_before"), opts.bool("decoder_normalize_before")
    enc_final = enc_pre and sd.version("encoder") >= 2
    dec_final = dec_pre and not opts.set("no_decoder_final_norm") and sd.version("decoder") > 2

    src_max = opts.int("max_source_positions")
    tgt_max = opts.int("max_target_positions")
    max_len = min(src_max, tgt_max)
    if max_len_arg is not None:
        if not 1 <= max_len_arg <= max_len:
            fail(f"--max-len {max_len_arg}: must be between 1 and min(max_source_positions, "
                 f"max_target_positions) = {max_len}")
        max_len = max_len_arg
    problem = table_size_problem(PAD + 1 + max_len, d)  # the rows sinusoidal_positions computes
    if problem and max_len_arg is not None:
        fail(f"--max-len {max_len_arg}: {problem}")
    if problem:
        opts.bad("max_source_positions" if src_max <= tgt_max else "max_target_positions",
                 f"{max_len} ({problem}); give a smaller --max-len")

    out = {"encoder_embedding.weight": enc_emb, "decoder_embedding.weight": dec_emb}

    copy_fairseq_layers(out, sd.get, "", n_enc, n_dec, d, ff)
    if enc_final:
        out["encoder_norm.weight"] = sd.get("encoder.layer_norm.weight", [d])
        out["encoder_norm.bias"] = sd.get("encoder.layer_norm.bias", [d])
    if dec_final:
        out["decoder_norm.weight"] = sd.get("decoder.layer_norm.weight", [d])
        out["decoder_norm.bias"] = sd.get("decoder.layer_norm.bias", [d])

    V = dec_emb.shape[0]
    shared_out = opts.set("share_decoder_input_output_embed") or opts.set("share_all_embeddings")
    if sd.has("decoder.output_projection.weight"):
        out_w = sd.get("decoder.output_projection.weight", [V, d])
        if shared_out and not torch.equal(out_w, dec_emb):
            fail(f"{sd.path}: tensor 'decoder.output_projection.weight' differs from "
                 f"'decoder.embed_tokens.weight', "
                 f"but {opts.name('share_decoder_input_output_embed')} ties them")
    elif shared_out:
        out_w = dec_emb
    else:
        out_w = sd.get("decoder.embed_out", [V, d])
    out["linear.weight"] = out_w
    out["linear.bias"] = torch.zeros(V)

    no_pos = opts.set("no_token_positional_embeddings")
    for stack in ("encoder", "decoder"):
        learned = opts.bool(f"{stack}_learned_pos")
        if no_pos:
            table = torch.zeros(max_len, d)
        elif learned:
            name = f"{stack}.embed_positions.weight"
            t = sd.get(name)
            if t.dim() != 2 or t.shape[1] != d or t.shape[0] < PAD + 1 + max_len:
                fail(f"{sd.path}: tensor '{name}': expected shape [>= {PAD + 1 + max_len}, {d}] "
                     f"(padding_idx + 1 + max_len rows), got {list(t.shape)}")
            table = t[PAD + 1:PAD + 1 + max_len]
        else:
            table = sinusoidal_positions(PAD + 1, max_len, d, PAD)
        out[f"{stack}_positions.weight"] = table
    if no_pos:
        note(f"{sd.path}: {opts.name('no_token_positional_embeddings')} is set: the position tables are zero")
    sd.check_all_used()

    arch = {"d_model": d, "num_heads": heads, "num_encoder_layers": n_enc, "num_decoder_layers": n_dec,
            "d_ff": ff, "max_len": max_len, "activation": None, "norm": "pre" if enc_pre else "post",
            "layer_norm_eps": 1e-5, "embedding_scale": not opts.set("no_scale_embedding"),
            "positional_encoding": "table"}
    from tfmc.reference.tfm import SHORTHAND_RECIPES
    if dec_pre != enc_pre:
        arch["decoder_layer"] = SHORTHAND_RECIPES[("decoder", "pre" if dec_pre else "post")]
    default_final = enc_pre
    if enc_final != default_final:
        arch["encoder_final_norm"] = enc_final
    if dec_final != default_final:
        arch["decoder_final_norm"] = dec_final
    return arch, _ordered(out)


def _ordered(out):
    """Encoder tensors, then decoder tensors, then the rest (readability only)."""
    def key(name):
        return (0 if name.startswith("encoder") else 1 if name.startswith("decoder") else 2)
    return dict(sorted(out.items(), key=lambda kv: key(kv[0])))


# --------------------------------------------------------------------------- check


def check(out_dir, ckpt, f16, max_len):
    from tfmc.reference import fairseq as ref_fairseq
    from tfmc.reference import tfm as ref_tfm
    written = ref_tfm.load(out_dir)
    state = ckpt["model"]
    if f16:
        state = {k: (v.half().float() if v.is_floating_point() and not k.endswith(".version") else v)
                 for k, v in state.items()}
    original = ref_fairseq.FairseqReference(ref_fairseq.flat_config(ckpt), state)
    if f16:  # the sinusoid as the file holds it
        d = written.arch["d_model"]
        for stack, kind in original.positions.items():
            if isinstance(kind, str):
                original.positions[stack] = ref_fairseq.sinusoidal_table(PAD + 1 + max_len, d, PAD).half().float()
    return max_difference(written, original)


# --------------------------------------------------------------------------- run


def _side(which, spm_path, tokenizer, vocab_name, spm_name):
    """A model.json side object: SentencePiece through the vocabulary, or --X-tokenizer."""
    if spm_path:
        if tokenizer:
            fail(f"--{which}-spm and --{which}-tokenizer exclude each other")
        check_input_file(spm_path, f"--{which}-spm")
        try:
            import sentencepiece
            sentencepiece.SentencePieceProcessor(model_file=spm_path)
        except ImportError:
            pass
        except Exception as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            fail(f"{spm_path}: not a SentencePiece model ({why})")
        return {"vocab": vocab_name, "tokenizer": "sentencepiece", "model": spm_name, "piece_ids": "vocab"}
    if not tokenizer:
        fail(f"no --{which}-spm: say how tfmc should split {'source' if which == 'src' else 'target'} text "
             f"with --{which}-tokenizer word|char (see docs/convert.md), or give the SentencePiece model")
    return {"vocab": vocab_name, "tokenizer": tokenizer}


def _piece_share(spm_path, symbols):
    """The share of a dictionary's tokens (the reserved ones aside) that are
    pieces of the SentencePiece model at `spm_path`; None without the
    module."""
    try:
        import sentencepiece
    except ImportError:
        return None
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    tokens = symbols[len(RESERVED):]
    if not tokens:
        return None
    unk = sp.unk_id()
    return sum(sp.piece_to_id(t) != unk for t in tokens) / len(tokens)


def _check_pieces(args, src_symbols, tgt_symbols):
    """A note when a side's SentencePiece model knows few of its
    dictionary's tokens (text through it would be mostly unk): most often
    the two sides' models given the other way round."""
    sides = {"src": (args.src_spm, src_symbols, args.src_dict), "tgt": (args.tgt_spm, tgt_symbols, args.tgt_dict)}
    for which, (spm_path, symbols, dict_path) in sides.items():
        share = _piece_share(spm_path, symbols) if spm_path else None
        if share is None or share >= 0.5:
            continue
        other = "tgt" if which == "src" else "src"
        swapped = sides[other][0] and _piece_share(sides[other][0], symbols)
        hint = (f"; --{other}-spm knows {swapped:.0%} of them: are the two models given the other way round?"
                if swapped and swapped > share else "")
        note(f"--{which}-spm {spm_path} knows only {share:.0%} of the tokens of {dict_path}: text through it "
             f"becomes mostly unk{hint}")


def run(args):
    path = args.checkpoint
    check_output_dir(args.output)
    src_side = _side("src", args.src_spm, args.src_tokenizer, "src.vocab", "src.spm")
    tgt_side = _side("tgt", args.tgt_spm, args.tgt_tokenizer, "tgt.vocab", "tgt.spm")
    src_symbols = read_dictionary(args.src_dict)
    tgt_symbols = read_dictionary(args.tgt_dict)
    _check_pieces(args, src_symbols, tgt_symbols)
    ckpt = load_torch_checkpoint(path, allow={("argparse", "Namespace")})
    if not isinstance(ckpt, dict) or "model" not in ckpt:
        fail(f"{path}: not a fairseq checkpoint (expected a dict with 'model' and 'cfg' or 'args')")
    if not isinstance(ckpt["model"], dict):
        fail(f"{path}: 'model' is a {type(ckpt['model']).__name__}, expected a dict of tensors")
    opts = Options(path, ckpt)
    act, heads = read_options(opts)
    sd = StateDict(path, ckpt["model"])
    arch, tensors = build(sd, opts, heads, args.max_len, src_symbols, tgt_symbols, args.src_dict, args.tgt_dict)
    arch["activation"] = ACTIVATIONS[act]

    out = args.output
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"{out}: cannot create the output directory: {e.strerror}")
    write_vocab(os.path.join(out, "src.vocab"), src_symbols, source=args.src_dict)
    write_vocab(os.path.join(out, "tgt.vocab"), tgt_symbols, source=args.tgt_dict)
    for spm_path, name in ((args.src_spm, "src.spm"), (args.tgt_spm, "tgt.spm")):
        if spm_path:
            copy_file(spm_path, os.path.join(out, name))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors,
                      dtype="F16" if args.dtype == "f16" else "F32")
    desc = {
        "format": "tfm-model", "version": 1, "architecture": arch,
        "source": src_side, "target": tgt_side,
        "special_tokens": {"pad": PAD, "bos": BOS, "eos": EOS, "unk": UNK,
                           "decoder_start": EOS, "never_generate": [PAD]},
        "weights": "model.safetensors",
    }
    write_model_json(os.path.join(out, "model.json"), desc)
    print(f"wrote {out}: fairseq transformer, d_model {arch['d_model']}, {arch['num_encoder_layers']}+"
          f"{arch['num_decoder_layers']} layers, {heads} heads, d_ff {arch['d_ff']}, {arch['activation']}, "
          f"{arch['norm']}-norm, vocabularies {len(src_symbols)}/{len(tgt_symbols)}, "
          f"max_len {arch['max_len']}, weights {args.dtype}")
    if args.no_check:
        return 0
    f16 = args.dtype == "f16"
    return run_check(out, path, "tfmc.reference.fairseq", f16,
                     lambda: check(out, ckpt, f16, arch["max_len"]), CHECK_TOLERANCE)
