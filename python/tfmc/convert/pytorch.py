"""tfmc-convert pytorch: turn a PyTorch checkpoint into a tfmc model directory.

    tfmc-convert pytorch CKPT.pt -o DIR --layout tutorial|per-head|torch-nn-transformer|custom
        [--names MAP.json] [--src-vocab FILE] [--tgt-vocab FILE]
        [--num-heads N] [--activation relu|gelu|silu] [--norm post|pre] [--max-len N]
        [--layer-norm-eps E] [--embedding-scale] [--dtype f32|f16]
        [--encoder-layer RECIPE] [--decoder-layer RECIPE]

(tools/tfmc-import-pytorch is the same command.) Reads a torch.save()d
state_dict (or a dict holding one under "state_dict" or "model") without
running any code from the file, renames its tensors to the names of
docs/model-format.md through a name map (the layout's defaults, overridden by
--names), infers what the shapes determine (d_model, d_ff, layer counts,
vocabulary sizes, heads for per-head checkpoints, encoder-only when there is
no decoder), and writes DIR/model.json, DIR/model.safetensors and the
vocabularies. A positional table that is the sinusoid is dropped (tfmc
computes it); any other (a learned table) is kept: the model then has
"positional_encoding": "table" and the tensors encoder_positions.weight /
decoder_positions.weight. It then checks DIR, run by tfmc.reference.tfm,
against the checkpoint: for the tutorial, per-head and torch-nn-transformer
layouts with sinusoidal positions the original tensors are loaded
(load_state_dict, strict) into the matching module of tfmc.reference.seeds,
which checks the name map and the layer arrangement; otherwise (custom, or
a learned table) it is a round trip of the mapped tensors, which checks the
written files only. Full documentation: docs/import-pytorch.md.

Name map: tfmc tensor name -> checkpoint name; `{i}` is a layer index on
both sides. A checkpoint name may contain `{h}` (per-head tensors
concatenated in head order along dim 0) or end in `[k/n]` (the k-th of n
equal parts along dim 0, e.g. a packed in_proj_weight).
"""

import copy
import json
import os
import random
import re

import numpy as np
import torch

from tfmc.convert.common import (ConversionError, check_output_dir, copy_file, check_vocab_tokens, fail, load_torch_checkpoint, note, state_dict_of,
                                 read_input, read_json, table_size_problem, write_model_json, write_safetensors,
                                 write_vocab)
from tfmc.reference import seeds as sm
from tfmc.reference import tfm as ref

CHECK_TOLERANCE = 1e-4

ATTENTION = ("query_linear", "key_linear", "value_linear", "output_linear")
MAX_NORMS = 9

# Seed 000's layer arrangement (docs/seeds.md), bugs fixed.
SEED000_RECIPES = {
    "encoder": "x = x + self_attn(x); x = x + ffn(norm1(x)); x = norm2(x)",
    "decoder": "x = x + self_attn(x); x = x + ffn(norm1(x)); x = x + cross_attn(norm2(x)); x = norm3(x)",
}


class NamingFailure(ConversionError):
    """A tensor the name map cannot find, or one it does not use: run()
    adds a hint when another built-in layout's names fit the checkpoint."""


def fail_names(message):
    raise NamingFailure(message)


# --------------------------------------------------------------------------- name maps


def tfmc_patterns():
    """Every tfmc tensor name a map may have, with `{i}` for the layer index."""
    names = ["encoder_embedding.weight", "decoder_embedding.weight", "linear.weight", "linear.bias",
             "encoder_norm.weight", "encoder_norm.bias", "decoder_norm.weight", "decoder_norm.bias",
             POSITION_TENSORS["encoder"], POSITION_TENSORS["decoder"]]
    blocks = {"encoder_layers": ["self_attention"],
              "decoder_layers": ["masked_self_attention", "enc_dec_attention"]}
    for stack, attns in blocks.items():
        for att in attns:
            for lin in ATTENTION:
                names += [f"{stack}.{{i}}.{att}.{lin}.weight", f"{stack}.{{i}}.{att}.{lin}.bias"]
        for lin in ("linear1", "linear2"):
            names += [f"{stack}.{{i}}.feed_forward.{lin}.weight", f"{stack}.{{i}}.feed_forward.{lin}.bias"]
        for k in range(1, MAX_NORMS + 1):
            names += [f"{stack}.{{i}}.norm{k}.weight", f"{stack}.{{i}}.norm{k}.bias"]
    return names


def _layer_map(stack, src_prefix, attention, ffn, norm):
    """Map entries for one stack. attention: {tfmc attention -> function(linear, wb) -> spec};
    ffn: {linear1/linear2 -> checkpoint module}; norm: function(k) -> checkpoint module."""
    m = {}
    for att, spec in attention.items():
        for lin in ATTENTION:
            for wb in ("weight", "bias"):
                m[f"{stack}.{{i}}.{att}.{lin}.{wb}"] = src_prefix + spec(lin, wb)
    for lin, mod in ffn.items():
        for wb in ("weight", "bias"):
            m[f"{stack}.{{i}}.feed_forward.{lin}.{wb}"] = f"{src_prefix}{mod}.{wb}"
    for k in range(1, MAX_NORMS + 1):
        for wb in ("weight", "bias"):
            m[f"{stack}.{{i}}.norm{k}.{wb}"] = f"{src_prefix}{norm(k)}.{wb}"
    return m


def default_map(layout):
    """The layout's default name map (tfmc pattern -> checkpoint spec)."""
    if layout == "tutorial":
        return {p: p for p in tfmc_patterns()}
    if layout == "custom":
        return {}
    if layout == "per-head":
        def per_head(module):
            short = {"query_linear": "query", "key_linear": "key", "value_linear": "value"}
            return lambda lin, wb: (f"{module}.multi_header.{wb}" if lin == "output_linear"
                                    else f"{module}.heads.{{h}}.{short[lin]}.{wb}")

        m = {"encoder_embedding.weight": "cn_embd.weight", "decoder_embedding.weight": "en_embd.weight",
             "linear.weight": "predict_word.0.weight", "linear.bias": "predict_word.0.bias"}
        ffn = {"linear1": "ffn.0", "linear2": "ffn.2"}
        m.update(_layer_map("encoder_layers", "transformer_encoder.{i}.", {"self_attention": per_head("mha")},
                            ffn, lambda k: f"ln{k}"))
        m.update(_layer_map("decoder_layers", "transformer_decoder.{i}.",
                            {"masked_self_attention": per_head("mha"), "enc_dec_attention": per_head("edha")},
                            ffn, lambda k: f"ln{k}"))
        return m
    if layout == "torch-nn-transformer":
        def packed(module):
            part = {"query_linear": 0, "key_linear": 1, "value_linear": 2}
            return lambda lin, wb: (f"{module}.out_proj.{wb}" if lin == "output_linear"
                                    else f"{module}.in_proj_{wb}[{part[lin]}/3]")

        m = {"encoder_embedding.weight": "src_embedding.weight",
             "decoder_embedding.weight": "tgt_embedding.weight",
             "linear.weight": "generator.weight", "linear.bias": "generator.bias",
             "encoder_norm.weight": "transformer.encoder.norm.weight",
             "encoder_norm.bias": "transformer.encoder.norm.bias",
             "decoder_norm.weight": "transformer.decoder.norm.weight",
             "decoder_norm.bias": "transformer.decoder.norm.bias"}
        ffn = {"linear1": "linear1", "linear2": "linear2"}
        m.update(_layer_map("encoder_layers", "transformer.encoder.layers.{i}.",
                            {"self_attention": packed("self_attn")}, ffn, lambda k: f"norm{k}"))
        m.update(_layer_map("decoder_layers", "transformer.decoder.layers.{i}.",
                            {"masked_self_attention": packed("self_attn"),
                             "enc_dec_attention": packed("multihead_attn")}, ffn, lambda k: f"norm{k}"))
        return m
    fail(f"unknown layout {layout!r}")


def read_names(path):
    """--names MAP.json: a JSON object mapping tfmc names to checkpoint names."""
    obj = read_json(path, where=f"--names {path}")
    if not isinstance(obj, dict):
        fail(f"--names {path}: expected a JSON object mapping tfmc tensor names to checkpoint names")
    known = set(tfmc_patterns())
    for key, value in obj.items():
        if key not in known:
            hint = " (write layer indices as {i})" if re.search(r"_layers\.\d+\.", key) else ""
            fail(f"--names {path}: '{key}' is not a tfmc tensor name{hint}")
        if not isinstance(value, str) or not value:
            fail(f"--names {path}: '{key}' must map to a non-empty string, got {json.dumps(value)}")
        if ("{i}" in key) != ("{i}" in value):
            fail(f"--names {path}: '{key}' -> '{value}': use {{i}} on both sides or on neither")
        try:
            parse_spec(value)
        except ConversionError as e:
            fail(f"--names {path}: {e}")
    return obj


# --------------------------------------------------------------------------- recipes
#
# --encoder-layer / --decoder-layer are checked before anything is read or
# written, by tfmc.reference.tfm's parser, which accepts and rejects exactly what
# tfmc does with tfmc's messages (frontends/model/LayerRecipe.cpp), so that
# an error names the option and the 1-based column and nothing is written
# that tfmc would refuse.

recipe_problem = ref.recipe_problem  # (text, stack) -> None or "column N: ..."


def check_recipe_option(text, stack):
    """Fail with `--STACK-layer 'TEXT': column N: ...` unless tfmc accepts the recipe."""
    problem = recipe_problem(text, stack)
    if problem is not None:
        empty = " (the recipe is empty)" if not text.strip(" \t\r\n") else ""
        fail(f"--{stack}-layer {text!r}: {problem}{empty}")


# --------------------------------------------------------------------------- checkpoint specs

_CHUNK = re.compile(r"^(.*)\[(\d+)/(\d+)\]$")


def parse_spec(spec):
    """'name[k/n]' -> ('name', (k, n)); 'name' -> ('name', None)."""
    m = _CHUNK.match(spec)
    if not m:
        return spec, None
    k, n = int(m.group(2)), int(m.group(3))
    if not 0 <= k < n:
        fail(f"bad part [{k}/{n}] in '{spec}': need 0 <= k < n")
    return m.group(1), (k, n)


def spec_regex(spec):
    """A regex matching the checkpoint names a spec can refer to; group 1 is {i}."""
    name, _ = parse_spec(spec)
    parts = re.split(r"(\{i\}|\{h\})", name)
    out = "".join("(\\d+)" if p == "{i}" else "\\d+" if p == "{h}" else re.escape(p) for p in parts)
    return re.compile("^" + out + "$")


class Checkpoint:
    """The checkpoint's tensors plus the bookkeeping of which were used."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.used = set()
        self.heads = {}  # spec -> number of heads found for {h} specs

    def fetch(self, spec, i, tfmc_name):
        """The tensor a spec refers to for layer i (None outside layers)."""
        name, chunk = parse_spec(spec)
        if i is not None:
            name = name.replace("{i}", str(i))
        if "{h}" in name:
            parts, h = [], 0
            while name.replace("{h}", str(h)) in self.tensors:
                parts.append(self._take(name.replace("{h}", str(h)), tfmc_name))
                h += 1
            if not parts:
                fail_names(f"missing checkpoint tensor '{name.replace('{h}', '0')}' (for tfmc tensor '{tfmc_name}')")
            self.heads[tfmc_name] = h
            t = torch.cat(parts, dim=0)
        else:
            if name not in self.tensors:
                fail_names(f"missing checkpoint tensor '{name}' (for tfmc tensor '{tfmc_name}')")
            t = self._take(name, tfmc_name)
        if chunk:
            k, n = chunk
            if t.dim() == 0 or t.shape[0] % n:
                fail(f"checkpoint tensor '{name}' (shape {list(t.shape)}) cannot be split into {n} "
                     f"equal parts along dim 0 for tfmc tensor '{tfmc_name}'")
            size = t.shape[0] // n
            t = t[k * size:(k + 1) * size]
        return t

    def _take(self, name, tfmc_name):
        t = self.tensors[name]
        if not t.is_floating_point():
            fail(f"checkpoint tensor '{name}' (for tfmc tensor '{tfmc_name}') has dtype {t.dtype}, "
                 f"expected a floating-point tensor")
        self.used.add(name)
        return t.float()

    def exists(self, spec, i=None):
        name, _ = parse_spec(spec)
        if i is not None:
            name = name.replace("{i}", str(i))
        if "{h}" in name:
            name = name.replace("{h}", "0")
        return name in self.tensors

    def layer_indices(self, specs):
        """Layer indices present in the checkpoint for any of these layer specs."""
        found = set()
        regexes = [spec_regex(s) for s in specs]
        for name in self.tensors:
            for rx in regexes:
                m = rx.match(name)
                if m:
                    found.add(int(m.group(1)))
        return found


# --------------------------------------------------------------------------- loading


def load_checkpoint(path, restricted=False):
    """-> dict name -> tensor (the state_dict in the file), read without
    running code from it (common.load_torch_checkpoint; `restricted`: the
    legacy format too with our own unpickler, which always reads zip-format
    files, instead of torch.load(weights_only=True))."""
    obj = load_torch_checkpoint(path, restricted=restricted)
    return state_dict_of(obj, path)


# --------------------------------------------------------------------------- positional tables
#
# A checkpoint tensor is a candidate positional table when its name is one of
#   *.pe / pe                      (a buffer named pe: seeds 000, 001, 002)
#   *.MOD.weight                   (the table of a module MOD, e.g. an nn.Embedding)
#   *.MOD                          (a tensor itself named like MOD)
# where MOD is [PREFIX_](pos|position|positional)_(enc|encoding|encodings|emb|embedding|embeddings),
# e.g. positional_encoding, cn_positional_encoding, pos_emb, position_embeddings.
# A candidate must have the shape [L, d], [1, L, d] or [L, 1, d]. It is
# dropped (tfmc computes the table itself) when it is the sinusoidal table
# within float32 rounding; any other finite table is a learned one, kept as
# a position table of the model ("positional_encoding": "table").
# Candidates the name map refers to are left to the map; so are the tfmc
# names encoder_positions.weight / decoder_positions.weight.

_POSITION_MODULE = re.compile(r"^(?:[A-Za-z0-9]+_)*(?:pos|position|positional)_"
                              r"(?:enc|encoding|encodings|emb|embedding|embeddings)$")

# Allowed |table - sinusoid| at position p. A table computed in float32 (as
# every seed does) carries the rounding of its angle p / 10000^(2i/d), which
# grows with p: the seeds' tables differ from the float64 one by up to
# ~1.1e-7 * p (3.9e-4 at p = 5000 for seed 001); 3e-7 * p leaves a margin.
PE_TOLERANCE_PER_POSITION = 3e-7
PE_TOLERANCE_BASE = 1e-6

POSITION_TENSORS = {"encoder": "encoder_positions.weight", "decoder": "decoder_positions.weight"}

# Name parts that say which side a learned table belongs to.
_SIDE_WORDS = {"encoder": {"encoder", "enc", "src", "source", "cn"},
               "decoder": {"decoder", "dec", "tgt", "target", "en"}}


def is_positional_candidate(name):
    parts = name.split(".")
    if parts[-1] == "pe" or _POSITION_MODULE.match(parts[-1]):
        return True
    return len(parts) >= 2 and parts[-1] == "weight" and bool(_POSITION_MODULE.match(parts[-2]))


def sinusoidal_table(length, d):
    """The sinusoid in float64: pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(...)."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    two_i = np.arange(0, d, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, two_i / d)
    pe = np.zeros((length, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d // 2])
    return pe


def table_rows(t):
    """A candidate's [L, d] view, or None when its shape is not a table's."""
    if t.dim() == 2:
        return t
    if t.dim() == 3 and t.shape[0] == 1:
        return t[0]
    if t.dim() == 3 and t.shape[1] == 1:
        return t[:, 0]
    return None


def sinusoidal_difference(table):
    """Compare an [L, d] table with the sinusoid: (max |difference|, inf where
    the table is not finite; the first position beyond the tolerance, or None)."""
    t = table.double().numpy()
    diff = np.abs(t - sinusoidal_table(*t.shape))
    diff = np.where(np.isfinite(diff), diff, np.inf)
    allowed = PE_TOLERANCE_BASE + PE_TOLERANCE_PER_POSITION * np.arange(t.shape[0], dtype=np.float64)[:, None]
    beyond = (diff > allowed).any(axis=1)
    return float(diff.max()), (int(np.argmax(beyond)) if beyond.any() else None)


def split_positional_tables(tensors, name_map):
    """Remove the positional tables the name map does not refer to from
    `tensors`: the sinusoidal ones (tfmc computes the table itself), with a
    note each, and the learned ones. Fails on a candidate that is not a
    table or holds non-finite values. Returns ({name: (rows, d)} of the
    sinusoidal tables, {name: float [rows, d] tensor} of the learned ones)."""
    mapped = [spec_regex(spec) for spec in set(name_map.values())]
    sinusoids, learned = {}, {}
    for name in sorted(n for n in tensors if is_positional_candidate(n)):
        if any(rx.match(name) for rx in mapped):
            continue
        t = tensors[name]
        shape = list(t.shape)
        rows = table_rows(t) if t.is_floating_point() else None
        if rows is None or rows.shape[0] == 0 or rows.shape[1] == 0:
            fail(f"tensor '{name}' {shape} is named like a positional table but is not one "
                 f"(expected a floating-point [max_len, d_model], [1, max_len, d_model] or "
                 f"[max_len, 1, d_model] tensor); map it with --names or remove it from the checkpoint")
        diff, first = sinusoidal_difference(rows)
        del tensors[name]
        if diff == float("inf"):
            fail(f"tensor '{name}' {shape} is a positional table holding values that are not finite, "
                 f"first at position {first}")
        if first is not None:
            learned[name] = rows.float()
            note(f"kept learned positional table '{name}' {shape}: it differs from the sinusoidal encoding "
                 f"by up to {diff:.3g} (the first position beyond float32 rounding is {first}); the model "
                 f"gets \"positional_encoding\": \"table\"")
            continue
        sinusoids[name] = tuple(rows.shape)
        note(f"dropped positional-encoding buffer '{name}' {shape} (tfmc computes the sinusoidal table "
             f"itself); max difference to tfmc's table {diff:.2g}")
    return sinusoids, learned


def table_side(name):
    """"encoder", "decoder" or None (shared or unknown): what a learned
    table's name says, e.g. transformer.encoder.pos_emb.weight, cn_positional_encoding.pe."""
    words = set(re.split(r"[._]", name))
    sides = [side for side, marks in _SIDE_WORDS.items() if words & marks]
    return sides[0] if len(sides) == 1 else None


def assign_tables(learned, has_decoder):
    """Learned tables -> {side: checkpoint name} for the sides that have one.
    One table without a side in its name serves both sides; several need a
    side each, one per side."""
    sides = ["encoder", "decoder"] if has_decoder else ["encoder"]
    if not learned:
        return {}
    if len(learned) == 1:
        (name,) = learned
        side = table_side(name)
        if side is None:
            return {s: name for s in sides}
        if side not in sides:
            fail(f"learned positional table '{name}' looks like the decoder's, but the checkpoint has no decoder")
        return {side: name}
    out = {}
    for name in sorted(learned):
        side = table_side(name)
        if side is None or side not in sides or side in out:
            why = ("its name does not say which side it belongs to" if side is None
                   else f"{'two tables' if side in out else 'a table'} for the {side}")
            fail(f"the checkpoint has {len(learned)} learned positional tables ({', '.join(sorted(learned))}) "
                 f"and '{name}' cannot be placed: {why}; map them with --names "
                 f"(encoder_positions.weight, decoder_positions.weight)")
        out[side] = name
    return out


# --------------------------------------------------------------------------- import


def build(args, tensors, name_map, sinusoids, learned):
    """Work out the architecture and the tfmc tensors. `sinusoids`, `learned`:
    the positional tables split_positional_tables took out of `tensors`.
    Returns (arch, model, sources) where model is a tfmc.reference.tfm model
    holding the checkpoint's tensors and sources {side: checkpoint name} the
    position tables it was given (empty for a sinusoidal model)."""
    ckpt = Checkpoint(tensors)
    layer_specs = {s: [spec for key, spec in name_map.items() if key.startswith(f"{s}_layers.")]
                   for s in ("encoder", "decoder")}
    side_specs = [spec for key, spec in name_map.items()
                  if key.startswith("decoder_") or key.startswith("linear.")]

    enc_idx = ckpt.layer_indices(layer_specs["encoder"])
    if not enc_idx:
        example = name_map.get("encoder_layers.{i}.feed_forward.linear1.weight", "?").replace("{i}", "0")
        fail_names(f"no encoder layers found in the checkpoint (looked for names like '{example}'); "
                   f"check --layout / --names")
    if args.layout == "custom":
        has_decoder = any(k.startswith("decoder_") or k.startswith("linear.") for k in name_map)
    else:
        has_decoder = any(ckpt.exists(s) for s in side_specs if "{i}" not in s) or \
            bool(ckpt.layer_indices(layer_specs["decoder"]))
    dec_idx = ckpt.layer_indices(layer_specs["decoder"]) if has_decoder else set()
    if has_decoder and not dec_idx:
        example = name_map.get("decoder_layers.{i}.feed_forward.linear1.weight", "?").replace("{i}", "0")
        fail_names(f"the checkpoint has decoder tensors but no decoder layers (looked for names like '{example}')")
    n_enc = max(enc_idx) + 1
    n_dec = max(dec_idx) + 1 if dec_idx else 0
    if args.tgt_vocab and not has_decoder:
        fail("--tgt-vocab given but the checkpoint has no decoder (encoder-only model)")

    def need(key):
        if key not in name_map:
            fail_names(f"no checkpoint name for tfmc tensor '{key}': add it to --names")
        return name_map[key]

    def get(key, i=None):
        return ckpt.fetch(need(key), i, key.replace("{i}", str(i)) if i is not None else key)

    emb = get("encoder_embedding.weight")
    if emb.dim() != 2:
        fail(f"encoder embedding '{need('encoder_embedding.weight')}' has shape {list(emb.shape)}, "
             f"expected [vocab, d_model]")
    src_vocab, d_model = emb.shape
    tgt_vocab = get("decoder_embedding.weight").shape[0] if has_decoder else None
    # Position tables: mapped (--names, or the tfmc names themselves), else
    # the learned candidates; both give a "table" model.
    tables = {name: rows for name, (rows, _) in sinusoids.items()}
    positions, sources = {}, {}
    for side, name in assign_tables(learned, has_decoder).items():
        positions[side], sources[side] = learned[name], name
    for side, key in POSITION_TENSORS.items():
        spec = name_map.get(key)
        if spec is None or not ckpt.exists(spec) or (side == "decoder" and not has_decoder):
            continue
        if side in positions:
            fail(f"two positional tables for the {side}: '{spec}' (mapped to {key}) and '{sources[side]}'")
        t = ckpt.fetch(spec, None, key)
        rows = table_rows(t)
        if rows is None or rows.shape[0] == 0:
            fail(f"checkpoint tensor '{spec}' (for tfmc tensor '{key}') has shape {list(t.shape)}, "
                 f"expected [max_len, d_model]")
        positions[side], sources[side] = rows, parse_spec(spec)[0]
    for side, rows in positions.items():
        tables[sources[side]] = rows.shape[0]
    for name, (_, width) in sorted(sinusoids.items()):
        if width != d_model:
            fail(f"positional table '{name}' has {width} columns, but d_model is {d_model}")
    for side, rows in sorted(positions.items()):
        if rows.shape[1] != d_model:
            fail(f"positional table '{sources[side]}' has {rows.shape[1]} columns, but d_model is {d_model}")
    # Heads: counted for per-head ({h}) maps, else from --num-heads. (Read in
    # tfmc's canonical order: the query projection comes before the FFN.)
    get("encoder_layers.{i}.self_attention.query_linear.weight", 0)
    d_ff = get("encoder_layers.{i}.feed_forward.linear1.weight", 0).shape[0]
    counted = ckpt.heads.get("encoder_layers.0.self_attention.query_linear.weight")
    if counted is not None:
        if args.num_heads is not None and args.num_heads != counted:
            fail(f"--num-heads {args.num_heads} disagrees with the checkpoint, which has {counted} heads")
        num_heads = counted
    elif args.num_heads is None:
        fail(f"--num-heads is required for layout {args.layout} (the number of heads cannot be "
             f"inferred from the tensor shapes)")
    else:
        num_heads = args.num_heads
    if num_heads <= 0 or d_model % num_heads:
        fail(f"{num_heads} heads do not divide d_model {d_model}")

    if args.max_len is not None:
        max_len = args.max_len
    elif tables:
        max_len = min(tables.values())
        note(f"max_len {max_len} taken from the positional-encoding buffer (override with --max-len)")
    else:
        fail("--max-len is required (the checkpoint has no positional-encoding buffer to infer it from)")
    problem = table_size_problem(max_len, d_model)  # the tables the model and the check build
    if problem:
        fail(f"{'--max-len' if args.max_len is not None else 'max_len'} {max_len}: {problem}")

    arch = dict(d_model=d_model, num_heads=num_heads, num_encoder_layers=n_enc, num_decoder_layers=n_dec,
                d_ff=d_ff, max_len=max_len,
                activation=args.activation or ("gelu" if args.layout == "per-head" else "relu"))
    # Recipes: --encoder-layer/--decoder-layer, else the layout's arrangement.
    # `norm` is written when a stack uses the shorthand (default post).
    norm = args.norm
    given = {s: getattr(args, f"{s}_layer") for s in ("encoder", "decoder")}
    all_given = given["encoder"] is not None and (given["decoder"] is not None or not has_decoder)
    if args.layout == "per-head" and norm is None:
        recipes = {s: SEED000_RECIPES[s] if given[s] is None else given[s] for s in ("encoder", "decoder")}
    else:
        recipes = given
        if norm is not None or not all_given:
            norm = norm or "post"
            arch["norm"] = norm
    for side, rows in sorted(positions.items()):
        if rows.shape[0] < max_len:
            fail(f"positional table '{sources[side]}' has {rows.shape[0]} rows, fewer than max_len {max_len}")
    arch.update(layer_norm_eps=args.layer_norm_eps, embedding_scale=args.embedding_scale,
                positional_encoding="table" if positions else "sinusoidal")
    if recipes["encoder"] is not None:
        arch["encoder_layer"] = recipes["encoder"]
    if has_decoder and recipes["decoder"] is not None:
        arch["decoder_layer"] = recipes["decoder"]
    elif args.decoder_layer is not None:
        fail("--decoder-layer given but the checkpoint has no decoder (encoder-only model)")
    # Final norms: used when the map names them and the checkpoint has them
    # (torch.nn.Transformer always has them); written only where they differ
    # from the default that `norm` implies.
    default_final = norm == "pre"
    for side, present in (("encoder", True), ("decoder", has_decoder)):
        spec = name_map.get(f"{side}_norm.weight")
        has = spec is not None and ckpt.exists(spec)
        if present and has != default_final:
            arch[f"{side}_final_norm"] = has

    try:  # the recipe options were checked in run()
        model = ref.TranslationTransformer(arch, src_vocab, tgt_vocab).eval()
    except ValueError as e:
        fail(str(e))
    state = {}
    sides = ["encoder", "decoder"] if has_decoder else ["encoder"]
    for side in sides if positions else []:
        if side in positions:
            state[POSITION_TENSORS[side]] = positions[side][:max_len].float()
        else:  # a side without a learned table keeps the sinusoid
            state[POSITION_TENSORS[side]] = ref.positional_encoding(max_len, d_model)
            note(f"the {side} has no learned positional table: its table is the sinusoid tfmc would compute")
    for name, expected in model.state_dict().items():
        if name in state:
            continue
        m = re.match(r"^(encoder_layers|decoder_layers)\.(\d+)\.(.*)$", name)
        key, i = (f"{m.group(1)}.{{i}}.{m.group(3)}", int(m.group(2))) if m else (name, None)
        t = ckpt.fetch(need(key), i, name)
        source = need(key).replace('{i}', str(i))
        if tuple(t.shape) != tuple(expected.shape):
            fail(f"checkpoint tensor for '{name}' ('{source}') has shape "
                 f"{list(t.shape)}, expected {list(expected.shape)}")
        if t.is_floating_point() and not torch.isfinite(t).all():
            bad = int((~torch.isfinite(t)).flatten().nonzero()[0])
            fail(f"checkpoint tensor '{source}' (for '{name}') holds NaN or infinite values "
                 f"(element {bad} is {t.flatten()[bad].item()})")
        state[name] = t
    unused = sorted(set(tensors) - ckpt.used)
    if unused:
        more = f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
        fail_names(f"checkpoint tensor '{unused[0]}' is not mapped to any tfmc tensor{more}; "
                   f"check --layout or map it with --names")
    for name, heads in ckpt.heads.items():
        if heads != num_heads:
            fail(f"'{name}' has {heads} heads, but layer 0 has {num_heads}")
    model.load_state_dict(state)
    return arch, model, sources


def read_vocab(path):
    """The tokens of a vocabulary file (one per line, UTF-8, as tfmc reads
    it), checked by the rules tfmc's loader applies."""
    raw = read_input(path, where=f"cannot read vocabulary '{path}'")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        fail(f"vocabulary '{path}' is not valid UTF-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # SentencePiece's own .vocab lists "piece<TAB>score": tfmc wants the
    # pieces alone (they would carry their scores as text).
    if lines and all(re.fullmatch(r"[^\t]+\t-?[0-9]+(\.[0-9]+)?([eE]-?[0-9]+)?", line) for line in lines):
        fail(f"vocabulary '{path}' is a SentencePiece .vocab file (piece<TAB>score lines): give the "
             f"pieces alone, one per line (cut -f1 '{path}')")
    check_vocab_tokens(lines, path)
    return lines


def check_vocab(path, rows, side):
    n = len(read_vocab(path))
    if n != rows:
        fail(f"{side} vocabulary '{path}' has {n} tokens but the checkpoint's {side} embedding has {rows} rows")


# --------------------------------------------------------------------------- the check


def check_batch(model):
    """Four random source rows (ids from unk up, or any id in a tiny
    vocabulary) and, for translation models, four target rows from the
    decoder-start token."""
    rng = random.Random(0)
    S, max_len = model.src_vocab_size, model.arch["max_len"]
    low = 3 if S > 3 else 0
    longest = max(1, min(12, max_len - 1))
    srcs = [[rng.randrange(low, S) for _ in range(rng.randint(1, longest))] for _ in range(4)]
    if not model.has_decoder:
        return srcs, None
    T = model.tgt_vocab_size
    low = 3 if T > 3 else 0
    start = ref.decoder_start(model.special)
    tgts = [[start] + [rng.randrange(low, T) for _ in range(rng.randint(0, min(9, max_len - 1)))]
            for _ in range(4)]
    return srcs, tgts


def max_difference(a, b, batch):
    """Largest |a - b| over valid logit positions (encoder states for encoder-only models)."""
    srcs, tgts = batch
    if tgts is None:
        return float(np.abs(a.encode_states(srcs) - b.encode_states(srcs)).max())
    x, y = a.forward_ids(srcs, tgts), b.forward_ids(srcs, tgts)
    return max(float(np.abs(x[r, :len(t)] - y[r, :len(t)]).max()) for r, t in enumerate(tgts))


def _canonical(text, stack):
    return str(ref.Recipe(text, stack))


def original_module(layout, model, norm):
    """The tfmc.reference.seeds module a checkpoint of this layout and architecture
    is a state_dict of: (module, None), or (None, why there is none).
    `norm`: the --norm flag."""
    a = model.arch
    if layout == "custom":
        return None, "custom layout"
    if not model.has_decoder:
        return None, f"encoder-only models have no {layout} module in tfmc.reference.seeds"
    enc, dec = str(model.encoder_recipe), str(model.decoder_recipe)

    def shorthand(kind):
        return (enc, dec) == (_canonical(ref.SHORTHAND_RECIPES[("encoder", kind)], "encoder"),
                              _canonical(ref.SHORTHAND_RECIPES[("decoder", kind)], "decoder"))

    finals = (model.encoder_final_norm, model.decoder_final_norm)
    src_vocab, tgt_vocab = model.src_vocab_size, model.tgt_vocab_size
    if layout == "torch-nn-transformer":
        # nn.Transformer's layers are post- or pre-norm: recipes that are
        # neither are compared with what --norm (default post) says it is.
        norm_first = shorthand("pre") or (not shorthand("post") and norm == "pre")
        if finals != (True, True):
            return None, "the checkpoint lacks nn.Transformer's final norms"
        return sm.TorchTransformerTranslator(
            src_vocab, tgt_vocab, d_model=a["d_model"], nhead=a["num_heads"],
            num_encoder_layers=a["num_encoder_layers"], num_decoder_layers=a["num_decoder_layers"],
            dim_feedforward=a["d_ff"], activation=a["activation"], norm_first=norm_first,
            layer_norm_eps=a["layer_norm_eps"], max_len=a["max_len"],
            embedding_scale=a["embedding_scale"]).eval(), None
    if layout == "per-head":
        if (enc, dec) != (_canonical(SEED000_RECIPES["encoder"], "encoder"),
                          _canonical(SEED000_RECIPES["decoder"], "decoder")) or any(finals):
            return None, "the layer arrangement is not seed 000's"
        if a["d_ff"] % a["d_model"]:
            return None, "d_ff is not a multiple of d_model, as seed 000's is"
        return sm.PerHeadTranslationTransformer(
            a["d_model"], a["max_len"], a["num_heads"], a["num_encoder_layers"], src_vocab, 0, tgt_vocab, 0,
            r_mlp=a["d_ff"] // a["d_model"], activation=a["activation"], layer_norm_eps=a["layer_norm_eps"],
            embedding_scale=a["embedding_scale"], n_decoder_layers=a["num_decoder_layers"]).eval(), None
    if layout == "tutorial":
        if not shorthand("post") or any(finals) or a["activation"] != "relu" or a["embedding_scale"] \
                or a["num_encoder_layers"] != a["num_decoder_layers"]:
            return None, ("the architecture is not seed 001's: post-norm, ReLU, no final norms, no embedding "
                          "scale, as many decoder layers as encoder layers")
        return sm.TutorialTransformer(src_vocab, tgt_vocab, a["d_model"], a["num_heads"],
                                      a["num_encoder_layers"], a["d_ff"], a["max_len"],
                                      layer_norm_eps=a["layer_norm_eps"]).eval(), None
    return None, f"no module for layout {layout}"


def _fit_table(table, expected):
    """The checkpoint's positional table in the shape of the module's buffer
    (rows past the checkpoint's come from the module's own table; a table of
    another width or shape is not used)."""
    own = table_rows(expected)
    rows = table_rows(table) if table is not None and table.is_floating_point() else None
    if rows is None or rows.shape[1] != own.shape[1]:
        return expected.clone()
    rows = rows.float()[: own.shape[0]]
    if rows.shape[0] < own.shape[0]:
        rows = torch.cat([rows, own[rows.shape[0]:]])
    return rows.reshape(expected.shape).clone()


def _renamed(key, original, layout, name_map):
    """The tensor a module parameter `key` is in the checkpoint under a name
    that --names gives instead of the layout's default, e.g. a generator
    called `out`, or every name under a `model.` prefix. Only the name is
    taken from the map: a packed tensor (`[k/n]`) is taken whole, whichever
    part the map gives, and per-head (`{h}`) tensors must keep their names."""
    for tfmc_name, default in default_map(layout).items():
        given = name_map.get(tfmc_name, default)
        if given == default:
            continue
        (dname, dpart), (gname, gpart) = parse_spec(default), parse_spec(given)
        if "{h}" in dname or "{h}" in gname or (dpart is None) != (gpart is None):
            continue
        m = spec_regex(default).match(key)
        if m:
            name = gname.replace("{i}", m.group(1)) if "{i}" in dname else gname
            return original.get(name)
    return None


def original_state(module, original, layout, name_map, f16):
    """A state_dict for `module` from the checkpoint as it was read (before
    any mapping): (state, number of tensors found through --names), or
    (None, why not). Weights are rounded to f16 when `f16`."""
    state, renamed = {}, 0
    for key, expected in module.state_dict().items():
        t = original.get(key)
        if is_positional_candidate(key):  # a buffer: the checkpoint's table when it has one
            state[key] = _fit_table(t, expected)
            continue
        if t is None:
            t = _renamed(key, original, layout, name_map)
            if t is None:
                return None, f"the checkpoint has no tensor '{key}', which {type(module).__name__} has"
            renamed += 1
        if not t.is_floating_point():
            return None, f"checkpoint tensor '{key}' is not floating-point"
        state[key] = t.half().float() if f16 else t.float()
    return state, renamed


def holds_tables(module, original, sources):
    """None when `module`, loaded with the checkpoint, computes with the
    position tables the model was given (`sources`, {side: checkpoint
    name}): every table-like buffer it has is in the checkpoint and every
    table source is one of them. Else why not."""
    buffers = {key for key in module.state_dict() if is_positional_candidate(key)}
    if any(key not in original for key in buffers) or not set(sources.values()) <= buffers:
        return (f"{type(module).__name__} cannot hold the checkpoint's positional tables "
                f"({', '.join(sorted(set(sources.values())))})")
    return None


def run_check(args, model, original, name_map, unrounded, sources):
    """Check the written directory against the checkpoint; print what ran and
    the differences; fail over CHECK_TOLERANCE. `model` holds the mapped
    tensors as written (rounded with f16); `unrounded` the same before rounding
    (None with f32); `sources` the position tables' checkpoint names."""
    written = ref.load(args.out)
    batch = check_batch(model)
    what = "logit" if model.has_decoder else "state"
    f16 = args.dtype == "f16"
    module, why = original_module(args.layout, model, args.norm)
    if module is not None and model.position_tables:
        why = holds_tables(module, original, sources)
        module = None if why else module
    if module is not None:
        state, renamed_or_why = original_state(module, original, args.layout, name_map, f16)
        if state is None:
            module, why = None, renamed_or_why
    if module is not None:
        renamed = renamed_or_why
        cls = f"tfmc.reference.seeds.{type(module).__name__}"
        try:
            module.load_state_dict(state, strict=True)
        except RuntimeError as e:
            fail(f"check failed: the checkpoint's tensors do not load into {cls} "
                 f"({str(e).strip().splitlines()[-1].strip()})")
        diff = max_difference(module, written, batch)
        via = f"; {renamed} tensors found through --names" if renamed else ""
        ok = diff <= CHECK_TOLERANCE
        print(f"check: {cls} loaded with the checkpoint's tensors{' rounded to f16' if f16 else ''} "
              f"(load_state_dict, strict{via}) vs {args.out} run by tfmc.reference: max {what} difference "
              f"{diff:.3g} ({'ok' if ok else 'FAILED'}, tolerance {CHECK_TOLERANCE:g})")
        if f16:
            state, _ = original_state(module, original, args.layout, name_map, False)
            module.load_state_dict(state, strict=True)
            print(f"check: against the unrounded checkpoint tensors: max {what} difference "
                  f"{max_difference(module, written, batch):.3g} (f16 rounding; reported, not checked)")
        if not ok:
            fail(f"check failed: {args.out} differs from {cls} loaded with the checkpoint by {diff:.3g} "
                 f"(> {CHECK_TOLERANCE:g}): the name map or the layer arrangement does not describe "
                 f"this checkpoint")
        return
    diff = max_difference(model, written, batch)
    ok = diff <= CHECK_TOLERANCE
    print(f"check: round trip only ({why}): max {what} difference {diff:.3g} between {args.out} and the "
          f"checkpoint's tensors as mapped ({'ok' if ok else 'FAILED'}, tolerance {CHECK_TOLERANCE:g}); "
          f"this checks the written files, not the name map or the recipe")
    if unrounded is not None:
        print(f"check: against the unrounded tensors: max {what} difference "
              f"{max_difference(unrounded, written, batch):.3g} (f16 rounding; reported, not checked)")
    if not ok:
        fail(f"check failed: {args.out} differs from the checkpoint's tensors by {diff:.3g} "
             f"(> {CHECK_TOLERANCE:g})")


def layout_hint(tensors, layout, name_map):
    """' (the names look like --layout L)' when another built-in layout's
    default names find encoder layers in the checkpoint and fit more of its
    tensors than the map in use; else ''."""
    def fitted(mapping):
        regexes = [spec_regex(spec) for spec in set(mapping.values())]
        return sum(1 for name in tensors if any(rx.match(name) for rx in regexes))

    current, best = fitted(name_map), None
    for other in ("tutorial", "per-head", "torch-nn-transformer"):
        if other == layout:
            continue
        defaults = default_map(other)
        layers = [spec for key, spec in defaults.items() if key.startswith("encoder_layers.")]
        if not Checkpoint(tensors).layer_indices(layers):
            continue
        n = fitted(defaults)
        if n > current and (best is None or n > best[0]):
            best = (n, other)
    return f" (the names look like --layout {best[1]})" if best else ""


def add_arguments(p):
    """The options of `tfmc-convert pytorch`."""
    p.add_argument("checkpoint", metavar="CKPT.pt")
    p.add_argument("-o", dest="out", metavar="DIR", required=True, help="output model directory")
    p.add_argument("--layout", required=True, choices=["tutorial", "per-head", "torch-nn-transformer", "custom"])
    p.add_argument("--names", metavar="MAP.json", help="tfmc name -> checkpoint name overrides")
    p.add_argument("--src-vocab", metavar="FILE")
    p.add_argument("--tgt-vocab", metavar="FILE")
    p.add_argument("--num-heads", type=int, metavar="N")
    p.add_argument("--activation", choices=list(ref.ACTIVATIONS))
    p.add_argument("--norm", choices=["post", "pre"])
    p.add_argument("--max-len", type=int, metavar="N")
    p.add_argument("--layer-norm-eps", type=float, default=1e-5, metavar="E")
    p.add_argument("--embedding-scale", action="store_true")
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--encoder-layer", metavar="RECIPE", help="encoder block recipe (overrides the layout's)")
    p.add_argument("--decoder-layer", metavar="RECIPE", help="decoder block recipe (overrides the layout's)")


def run(args):
    """Convert, write and check; returns 0 (errors are ConversionErrors)."""
    check_output_dir(args.out)
    if args.max_len is not None and args.max_len <= 0:
        fail("--max-len must be positive")
    if not (args.layer_norm_eps > 0 and args.layer_norm_eps < float("inf")):
        fail("--layer-norm-eps must be a positive finite number")
    if args.layout == "custom" and not args.names:
        fail("--layout custom needs --names MAP.json")
    for stack in ("encoder", "decoder"):
        text = getattr(args, f"{stack}_layer")
        if text is not None:
            check_recipe_option(text, stack)

    name_map = default_map(args.layout)
    if args.names:
        name_map.update(read_names(args.names))
    tensors = load_checkpoint(args.checkpoint)
    original = dict(tensors)  # as read, for the check
    sinusoids, learned = split_positional_tables(tensors, name_map)
    try:
        arch, model, sources = build(args, tensors, name_map, sinusoids, learned)
    except NamingFailure as e:
        fail(f"{e}{layout_hint(tensors, args.layout, name_map)}")

    if args.src_vocab:
        check_vocab(args.src_vocab, model.src_vocab_size, "source")
    if args.tgt_vocab:
        check_vocab(args.tgt_vocab, model.tgt_vocab_size, "target")
    unrounded = None
    if args.dtype == "f16":  # the in-memory model holds what the file will hold
        unrounded = copy.deepcopy(model)
        with torch.no_grad():
            for t in model.state_dict().values():
                t.copy_(t.half().float())
    write_model_dir(args, model)

    a = arch
    print(f"imported {args.checkpoint} ({args.layout}): d_model {a['d_model']}, {a['num_heads']} heads, "
          f"{a['num_encoder_layers']}+{a['num_decoder_layers']} layers, d_ff {a['d_ff']}, "
          f"vocab {model.src_vocab_size}/{model.tgt_vocab_size or '-'}, {a['activation']}, max_len {a['max_len']}"
          + (", position tables" if model.position_tables else ""))
    print(f"  encoder layer: {model.encoder_recipe}" + ("; final norm" if model.encoder_final_norm else ""))
    if model.has_decoder:
        print(f"  decoder layer: {model.decoder_recipe}" + ("; final norm" if model.decoder_final_norm else ""))
    print(f"  wrote {os.path.join(args.out, 'model.json')}")
    run_check(args, model, original, name_map, unrounded, sources)
    return 0


def write_model_dir(args, model):
    """model.json, model.safetensors and the vocabularies (the given files,
    else generated ones) in args.out, laid out as tfmc.reference.tfm.export does."""
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot create '{args.out}': {e.strerror}")
    desc = {
        "format": "tfm-model", "version": 1,
        "architecture": ref.architecture_fields(model.arch),
        "source": {"vocab": "src.vocab", "tokenizer": "word"},
        "target": {"vocab": "tgt.vocab", "tokenizer": "word"},
        "special_tokens": dict(model.special),
        "weights": "model.safetensors",
    }
    vocabs = [("src.vocab", args.src_vocab, model.src_vocab_size, "s")]
    if model.has_decoder:
        vocabs.append(("tgt.vocab", args.tgt_vocab, model.tgt_vocab_size, "t"))
    else:
        del desc["target"]
    write_model_json(os.path.join(args.out, "model.json"), desc)
    for fname, given, size, prefix in vocabs:
        path = os.path.join(args.out, fname)
        if given:
            copy_file(given, path)
        else:
            write_vocab(path, ref.vocab_tokens(size, prefix))
    write_safetensors(os.path.join(args.out, "model.safetensors"), model.state_dict(),
                      dtype=args.dtype.upper())
