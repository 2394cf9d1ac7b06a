"""Independent PyTorch reference ("oracle") for tfmc.

Implements the semantics of DESIGN.md ("Model description file" and
"Semantics") as plainly as possible: float32 everywhere, no KV cache, greedy
and beam search by full recomputation, one source row at a time.

Besides the version-1 `norm: post|pre` models it runs *block recipes*
(`architecture.encoder_layer` / `decoder_layer`, see docs/reference.md):
a small language saying how a layer combines its sublayers, e.g.
`x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))`. Recipes are parsed
and interpreted here, written independently of tfmc's C++ parser but
accepting and rejecting exactly what it does, with its messages
(`Recipe`, `recipe_problem`). Models with `num_decoder_layers: 0` are
encoder-only (no target side).

It also runs what the converters (tfmc.convert) write, as
docs/model-format.md defines it: the "silu" activation, position tables
("positional_encoding": "table"), special_tokens.decoder_start and
never_generate (`decoder_start`, `never_generate`, checked by
`check_special_tokens`), and sentencepiece sides whose ids come from the
vocabulary file ("piece_ids": "vocab"; `SentencePieceSide`, `load_tokenizer`).

Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy;
sentencepiece for the tokenizers only).
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

# The version-1 architecture fields, in the order model.json lists them.
# `norm` is optional once every stack has an explicit recipe (see below).
ARCH_FIELDS = {
    "d_model": int, "num_heads": int, "num_encoder_layers": int,
    "num_decoder_layers": int, "d_ff": int, "max_len": int,
    "activation": str, "norm": str, "layer_norm_eps": float,
    "embedding_scale": bool, "positional_encoding": str,
}
# Optional fields added by block recipes; written after ARCH_FIELDS, and only
# when set, so that version-1 model.json files stay byte-for-byte the same.
OPTIONAL_ARCH_FIELDS = {
    "encoder_layer": str, "decoder_layer": str,
    "encoder_final_norm": bool, "decoder_final_norm": bool,
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


ACTIVATIONS = ("relu", "gelu", "silu")
POSITIONAL_ENCODINGS = ("sinusoidal", "table")


# --------------------------------------------------------------------------- block recipes
#
#   recipe := stmt (';' stmt)* [';']      stmt := NAME '=' expr
#   expr   := term ('+' term)*            term := NAME | FUNC '(' expr ')'
#   FUNC   := self_attn | cross_attn | ffn | norm1 … norm9
#
# `x` holds the layer input; the layer output is the final value of `x`.
# Other names are local values, assigned before use. self_attn and ffn occur
# exactly once per layer, cross_attn exactly once in a decoder layer and
# never in an encoder layer; norms any number of times (each normK has its
# own weights `{layer}.normK.weight/bias`); every assigned value must reach
# the layer output.
#
# `Recipe` accepts and rejects exactly what tfmc's parser does
# (frontends/model/LayerRecipe.cpp, written independently from the same
# rules), with the same messages "column N: <problem>": N is the 1-based
# byte column in the UTF-8 text; whitespace is space, tab, CR and LF only;
# names are ASCII ([A-Za-z_][A-Za-z0-9_]*); self_attn, cross_attn, ffn and
# every norm<digits> are sublayer names, never values (norm0, norm10 are
# unknown sublayers); the checks run in tfmc's order: characters (the whole
# text first), syntax and per-term rules left to right, missing sublayers
# (reported at the column after the text), then unused assignments.

RECIPE_SUBLAYERS = ("self_attn", "cross_attn", "ffn")
RECIPE_FUNCS = RECIPE_SUBLAYERS + tuple(f"norm{k}" for k in range(1, 10))

# The version-1 `norm` shorthands, written as recipes.
SHORTHAND_RECIPES = {
    ("encoder", "post"): "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))",
    ("decoder", "post"): "x = norm1(x + self_attn(x)); x = norm2(x + cross_attn(x)); "
                         "x = norm3(x + ffn(x))",
    ("encoder", "pre"): "x = x + self_attn(norm1(x)); x = x + ffn(norm2(x))",
    ("decoder", "pre"): "x = x + self_attn(norm1(x)); x = x + cross_attn(norm2(x)); "
                        "x = x + ffn(norm3(x))",
}

_RECIPE_SPACE = b" \t\r\n"
_RECIPE_SYMBOLS = b"=+();"
_NAME_START = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset(b"0123456789")


class RecipeError(ValueError):
    """A recipe that does not parse or breaks a rule.

    str(e): "{stack} recipe {text!r}: column N: <problem>". Attributes:
    stack, text, column (1-based byte column, as tfmc counts; None only for
    a recipe that is not a string), problem, and message (tfmc's text,
    "column N: <problem>")."""

    def __init__(self, stack, text, column, problem):
        self.stack, self.text, self.column, self.problem = stack, text, column, problem
        self.message = problem if column is None else f"column {column}: {problem}"
        super().__init__(f"{stack} recipe {text!r}: {self.message}")


def _recipe_is_norm(name):
    """normK, K in 1..9: a norm sublayer."""
    return len(name) == 5 and name.startswith("norm") and "1" <= name[4] <= "9"


def _recipe_is_reserved(name):
    """Sublayer names and every norm<digits>: never value names."""
    return name in RECIPE_SUBLAYERS or (len(name) > 4 and name.startswith("norm")
                                        and all(c in "0123456789" for c in name[4:]))


def _recipe_bytes(text):
    """The bytes tfmc sees: UTF-8 (an argv str with undecodable bytes,
    surrogate-escaped by Python, gets its original bytes back)."""
    if isinstance(text, bytes):
        return text
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


class Recipe:
    """A parsed block recipe.

    statements: list of (name, expr) where expr is one of
        ("var", name) | ("call", func, expr) | ("sum", [expr, expr, ...]).
    calls: {func: number of calls} for every name in RECIPE_FUNCS.
    norms: sorted list of the norm numbers K used (normK).
    """

    def __init__(self, text, stack):
        if stack not in ("encoder", "decoder"):
            raise ValueError(f"stack must be 'encoder' or 'decoder', got {stack!r}")
        self.text = text
        self.stack = stack
        if not isinstance(text, (str, bytes)):
            raise RecipeError(stack, text, None, f"expected a string, got {type(text).__name__}")
        self._tokens = self._tokenize(_recipe_bytes(text))
        self._pos = 0
        self._assigned = {"x"}
        self._columns = []  # the column of each statement's target
        self.statements = []
        self.calls = {f: 0 for f in RECIPE_FUNCS}
        self._parse()
        self._check_counts()
        self._check_liveness()
        self.norms = sorted(int(f[4:]) for f, n in self.calls.items() if f.startswith("norm") and n)
        del self._tokens, self._pos, self._assigned, self._columns

    # -- errors

    def _fail(self, column, problem):
        raise RecipeError(self.stack, self.text, column, problem)

    # -- lexer: (kind, text, column); kind is "name", "symbol" or "end"

    def _tokenize(self, data):
        tokens, i = [], 0
        while i < len(data):
            c = data[i]
            if c in _RECIPE_SPACE:
                i += 1
            elif c in _NAME_START:
                start = i
                while i < len(data) and data[i] in _NAME_CHARS:
                    i += 1
                tokens.append(("name", data[start:i].decode("ascii"), start + 1))
            elif c in _RECIPE_SYMBOLS:
                tokens.append(("symbol", chr(c), i + 1))
                i += 1
            else:
                shown = chr(c) if 0x20 <= c <= 0x7E else f"\\x{c:02x}"
                self._fail(i + 1, f"unexpected character '{shown}'")
        tokens.append(("end", "", len(data) + 1))
        return tokens

    def _peek(self):
        return self._tokens[self._pos]

    def _next(self):
        tok = self._tokens[self._pos]
        if self._pos < len(self._tokens) - 1:  # the end token stays
            self._pos += 1
        return tok

    @staticmethod
    def _describe(tok):
        return "the end of the recipe" if tok[0] == "end" else f"'{tok[1]}'"

    def _expect(self, symbol):
        tok = self._next()
        if tok[:2] != ("symbol", symbol):
            self._fail(tok[2], f"expected '{symbol}', found {self._describe(tok)}")

    # -- parser

    def _parse(self):
        while True:
            if self._peek()[0] == "end":
                if not self.statements:
                    self._fail(self._peek()[2], "expected a statement")
                return
            self._statement()
            if self._peek()[0] == "end":
                return
            self._expect(";")

    def _statement(self):
        tok = self._next()
        kind, name, column = tok
        if kind != "name":
            self._fail(column, f"expected a value name, found {self._describe(tok)}")
        if _recipe_is_reserved(name):
            self._fail(column, f"'{name}' is a sublayer, not a value name")
        self._expect("=")
        value = self._expr()
        self.statements.append((name, value))
        self._columns.append(column)
        self._assigned.add(name)

    def _expr(self):
        terms = [self._term()]
        while self._peek()[:2] == ("symbol", "+"):
            self._next()
            terms.append(self._term())
        return terms[0] if len(terms) == 1 else ("sum", terms)

    def _term(self):
        tok = self._next()
        kind, name, column = tok
        if kind != "name":
            self._fail(column, f"expected a value or a sublayer, found {self._describe(tok)}")
        if not _recipe_is_reserved(name):
            if name not in self._assigned:
                self._fail(column, f"'{name}' is used before it is assigned")
            return ("var", name)
        if name == "cross_attn" and self.stack == "encoder":
            self._fail(column, "cross_attn is only allowed in a decoder layer")
        if name not in RECIPE_SUBLAYERS and not _recipe_is_norm(name):
            self._fail(column, f"unknown sublayer '{name}' (norms are norm1 ... norm9)")
        self.calls[name] += 1
        if name in RECIPE_SUBLAYERS and self.calls[name] > 1:
            self._fail(column, f"{name} occurs more than once (a layer has one)")
        self._expect("(")
        inner = self._expr()
        self._expect(")")
        return ("call", name, inner)

    def _check_counts(self):
        """A missing sublayer is noticed at the end of the text."""
        required = ("self_attn", "cross_attn", "ffn") if self.stack == "decoder" else ("self_attn", "ffn")
        layer = "a decoder" if self.stack == "decoder" else "an encoder"
        for name in required:
            if not self.calls[name]:
                self._fail(self._tokens[-1][2], f"no {name} ({layer} layer needs exactly one)")

    def _check_liveness(self):
        """Every assigned value must reach the layer output (the final x)."""
        def reads(e, out):
            if e[0] == "var":
                out.add(e[1])
            elif e[0] == "call":
                reads(e[2], out)
            else:
                for t in e[1]:
                    reads(t, out)

        live = {"x"}
        for (name, e), column in zip(reversed(self.statements), reversed(self._columns)):
            if name not in live:
                self._fail(column, f"the value assigned to '{name}' is never used "
                                   f"(the layer output is the final x)")
            live.discard(name)
            reads(e, live)

    # -- evaluation

    def run(self, x, funcs):
        """Evaluate on input x; funcs maps each function name used to a callable."""
        env = {"x": x}

        def ev(e):
            if e[0] == "var":
                return env[e[1]]
            if e[0] == "call":
                return funcs[e[1]](ev(e[2]))
            total = ev(e[1][0])  # sums are evaluated left to right
            for t in e[1][1:]:
                total = total + ev(t)
            return total

        for name, e in self.statements:
            env[name] = ev(e)
        return env["x"]

    def __str__(self):
        def show(e):
            if e[0] == "var":
                return e[1]
            if e[0] == "call":
                return f"{e[1]}({show(e[2])})"
            return " + ".join(show(t) for t in e[1])

        return "; ".join(f"{n} = {show(e)}" for n, e in self.statements)


def recipe_problem(text, stack):
    """None when `text` is a valid `stack` ("encoder" / "decoder") layer
    recipe, else tfmc's message "column N: <problem>"."""
    try:
        Recipe(text, stack)
    except RecipeError as e:
        return e.message
    return None


def resolve_architecture(arch):
    """Check the recipe-related fields of an architecture dict and work out
    what each stack computes.

    Returns (encoder Recipe, decoder Recipe or None when encoder-only,
    encoder_final_norm, decoder_final_norm). Rules: an explicit recipe
    overrides the `norm` shorthand for its stack; `norm` may be absent only
    when every present stack has a recipe; final norms default to
    (norm == "pre"), and to false when `norm` is absent.
    """
    a = arch
    for k in ("d_model", "num_heads", "num_encoder_layers", "num_decoder_layers", "d_ff",
              "max_len", "activation", "layer_norm_eps", "embedding_scale"):
        if k not in a:
            raise ValueError(f"architecture.{k} missing")
    if a["num_encoder_layers"] < 1:
        raise ValueError("architecture.num_encoder_layers must be >= 1")
    if a["num_decoder_layers"] < 0:
        raise ValueError("architecture.num_decoder_layers must be >= 0")
    has_decoder = a["num_decoder_layers"] > 0
    norm = a.get("norm")
    if norm is not None and norm not in ("post", "pre"):
        raise ValueError(f"architecture.norm: expected \"post\" or \"pre\", got {norm!r}")
    if not has_decoder:
        for k in ("decoder_layer", "decoder_final_norm"):
            if k in a:
                raise ValueError(f"architecture.{k} is not allowed in an encoder-only model "
                                 f"(num_decoder_layers is 0)")
    for k in ("encoder_final_norm", "decoder_final_norm"):
        if k in a and not isinstance(a[k], bool):
            raise ValueError(f"architecture.{k}: expected true or false, got {a[k]!r}")

    def recipe(stack):
        field = f"{stack}_layer"
        if field in a:
            return Recipe(a[field], stack)
        if norm is None:
            raise ValueError(f"architecture.norm missing (required because there is no "
                             f"architecture.{field})")
        return Recipe(SHORTHAND_RECIPES[(stack, norm)], stack)

    enc = recipe("encoder")
    dec = recipe("decoder") if has_decoder else None
    default_final = norm == "pre"
    enc_final = a.get("encoder_final_norm", default_final)
    dec_final = a.get("decoder_final_norm", default_final) if has_decoder else False
    return enc, dec, enc_final, dec_final


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
        if self.activation == "relu":
            h = torch.relu(h)
        elif self.activation == "silu":
            h = h * torch.sigmoid(h)
        else:
            h = F.gelu(h)  # exact erf gelu
        return self.linear2(h)


def _add_norms(layer, recipe, d, eps):
    """Register norm{K} (LayerNorm) for every K the recipe uses, in order of K."""
    for k in recipe.norms:
        setattr(layer, f"norm{k}", nn.LayerNorm(d, eps=eps))


def _norm_funcs(layer, recipe):
    return {f"norm{k}": getattr(layer, f"norm{k}") for k in recipe.norms}


class EncoderLayer(nn.Module):
    """One encoder layer: self_attention, feed_forward and the recipe's norms,
    combined as the recipe says (default: the `norm` shorthand)."""

    def __init__(self, a, recipe=None):
        super().__init__()
        d, eps = a["d_model"], a["layer_norm_eps"]
        self.recipe = recipe or resolve_architecture(a)[0]
        self.self_attention = MultiHeadAttention(d, a["num_heads"])
        self.feed_forward = FeedForward(d, a["d_ff"], a["activation"])
        _add_norms(self, self.recipe, d, eps)

    def forward(self, x, mask):
        funcs = _norm_funcs(self, self.recipe)
        funcs["self_attn"] = lambda e: self.self_attention(e, e, mask)
        funcs["ffn"] = self.feed_forward
        return self.recipe.run(x, funcs)


class DecoderLayer(nn.Module):
    """One decoder layer: masked_self_attention, enc_dec_attention,
    feed_forward and the recipe's norms."""

    def __init__(self, a, recipe=None):
        super().__init__()
        d, eps = a["d_model"], a["layer_norm_eps"]
        self.recipe = recipe or resolve_architecture(a)[1]
        self.masked_self_attention = MultiHeadAttention(d, a["num_heads"])
        self.enc_dec_attention = MultiHeadAttention(d, a["num_heads"])
        self.feed_forward = FeedForward(d, a["d_ff"], a["activation"])
        _add_norms(self, self.recipe, d, eps)

    def forward(self, x, mem, self_mask, cross_mask):
        funcs = _norm_funcs(self, self.recipe)
        funcs["self_attn"] = lambda e: self.masked_self_attention(e, e, self_mask)
        funcs["cross_attn"] = lambda e: self.enc_dec_attention(e, mem, cross_mask)
        funcs["ffn"] = self.feed_forward
        return self.recipe.run(x, funcs)


# --------------------------------------------------------------------------- search


def length_limit(max_length, src_length=None, max_length_factor=0.0, max_length_offset=10):
    """The most tokens (eos included) a row may generate: max_length when
    max_length_factor A is 0, else min(max_length, ceil(A * S) + B), with
    S = src_length (the source's ids + eos, after truncation) and
    B = max_length_offset. A * S is a float64 product, rounded up exactly
    (e.g. A = 0.1, S = 30 gives ceil(3.0000000000000004) = 4)."""
    factor = float(max_length_factor)
    if factor < 0 or not math.isfinite(factor):
        raise ValueError(f"max_length_factor must be >= 0, got {max_length_factor!r}")
    if factor == 0.0:
        return max_length
    if src_length is None:
        raise ValueError("max_length_factor needs the source length (src_length)")
    return min(max_length, math.ceil(factor * int(src_length)) + int(max_length_offset))


def ngram_forbidden(generated, n, eos):
    """Tokens that no_repeat_ngram_size n forbids after `generated` (ids
    without bos/eos): v is forbidden when the n-gram made of the last n-1
    generated tokens and v already occurs in `generated` (n == 1: v occurs in
    it). eos is never forbidden. Returns a sorted list."""
    n, t = int(n), len(generated)
    if n <= 0 or t < n - 1:
        return []
    if n == 1:
        bad = set(generated)
    else:
        tail = list(generated[t - n + 1:])
        bad = {generated[i + n - 1] for i in range(t - n + 1) if list(generated[i:i + n - 1]) == tail}
    bad.discard(eos)
    return sorted(bad)


def apply_repetition_penalty(logits, generated, penalty):
    """CTRL / Hugging Face repetition penalty on one row of float32 logits:
    for each distinct id in `generated`, l -> l / P if l > 0 else l * P, in
    float32 (P rounded to float32 first). Returns a new float32 array (the
    input itself when P == 1 or nothing was generated)."""
    if penalty == 1.0 or not generated:
        return logits
    out = np.array(logits, dtype=np.float32, copy=True)
    p = np.float32(penalty)
    idx = sorted(set(int(v) for v in generated))
    vals = out[idx]
    out[idx] = np.where(vals > 0, vals / p, vals * p).astype(np.float32)
    return out


def _check_options(no_repeat_ngram_size, repetition_penalty):
    if int(no_repeat_ngram_size) < 0:
        raise ValueError(f"no_repeat_ngram_size must be >= 0, got {no_repeat_ngram_size!r}")
    if not (float(repetition_penalty) > 0 and math.isfinite(float(repetition_penalty))):
        raise ValueError(f"repetition_penalty must be > 0, got {repetition_penalty!r}")


def greedy_search(step_logits, special, min_length=0, max_length=20, margins=None, *,
                  src_length=None, max_length_factor=0.0, max_length_offset=10,
                  no_repeat_ngram_size=0, repetition_penalty=1.0):
    """Greedy decoding of one source line (DESIGN.md, plus the decoding
    options of docs/reference.md).

    step_logits(prefixes) -> float32 numpy [len(prefixes), V]: the logits of
    the last position of each prefix (lists of ids starting with the
    decoder-start token, bos by default, all of one length). Returns the
    generated ids (no decoder-start token, no eos). If `margins` is a list,
    appends best-minus-second-best allowed logit per step.

    Per step: float32 logits -> repetition penalty -> the never_generate ids
    (default pad, bos), eos before min_length and n-gram-forbidden tokens
    removed -> argmax (ties: lowest id). At most length_limit(...) tokens,
    eos included; a step where every token is removed ends the row like eos."""
    s = special
    _check_options(no_repeat_ngram_size, repetition_penalty)
    limit = length_limit(max_length, src_length, max_length_factor, max_length_offset)
    out = []
    for _ in range(limit):
        row = step_logits([[decoder_start(s)] + out])[0]
        row = apply_repetition_penalty(row, out, repetition_penalty)
        logits = row.astype(np.float64)
        logits[_disallowed(s, len(out), min_length)] = -np.inf
        logits[ngram_forbidden(out, no_repeat_ngram_size, s["eos"])] = -np.inf
        if not np.isfinite(logits).any():
            break  # nothing allowed: the row ends as if eos had been chosen
        tok = int(np.argmax(logits))  # first maximum = lowest id on ties
        if margins is not None:
            margins.append(logits[tok] - np.max(np.delete(logits, tok)))
        if tok == s["eos"]:
            break
        out.append(tok)
    return out


def beam_search(step_logits, special, beam_size, alpha=1.0, min_length=0, max_length=20,
                n_best=None, margins=None, *, src_length=None, max_length_factor=0.0,
                max_length_offset=10, no_repeat_ngram_size=0, repetition_penalty=1.0):
    """Beam search of one source line as in DESIGN.md (step_logits as for greedy_search).
    Returns [(ids, normalised_score)] best first (at most n_best, default beam_size).
    If `margins` is a list, appends score gaps at every decision boundary.

    Per step and hypothesis: float32 logits -> repetition penalty ->
    log_softmax (float32, over all tokens) -> the never_generate ids (default
    pad, bos), eos before min_length and n-gram-forbidden tokens removed
    (they are not candidates). The row ends at L = length_limit(...) steps;
    the remaining actives then finish with s / L^alpha."""
    s, K = special, beam_size
    _check_options(no_repeat_ngram_size, repetition_penalty)
    limit = length_limit(max_length, src_length, max_length_factor, max_length_offset)
    active = [([], 0.0)]             # (generated ids, summed log-prob)
    finished = []                    # (norm score, finish order, ids)
    for step in range(limit):
        L = step + 1                 # generated tokens incl. this step's token
        rows = step_logits([[decoder_start(s)] + h for h, _ in active])
        rows = np.stack([apply_repetition_penalty(rows[h], ids, repetition_penalty)
                         for h, (ids, _) in enumerate(active)])
        logits = torch.from_numpy(rows)
        logp = torch.log_softmax(logits, dim=-1).numpy().astype(np.float64)
        logp[:, _disallowed(s, step, min_length)] = -np.inf
        for h, (ids, _) in enumerate(active):
            logp[h, ngram_forbidden(ids, no_repeat_ngram_size, s["eos"])] = -np.inf
        cands = [(sc + logp[h, v], h, v) for h, (_, sc) in enumerate(active)
                 for v in range(logp.shape[1]) if logp[h, v] != -np.inf]
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
        if len(finished) >= K or not nxt:  # no active hypothesis left: the row ends
            break
        active = nxt
    else:  # reached the length limit with fewer than K finished
        for ids, score in active:
            finished.append((score / max(limit, 1) ** alpha, len(finished), ids))
    finished.sort(key=lambda f: (-f[0], f[1]))
    n = n_best or K
    if margins is not None:
        for i in range(min(n, len(finished) - 1)):
            margins.append(finished[i][0] - finished[i + 1][0])
    return [(ids, float(sc)) for sc, _, ids in finished[:n]]


def decoder_start(special):
    """The first token of every target row: special_tokens.decoder_start, default bos."""
    return special["decoder_start"] if "decoder_start" in special else special["bos"]


def never_generate(special):
    """The ids search never chooses: special_tokens.never_generate, default
    [pad, bos] ([pad] without bos)."""
    if "never_generate" in special:
        return list(special["never_generate"])
    return [special["pad"]] + ([special["bos"]] if "bos" in special else [])


def _disallowed(special, generated, min_length):
    bad = never_generate(special)
    if generated < min_length:
        bad.append(special["eos"])
    return bad


class DecodingMixin:
    """Id-level helpers shared by every model with DESIGN.md's interface.

    A class using it provides `special` (dict), `max_len` (int),
    `encode(src) -> mem` and `decode(tgt, mem, src) -> logits` on padded
    LongTensor batches, and `forward(src, tgt) -> logits`. The seed models in
    tfmc.reference.seeds use it too, so every model decodes with the same code."""

    def source_ids(self, ids):
        """Token ids (no eos) -> source sequence: ids + eos, truncated to max_len."""
        ids = list(ids)
        max_len = self.max_len
        if len(ids) + 1 > max_len:
            ids = ids[: max_len - 1]
        return ids + [self.special["eos"]]

    def pad_batch(self, rows):
        width = max(len(r) for r in rows)
        pad = self.special["pad"]
        return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)

    @torch.no_grad()
    def forward_ids(self, src_lines, tgt_lines):
        """Teacher forcing. src_lines: id lists without eos; tgt_lines: id lists starting with
        the decoder-start token (decoder_start(self.special), bos by default).
        Returns numpy float32 [B, T, V], T = longest target."""
        src = self.pad_batch([self.source_ids(s) for s in src_lines])
        tgt = self.pad_batch(tgt_lines)
        lengths = [len(r) for r in tgt_lines]
        return self.forward_padded(src, tgt, lengths).numpy().astype(np.float32)

    def forward_padded(self, src, tgt, tgt_lengths):
        """forward() of right-padded target rows of `tgt_lengths`. By default
        the lengths are not used: the seed, Marian and fairseq references
        mask as their originals do."""
        return self.forward(src, tgt)

    @torch.no_grad()
    def encode_states(self, src_lines):
        """Encoder output for id lines built like translate's sources (ids + eos,
        truncated, right-padded): numpy float32 [B, L, d_model], L = longest
        source incl. eos. Rows at positions >= a line's length are exactly zero."""
        rows = [self.source_ids(s) for s in src_lines]
        states = self.encode(self.pad_batch(rows)).numpy().astype(np.float32)
        for b, r in enumerate(rows):
            states[b, len(r):] = 0.0
        return states

    @torch.no_grad()
    def next_logits(self, src_ids, prefixes):
        """Logits of the last position for each prefix (all equal length), one source row."""
        src = torch.tensor([self.source_ids(src_ids)], dtype=torch.long)
        mem = self.encode(src)
        n = len(prefixes)
        tgt = torch.tensor(prefixes, dtype=torch.long)
        logits = self.decode(tgt, mem.expand(n, -1, -1), src.expand(n, -1))
        return logits[:, -1, :].numpy().astype(np.float32)

    def greedy(self, src_ids, min_length=0, max_length=20, margins=None, **options):
        """Greedy decoding of one source line (see greedy_search). `options`:
        max_length_factor, max_length_offset, no_repeat_ngram_size,
        repetition_penalty (the source length comes from this line).
        The decoder has max_len positions, so at most max_len tokens are
        generated whatever max_length says (as tfmc does)."""
        max_length = min(max_length, self.max_len)
        return greedy_search(lambda p: self.next_logits(src_ids, p), self.special,
                             min_length, max_length, margins,
                             src_length=len(self.source_ids(src_ids)), **options)

    def beam(self, src_ids, beam_size, alpha=1.0, min_length=0, max_length=20, n_best=None,
             margins=None, **options):
        """Beam search of one source line (see beam_search; `options` and the
        max_len cap as for greedy)."""
        max_length = min(max_length, self.max_len)
        return beam_search(lambda p: self.next_logits(src_ids, p), self.special, beam_size,
                           alpha, min_length, max_length, n_best, margins,
                           src_length=len(self.source_ids(src_ids)), **options)


class TranslationTransformer(nn.Module, DecodingMixin):
    """The reference model. `arch` is model.json's architecture object.
    With num_decoder_layers 0 it is encoder-only: no decoder_embedding,
    decoder layers or output projection (tgt_vocab_size is then ignored)."""

    def __init__(self, arch, src_vocab_size, tgt_vocab_size, special=None):
        super().__init__()
        self.arch = dict(arch)
        self.special = dict(special or DEFAULT_SPECIAL)
        a = self.arch
        d = a["d_model"]
        # (An odd d_model is allowed, as docs/model-format.md allows it: the
        # sinusoidal table's last column is then a sine.)
        if d % a["num_heads"] != 0:
            raise ValueError("num_heads must divide d_model")
        if a["activation"] not in ACTIVATIONS:
            raise ValueError(f"architecture.activation: expected \"relu\", \"gelu\" or \"silu\", "
                             f"got {a['activation']!r}")
        positions = a.get("positional_encoding", "sinusoidal")
        if positions not in POSITIONAL_ENCODINGS:
            raise ValueError(f"architecture.positional_encoding: expected \"sinusoidal\" or \"table\", "
                             f"got {positions!r}")
        enc, dec, enc_final, dec_final = resolve_architecture(a)
        self.encoder_recipe, self.decoder_recipe = enc, dec
        self.encoder_final_norm, self.decoder_final_norm = enc_final, dec_final
        self.encoder_embedding = nn.Embedding(src_vocab_size, d)
        if dec is not None:
            self.decoder_embedding = nn.Embedding(tgt_vocab_size, d)
        self.encoder_layers = nn.ModuleList(EncoderLayer(a, enc) for _ in range(a["num_encoder_layers"]))
        self.decoder_layers = nn.ModuleList(DecoderLayer(a, dec) for _ in range(a["num_decoder_layers"]))
        if enc_final:
            self.encoder_norm = nn.LayerNorm(d, eps=a["layer_norm_eps"])
        if dec_final:
            self.decoder_norm = nn.LayerNorm(d, eps=a["layer_norm_eps"])
        if dec is not None:
            self.linear = nn.Linear(d, tgt_vocab_size)
        # "table": the position tables come last in the state_dict, as in
        # docs/model-format.md's tensor list.
        self.position_tables = positions == "table"
        if self.position_tables:
            self.encoder_positions = nn.Embedding(a["max_len"], d)
            if dec is not None:
                self.decoder_positions = nn.Embedding(a["max_len"], d)

    @property
    def has_decoder(self):
        return self.decoder_recipe is not None

    @property
    def max_len(self):
        return self.arch["max_len"]

    @property
    def src_vocab_size(self):
        return self.encoder_embedding.num_embeddings

    @property
    def tgt_vocab_size(self):
        return self.linear.out_features if self.has_decoder else None

    def _embed(self, table, ids):
        """Token embeddings (scaled) plus, at position p (from 0), the
        sinusoid's row p, or row p of the side's stored position table."""
        d = self.arch["d_model"]
        scale = math.sqrt(d) if self.arch["embedding_scale"] else 1.0
        if self.position_tables:
            positions = self.encoder_positions if table is self.encoder_embedding else self.decoder_positions
            return table(ids) * scale + positions.weight[: ids.shape[1]][None]
        return table(ids) * scale + positional_encoding(ids.shape[1], d)[None]

    def encode(self, src):
        """src: LongTensor [B,S] (eos appended, right-padded)."""
        pad = self.special["pad"]
        S = src.shape[1]
        mask = (src == pad)[:, None, :].expand(-1, S, -1)
        x = self._embed(self.encoder_embedding, src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x) if self.encoder_final_norm else x

    def decode(self, tgt, mem, src, tgt_lengths=None):
        """tgt [B,T] (starts with the decoder-start token, right-padded) -> logits [B,T,V].
        Target positions are masked by the rows' lengths `tgt_lengths` (none:
        every row is T long), never by their ids (docs/model-format.md): a
        pad the model generates, or a decoder start token equal to pad
        (Marian's), is attended like any other token. (For the positions
        inside a row the causal mask alone would do; the lengths keep the
        padded positions' logits as they were.)"""
        if not self.has_decoder:
            raise ValueError("this model is encoder-only (num_decoder_layers is 0)")
        pad = self.special["pad"]
        B, T = tgt.shape
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        padding = torch.zeros(B, T, dtype=torch.bool)
        if tgt_lengths is not None:
            padding = torch.arange(T)[None, :] >= torch.tensor(tgt_lengths)[:, None]
        self_mask = causal[None] | padding[:, None, :]
        cross_mask = (src == pad)[:, None, :].expand(-1, T, -1)
        x = self._embed(self.decoder_embedding, tgt)
        for layer in self.decoder_layers:
            x = layer(x, mem, self_mask, cross_mask)
        if self.decoder_final_norm:
            x = self.decoder_norm(x)
        return self.linear(x)

    def forward(self, src, tgt, tgt_lengths=None):
        return self.decode(tgt, self.encode(src), src, tgt_lengths)

    def forward_padded(self, src, tgt, tgt_lengths):
        """The target rows masked by their lengths (decode())."""
        return self.forward(src, tgt, tgt_lengths)


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
    if model.has_decoder:
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


def architecture_fields(arch):
    """The architecture object as model.json writes it: the version-1 fields
    in their order (`norm` only when set), then the recipe fields that are set."""
    out = {k: arch[k] for k in ARCH_FIELDS if k in arch}
    out.update({k: arch[k] for k in OPTIONAL_ARCH_FIELDS if k in arch})
    return out


def export(model, out_dir, src_vocab_size=None, tgt_vocab_size=None, arch=None, dtype="F32",
           src_tokenizer="char", tgt_tokenizer="word"):
    """Write model.json, src.vocab, tgt.vocab and model.safetensors into out_dir.
    An encoder-only model has no target side: no `target` field, no tgt.vocab."""
    arch = dict(arch or model.arch)
    src_vocab_size = src_vocab_size or model.src_vocab_size
    tgt_vocab_size = tgt_vocab_size or model.tgt_vocab_size
    os.makedirs(out_dir, exist_ok=True)
    desc = {
        "format": "tfm-model", "version": 1,
        "architecture": architecture_fields(arch),
        "source": {"vocab": "src.vocab", "tokenizer": src_tokenizer},
        "target": {"vocab": "tgt.vocab", "tokenizer": tgt_tokenizer},
        "special_tokens": dict(model.special),
        "weights": "model.safetensors",
    }
    vocabs = [("src.vocab", src_vocab_size, "s"), ("tgt.vocab", tgt_vocab_size, "t")]
    if not model.has_decoder:
        del desc["target"]
        vocabs = vocabs[:1]
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
        f.write("\n")
    for fname, size, prefix in vocabs:
        with open(os.path.join(out_dir, fname), "w") as f:
            f.write("\n".join(vocab_tokens(size, prefix)) + "\n")
    tensors = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, dtype=dtype)


def _arch_from_json(arch):
    """Type-check and convert model.json's architecture object (unknown fields are errors)."""
    if not isinstance(arch, dict):
        raise ValueError("architecture must be a JSON object")
    arch = dict(arch)
    for k in arch:
        if k not in ARCH_FIELDS and k not in OPTIONAL_ARCH_FIELDS:
            raise ValueError(f"unknown field 'architecture.{k}'")
    for k, typ in ARCH_FIELDS.items():
        if k not in arch:
            if k == "norm":  # optional when recipes cover every stack (resolve_architecture)
                continue
            raise ValueError(f"architecture.{k} missing")
        arch[k] = typ(arch[k])
    for k, typ in OPTIONAL_ARCH_FIELDS.items():
        if k in arch and not isinstance(arch[k], typ):
            raise ValueError(f"architecture.{k}: expected a {'string' if typ is str else 'boolean'}, "
                             f"got {arch[k]!r}")
    if arch["positional_encoding"] not in POSITIONAL_ENCODINGS:
        raise ValueError(f"architecture.positional_encoding: expected \"sinusoidal\" or \"table\", "
                         f"got {arch['positional_encoding']!r}")
    if arch["activation"] not in ACTIVATIONS:
        raise ValueError(f"architecture.activation: expected \"relu\", \"gelu\" or \"silu\", "
                         f"got {arch['activation']!r}")
    return arch


SPECIAL_FIELDS = ("pad", "bos", "eos", "unk", "decoder_start", "never_generate")


def _is_id(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_special_tokens(special, src_vocab_size, tgt_vocab_size):
    """model.json's special_tokens as docs/model-format.md states them:
    pad, eos, unk (and bos, optional when decoder_start is given) distinct
    ids below both vocabulary sizes; decoder_start and never_generate (a list
    without repeats and without eos) below the target vocabulary size, and
    only in a translation model. tgt_vocab_size None: encoder-only. Raises
    ValueError with a one-line message naming the field."""
    if not isinstance(special, dict):
        raise ValueError("special_tokens must be a JSON object")
    for k in special:
        if k not in SPECIAL_FIELDS:
            raise ValueError(f"unknown field 'special_tokens.{k}'")
    required = ["pad", "eos", "unk"] + ([] if "decoder_start" in special else ["bos"])
    for k in required:
        if k not in special:
            why = " (required without special_tokens.decoder_start)" if k == "bos" else ""
            raise ValueError(f"missing field 'special_tokens.{k}'{why}")
    seen = {}
    for k in ("pad", "bos", "eos", "unk"):
        if k not in special:
            continue
        v = special[k]
        if not _is_id(v):
            raise ValueError(f"special_tokens.{k}: expected a non-negative integer, got {v!r}")
        if v in seen:
            raise ValueError(f"special_tokens.{k}: id {v} is also used by 'special_tokens.{seen[v]}'")
        seen[v] = k
        for side, size in (("source", src_vocab_size), ("target", tgt_vocab_size)):
            if size is not None and v >= size:
                raise ValueError(f"special_tokens.{k}: id {v} is out of range for the {side} "
                                 f"vocabulary ({size} tokens)")
    for k in ("decoder_start", "never_generate"):
        if k in special and tgt_vocab_size is None:
            raise ValueError(f"special_tokens.{k} is not allowed in an encoder-only model "
                             f"(num_decoder_layers is 0)")
    if "decoder_start" in special:
        v = special["decoder_start"]
        if not _is_id(v):
            raise ValueError(f"special_tokens.decoder_start: expected a non-negative integer, got {v!r}")
        if v >= tgt_vocab_size:
            raise ValueError(f"special_tokens.decoder_start: id {v} is out of range for the target "
                             f"vocabulary ({tgt_vocab_size} tokens)")
    if "never_generate" in special:
        ids = special["never_generate"]
        if not isinstance(ids, list):
            raise ValueError(f"special_tokens.never_generate: expected a list of token ids, got {ids!r}")
        for v in ids:
            if not _is_id(v):
                raise ValueError(f"special_tokens.never_generate: expected non-negative integers, got {v!r}")
            if v >= tgt_vocab_size:
                raise ValueError(f"special_tokens.never_generate: id {v} is out of range for the target "
                                 f"vocabulary ({tgt_vocab_size} tokens)")
            if v == special["eos"]:
                raise ValueError(f"special_tokens.never_generate: id {v} is eos, which must stay possible")
        if len(set(ids)) != len(ids):
            dup = next(v for i, v in enumerate(ids) if v in ids[:i])
            raise ValueError(f"special_tokens.never_generate: id {dup} is listed twice")


def load(path):
    """Load a model from a model directory or a model.json path."""
    json_path = path if path.endswith(".json") else os.path.join(path, "model.json")
    base = os.path.dirname(os.path.abspath(json_path))
    with open(json_path) as f:
        desc = json.load(f)
    if desc.get("format") != "tfm-model" or desc.get("version") != 1:
        raise ValueError("not a tfm-model version 1 description")
    arch = _arch_from_json(desc.get("architecture"))
    encoder_only = arch["num_decoder_layers"] == 0
    if encoder_only and "target" in desc:
        raise ValueError("an encoder-only model (num_decoder_layers 0) has no 'target' field")
    if not encoder_only and "target" not in desc:
        raise ValueError("missing field 'target'")
    weights = read_safetensors(os.path.join(base, desc["weights"]))
    for name in ["encoder_embedding.weight"] + ([] if encoder_only else ["decoder_embedding.weight"]):
        if name not in weights:
            raise ValueError(f"missing tensor '{name}'")
    src_v = weights["encoder_embedding.weight"].shape[0]
    tgt_v = None if encoder_only else weights["decoder_embedding.weight"].shape[0]
    for side in ("source", "target"):
        if side in desc:
            _check_side(desc[side], side)
    if "special_tokens" not in desc:
        raise ValueError("missing field 'special_tokens'")
    check_special_tokens(desc["special_tokens"], src_v, tgt_v)
    model = TranslationTransformer(arch, src_v, tgt_v, desc["special_tokens"])
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


# --------------------------------------------------------------------------- tokenizers
#
# The `sentencepiece` sides as tfmc's tokenizer handles them
# (runtime/tokenizers/SentencePieceTokenizer.cpp). Encoding gives the ids
# without eos (source_ids appends it). Decoding: runs of ids that are known
# (in the vocabulary, not unk) are decoded by SentencePiece together; an unk
# (or an id outside the vocabulary) is written as the vocabulary's unk token,
# with a space before it unless it starts the line; a run that starts a new
# word (its first piece begins with U+2581) after earlier text gets a space
# too. With `"piece_ids": "vocab"` ids are line indices of the vocabulary
# file and pieces are looked up there by their text (docs/model-format.md,
# "Vocabularies mapped through a file").

WORD_BOUNDARY = "\u2581"
PIECE_IDS = ("model", "vocab")


def read_vocab(path):
    """A vocabulary file's tokens (docs/model-format.md, "Vocabulary files")."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class SentencePieceSide:
    """Text <-> ids for one `sentencepiece` side. `vocab`: the side's
    tokens; `piece_ids`: "model" (ids are the SentencePiece model's) or
    "vocab" (ids are positions in `vocab`, looked up by piece text)."""

    def __init__(self, model_path, vocab, unk, piece_ids="model"):
        import sentencepiece  # only the tokenizers need it

        if piece_ids not in PIECE_IDS:
            raise ValueError(f"piece_ids: expected \"model\" or \"vocab\", got {piece_ids!r}")
        self.sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
        self.vocab = list(vocab)
        self.unk = unk
        self.piece_ids = piece_ids
        self.index = {t: i for i, t in enumerate(self.vocab)}

    def encode(self, text):
        """Text -> ids (no eos)."""
        ids = self.sp.encode(text)
        if self.piece_ids == "model":
            return ids
        # Every piece by its text, also one the SentencePiece model does not
        # know (an unseen character comes out as itself), as Marian's and
        # fairseq's tokenizers look them up.
        pieces = self.sp.encode(text, out_type=str)
        return [self.index.get(p, self.unk) for p in pieces]

    def _decode_run(self, run):
        if self.piece_ids == "model":
            return self.sp.decode(run), self.sp.id_to_piece(run[0])
        pieces = [self.vocab[i] for i in run]
        return self.sp.decode_pieces(pieces), pieces[0]

    def decode(self, ids):
        """Ids (no decoder-start token, no eos) -> text, as tfmc renders them."""
        out, run = "", []

        def flush():
            nonlocal out, run
            if run:
                text, first = self._decode_run(run)
                if out and text and first.startswith(WORD_BOUNDARY):
                    out += " "
                out += text
                run = []

        for i in ids:
            if 0 <= i < len(self.vocab) and i != self.unk:
                run.append(i)
                continue
            flush()
            out += (" " if out else "") + self.vocab[self.unk]
        flush()
        return out


def load_tokenizer(path, side):
    """The tokenizer of `side` ("source" or "target") of a model directory or
    model.json: a SentencePieceSide (only the sentencepiece kind is here)."""
    json_path = path if path.endswith(".json") else os.path.join(path, "model.json")
    base = os.path.dirname(os.path.abspath(json_path))
    with open(json_path, encoding="utf-8") as f:
        desc = json.load(f)
    s = desc[side]
    if s.get("tokenizer") != "sentencepiece":
        raise ValueError(f"{side}.tokenizer is {s.get('tokenizer')!r}; the reference tokenizes "
                         f"only \"sentencepiece\" sides")
    _check_side(s, side)
    return SentencePieceSide(os.path.join(base, s["model"]), read_vocab(os.path.join(base, s["vocab"])),
                             desc["special_tokens"]["unk"], s.get("piece_ids", "model"))


def _check_side(s, side):
    """A side object's piece_ids field (the only side field the reference checks)."""
    if not isinstance(s, dict):
        raise ValueError(f"{side} must be a JSON object")
    if "piece_ids" in s:
        if s.get("tokenizer") != "sentencepiece":
            raise ValueError(f"field '{side}.piece_ids': only allowed with tokenizer \"sentencepiece\", "
                             f"not {json.dumps(s.get('tokenizer'))}")
        if s["piece_ids"] not in PIECE_IDS:
            raise ValueError(f"field '{side}.piece_ids': expected \"model\" or \"vocab\", "
                             f"got {json.dumps(s['piece_ids'])}")


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
