"""The hostile-input cases: what each one breaks and what tfmc must do.

Every case starts from a valid model (mostly the small e2e fixture
post-relu-noscale, SentencePiece cases the bundled zh-en model), breaks one
thing, runs one command and states the documented outcome (docs/cli.md,
docs/model-format.md; rules summarised in docs/hostile-input.md).

`xfail="..."` marks a case the current build fails, with the reason.  Do
not loosen a case to make it pass: fix tfmc and drop the marker (the runner
reports an unexpected pass as a failure so the list stays true).
"""

import random
import struct

from hostile import (Case, DELETE, base, copy, edit_bytes, lines_out, mkdir,
                     model_error, nested, ok, option_error, remove, replace,
                     set_field, st_convert, st_header, st_header_text, st_int8,
                     byte_fallback_target,
                     st_length, st_tensor, truncate, vocab_lines, write,
                     zhen)

CASES = []


def case(name, group, setup, cmd, expect, **kw):
    CASES.append(Case(name, group, setup, cmd, expect, **kw))


# Commands ---------------------------------------------------------------

MODEL = "{case}/model.json"
CACHE = ["--cache-dir", "{cache}"]
COMPILE = ["{tfmc}", "compile", MODEL, "-o", "{case}/out.mlir"] + CACHE


def translate(*extra, stdin=False):
    cmd = ["{tfmc}", "translate", MODEL] + CACHE
    if not stdin:
        cmd += ["-i", "{case}/input.txt"]
    return cmd + list(extra)


TRANSLATE = translate()
IDS = translate("--ids")
OPT = ["{tfm_opt}", "{case}/input.mlir", "-o", "{case}/out.mlir"]

# The outcome of a model-file error on `translate`: no output at all.
def tr_error(*subs):
    return model_error(*subs, out_lines=0)


def text(*lines, end="\n"):
    """Input file from lines (str or bytes), each ending in `end`."""
    out = b""
    for line in lines:
        out += (line.encode() if isinstance(line, str) else line) + end.encode()
    return write("input.txt", out)


ONE_LINE = text("s4 s5 s6")
ST = "model.safetensors"
SRC = "src.vocab"
TGT = "tgt.vocab"

# =========================================================================
# safetensors: the weight file
# =========================================================================
# File: 195836 bytes; header length N = 9424; data section 186404 bytes;
# last tensor linear.bias (41 floats) at the end.

for name, size, subs in [
    ("st-trunc-0", 0, ["too short", "(0 bytes)"]),
    ("st-trunc-4", 4, ["too short", "(4 bytes)"]),
    ("st-trunc-7", 7, ["too short", "(7 bytes)"]),
    ("st-trunc-8", 8, ["header length 9424 exceeds the file size (8 bytes)"]),
    ("st-trunc-in-header", 8 + 3000, ["header length 9424 exceeds the file size"]),
    ("st-trunc-header-end", 8 + 9424, ["tensor '", "outside the data section (0 bytes)"]),
    ("st-trunc-in-data", 8 + 9424 + 1000, ["tensor '", "outside the data section (1000 bytes)"]),
    ("st-trunc-one-short", -1, ["tensor 'linear.bias'", "outside the data section"]),
]:
    case(name, "safetensors: truncated", [base(), truncate(ST, size)], COMPILE,
         model_error(ST, *subs))

case("st-trunc-translate", "safetensors: truncated",
     [base(), truncate(ST, 8 + 9424 + 1000), ONE_LINE], TRANSLATE,
     tr_error(ST, "outside the data section"),
     note="the same check on the translate path: no output line, one error")


def flip_at(pos, xor=0xFF):
    def fn(b):
        b = bytearray(b)
        b[pos] ^= xor
        return bytes(b)
    return edit_bytes(ST, fn)


def flip_first(old, new):
    """Replace the first occurrence of `old` inside the header only."""
    def fn(b):
        n = struct.unpack("<Q", b[:8])[0]
        h = b[8:8 + n]
        assert old in h
        h = h.replace(old, new, 1)
        return b[:8] + h + b[8 + n:]
    return edit_bytes(ST, fn)


case("st-flip-open-brace", "safetensors: corrupt header", [base(), flip_at(8)],
     COMPILE, model_error(ST, "invalid JSON header"))
case("st-flip-colon", "safetensors: corrupt header", [base(), flip_first(b":", b";")],
     COMPILE, model_error(ST, "invalid JSON header"))
case("st-flip-quote", "safetensors: corrupt header", [base(), flip_first(b'"dtype"', b'"dtype\x00')],
     COMPILE, model_error(ST, "invalid JSON header"))
case("st-flip-in-name", "safetensors: corrupt header", [base(), flip_at(8 + 3)],
     COMPILE, model_error(ST, "invalid JSON header"),
     note="a tensor name becomes invalid UTF-8, which is not JSON")
case("st-flip-close-brace", "safetensors: corrupt header", [base(), flip_at(8 + 9424 - 1)],
     COMPILE, model_error(ST, "invalid JSON header"))

for name, n, subs in [
    ("st-length-2p63", 2 ** 63, ["header length 9223372036854775808 exceeds the file size"]),
    ("st-length-2p64-1", 2 ** 64 - 1, ["header length 18446744073709551615 exceeds the file size"]),
    ("st-length-2p64-8", 2 ** 64 - 8, ["header length 18446744073709551608 exceeds the file size"]),
    ("st-length-file-size", 195836, ["header length 195836 exceeds the file size (195836 bytes)"]),
    ("st-length-zero", 0, ["invalid JSON header"]),
]:
    case(name, "safetensors: header length", [base(), st_length(n)], COMPILE,
         model_error(ST, *subs))


def st_length_cut_json(ctx):
    """Header length ending just before the JSON's closing '}' (the writer
    pads the header with spaces, so N - 1 would only drop a space)."""
    p = ctx.path(ST)
    b = p.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    p.write_bytes(struct.pack("<Q", b[8:8 + n].rindex(b"}")) + b[8:])


case("st-length-cuts-json", "safetensors: header length", [base(), st_length_cut_json], COMPILE,
     model_error(ST, "invalid JSON header"))


def tensor_field(tensor, field, value):
    def fn(header, data):
        if value is DELETE:
            del header[tensor][field]
        else:
            header[tensor][field] = value
    return st_header(fn)


def offsets(tensor, fn):
    def edit(header, data):
        header[tensor]["data_offsets"] = fn(header[tensor]["data_offsets"], len(data))
    return st_header(edit)


DATA = 186404
for name, fn, subs in [
    ("st-offsets-negative", lambda o, n: [-4, o[1]], ["data_offsets must be [begin, end]"]),
    ("st-offsets-inverted", lambda o, n: [o[1], o[0]], ["data_offsets must be [begin, end]"]),
    ("st-offsets-past-end", lambda o, n: [n - 160, n + 4], ["outside the data section (186404 bytes)"]),
    ("st-offsets-far-past-end", lambda o, n: [2 ** 40, 2 ** 40 + 164], ["outside the data section"]),
    ("st-offsets-2p64", lambda o, n: [2 ** 64 - 164, 2 ** 64], ["data_offsets"]),
    ("st-offsets-wrap", lambda o, n: [2 ** 63, 2 ** 63 + 164], ["data_offsets"]),
    ("st-offsets-float", lambda o, n: [o[0] + 0.5, o[1]], ["data_offsets"]),
    ("st-offsets-three", lambda o, n: [o[0], o[1], o[1]], ["data_offsets"]),
    ("st-offsets-strings", lambda o, n: [str(o[0]), str(o[1])], ["data_offsets"]),
]:
    case(name, "safetensors: data_offsets", [base(), offsets("linear.bias", fn)],
         COMPILE, model_error(ST, "tensor 'linear.bias'", *subs))

case("st-offsets-overlap", "safetensors: data_offsets",
     [base(), offsets("decoder_embedding.weight", lambda o, n: [4000, 4000 + 5248])],
     COMPILE, model_error(ST, "overlap", "'encoder_embedding.weight'", "'decoder_embedding.weight'"))
case("st-offsets-same-span", "safetensors: data_offsets",
     [base(), offsets("encoder_layers.0.norm2.bias", lambda o, n: [o[0] - 128, o[1] - 128])],
     COMPILE, model_error(ST, "overlap", "'encoder_layers.0.norm2.bias'"),
     note="two tensors with exactly the same bytes")


def dup_key(header_text):
    # Repeat the last entry (linear.bias) with a different span.
    return header_text[:-1] + ',"linear.bias":{"dtype":"F32","shape":[41],"data_offsets":[0,164]}}'


case("st-duplicate-key", "safetensors: header content",
     [base(), st_header_text(dup_key)], COMPILE,
     model_error(ST, "duplicate key 'linear.bias'"))

case("st-duplicate-key-escaped", "safetensors: header content",
     [base(), st_header_text(lambda h: dup_key(h).replace('"linear.bias":{"dtype":"F32","shape":[41],"data_offsets":[0,164]}',
                                                          '"linear\\u002ebias":{"dtype":"F32","shape":[41],"data_offsets":[0,164]}'))],
     COMPILE, model_error(ST, "duplicate key 'linear.bias'"),
     note="keys compare decoded: another tensor's bytes must not replace it")

for name, dtype, subs in [
    ("st-dtype-I64", "I64", ["unsupported dtype 'I64'"]),
    ("st-dtype-BOOL", "BOOL", ["unsupported dtype 'BOOL'"]),
    ("st-dtype-lower-f32", "f32", ["unsupported dtype 'f32'"]),
    ("st-dtype-F64", "F64", ["unsupported dtype 'F64'"]),
    ("st-dtype-empty", "", ["dtype"]),
    ("st-dtype-number", 4, ["dtype"]),
]:
    case(name, "safetensors: header content",
         [base(), tensor_field("linear.bias", "dtype", dtype)], COMPILE,
         model_error(ST, "tensor 'linear.bias'", *subs))

for name, shape, subs in [
    ("st-shape-size-mismatch", [40], ["shape [40] with dtype F32 needs 160 bytes", "span 164"]),
    ("st-shape-negative", [-41], ["shape must be a list of non-negative integers"]),
    ("st-shape-float", [40.5], ["shape must be a list of non-negative integers"]),
    ("st-shape-string", "41", ["shape must be a list of non-negative integers"]),
    ("st-shape-2p64", [2 ** 64], ["shape"]),
]:
    case(name, "safetensors: header content",
         [base(), tensor_field("linear.bias", "shape", shape)], COMPILE,
         model_error(ST, "tensor 'linear.bias'", *subs))


def add_tensor(name, entry, extra_data=b""):
    def fn(header, data):
        header[name] = entry(len(data)) if callable(entry) else entry
        return header, data + extra_data
    return st_header(fn)


for name, shape in [("st-shape-overflow-2p62x4", [2 ** 62, 4]),
                    ("st-shape-overflow-4x2p16", [65536, 65536, 65536, 65536]),
                    ("st-shape-overflow-2p32x2p32", [2 ** 32, 2 ** 32])]:
    case(name, "safetensors: header content",
         [base(), add_tensor("overflow", {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]})],
         COMPILE, model_error(ST, "tensor 'overflow':"),
         note="element count x 4 wraps to 0 bytes in 64 bits; must be rejected while opening, "
              "not reported later as merely an unexpected tensor")

case("st-entry-not-object", "safetensors: header content",
     [base(), add_tensor("linear.bias", 3)], COMPILE,
     model_error(ST, "tensor 'linear.bias': expected an object"))
case("st-entry-extra-field", "safetensors: header content",
     [base(), tensor_field("linear.bias", "extra", 1)], COMPILE,
     model_error(ST, "tensor 'linear.bias': unknown field 'extra'"))
case("st-entry-missing-dtype", "safetensors: header content",
     [base(), tensor_field("linear.bias", "dtype", DELETE)], COMPILE,
     model_error(ST, "tensor 'linear.bias': missing field 'dtype'"))
case("st-metadata-not-strings", "safetensors: header content",
     [base(), add_tensor("__metadata__", {"a": 1})], COMPILE,
     model_error(ST, "'__metadata__' must map strings to strings"))
case("st-metadata-ok", "safetensors: header content",
     [base(), add_tensor("__metadata__", {"format": "pt"})], COMPILE, ok())
case("st-header-array", "safetensors: header content",
     [base(), st_header_text(lambda t: "[]")], COMPILE,
     model_error(ST, "header is not a JSON object"))
case("st-header-nested-100k", "safetensors: header content",
     [base(), st_header_text(lambda t: nested(100000))], COMPILE,
     model_error(ST),
     note="100000 nested '[': a recursive parser must not overflow the stack")
case("st-header-nested-100k-objects", "safetensors: header content",
     [base(), st_header_text(lambda t: '{"a":' * 100000 + "1" + "}" * 100000)], COMPILE,
     model_error(ST))


def drop(*names):
    def fn(header, data):
        for n in names:
            del header[n]
    return st_header(fn)


case("st-missing-tensor", "safetensors: tensor set", [base(), drop("linear.bias")],
     COMPILE, model_error(ST, "missing tensor 'linear.bias'"))
case("st-missing-two-tensors", "safetensors: tensor set",
     [base(), drop("linear.weight", "linear.bias")], COMPILE,
     model_error(ST, "missing tensor 'linear.weight' (and 1 more)"))
case("st-extra-tensor", "safetensors: tensor set",
     [base(), add_tensor("foo", lambda n: {"dtype": "F32", "shape": [1], "data_offsets": [n, n + 4]},
                         extra_data=b"\0\0\0\0")],
     COMPILE, model_error(ST, "unexpected tensor 'foo'"))
case("st-wrong-shape", "safetensors: tensor set",
     [base(), tensor_field("encoder_layers.0.self_attention.query_linear.weight", "shape", [16, 64])],
     COMPILE, model_error(ST, "tensor 'encoder_layers.0.self_attention.query_linear.weight'",
                          "expected shape [32, 32], got [16, 64]"))

# Valid but unusual files: padded header, unaligned data, F16 and BF16.
BASE_TEXT = text("s4 s5 s6", "s7 s8", "s9")
case("in-baseline", "translate input", [base(), BASE_TEXT], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2, 3]),
     note="reference output for the same_stdout_as cases")
case("st-header-space-padded", "safetensors: valid variants",
     [base(), st_header_text(lambda t: t + "        "), BASE_TEXT], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"),
     note="writers pad the header with spaces to 8 bytes")
case("st-unaligned-data", "safetensors: valid variants",
     [base(), st_header_text(lambda t: t + " "), BASE_TEXT], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"),
     note="data section at an odd offset: F32 tensors are copied, same results")
case("st-f16", "safetensors: valid variants", [base(), st_convert("F16"), BASE_TEXT],
     TRANSLATE, lines_out(3))
case("st-bf16", "safetensors: valid variants", [base(), st_convert("BF16"), BASE_TEXT],
     TRANSLATE, lines_out(3))

# Pre-quantized weights (I8 + _scale): valid on every compute type, and each
# way of breaking the pair is an error naming the tensor.
case("st-i8-weight", "safetensors: valid variants",
     [base(), st_int8("linear.weight"), BASE_TEXT], TRANSLATE, lines_out(3))
case("st-i8-weight-int8", "safetensors: valid variants",
     [base(), st_int8("linear.weight"), BASE_TEXT], translate("--compute-type", "int8"),
     lines_out(3))
for name, edit, subs in [
    ("st-i8-no-scale", st_int8("linear.weight", drop_scale=True),
     ["tensor 'linear.weight' is I8 but there is no 'linear.weight_scale'"]),
    ("st-i8-scale-shape", st_int8("linear.weight", scales=lambda s: s[:40]),
     ["'linear.weight_scale': expected F32 of shape [41]"]),
    ("st-i8-scale-dtype", st_int8("linear.weight", scale_dtype="I8", scale_shape=[164]),
     ["'linear.weight_scale': expected F32 of shape [41]", "got I8"]),
    ("st-i8-negative-scale", st_int8("linear.weight", scales=lambda s: [-1.0] + s[1:]),
     ["'linear.weight_scale': element 0 is -1", "finite and not negative"]),
    ("st-i8-nan-scale", st_int8("linear.weight", scales=lambda s: s[:3] + [float("nan")] + s[4:]),
     ["'linear.weight_scale': element 3 is nan"]),
    ("st-i8-vector", st_int8("linear.weight", flat=True),
     ["'linear.weight': an I8 tensor must be a matrix"]),
]:
    case(name, "safetensors: pre-quantized weights", [base(), edit, BASE_TEXT], TRANSLATE,
         tr_error(ST, *subs))

NAN, INF = float("nan"), float("inf")
for name, tensor, fn, steps, cmd, subs in [
    ("st-nan-output", "linear.weight", lambda v: [NAN] * len(v), [], TRANSLATE,
     ["element 0 is NaN"]),
    ("st-nan-norm", "decoder_layers.1.norm3.weight", lambda v: v[:5] + [NAN] + v[6:], [], COMPILE,
     ["element 5 is NaN"]),
    ("st-inf-embedding", "encoder_embedding.weight",
     lambda v: [INF if i % 3 == 0 else x for i, x in enumerate(v)], [], TRANSLATE,
     ["element 0 is infinite"]),
    ("st-neg-inf-last", "linear.bias", lambda v: v[:-1] + [-INF], [], COMPILE,
     ["element 40 is infinite"]),
    ("st-nan-f16", "linear.bias", lambda v: v[:7] + [NAN] + v[8:], [st_convert("F16")], TRANSLATE,
     ["element 7 is NaN"]),
    ("st-inf-bf16", "encoder_layers.1.norm2.bias", lambda v: v[:3] + [INF] + v[4:],
     [st_convert("BF16")], COMPILE, ["element 3 is infinite"]),
]:
    case(name, "safetensors: NaN/Inf values",
         [base(), st_tensor(tensor, fn)] + steps + [BASE_TEXT], cmd,
         model_error(ST, f"tensor '{tensor}'", *subs,
                     out_lines=0 if cmd is TRANSLATE else None),
         note="a NaN or infinite weight is an error naming the tensor and element "
              "(model-format.md), also after F16/BF16 widening")
OVERFLOWING = st_tensor("linear.weight",
                        lambda v: [max(min(x * 1e38, 3.4e38), -3.4e38) for x in v])
NOT_NUMBERS = [f"warning: input line {i}: the model's outputs are not numbers"
               for i in (1, 2, 3)]
case("st-overflowing-output", "safetensors: NaN/Inf values",
     [base(), OVERFLOWING, BASE_TEXT], translate("--scores"),
     {"exit": 0, "stdout_lines": 3, "stderr_has": NOT_NUMBERS},
     note="finite weights whose products overflow float32 at run time: the NaN "
          "scores are said, never printed silently")
for name, extra in [("st-overflowing-output-greedy", []),
                    ("st-overflowing-output-greedy-loops", ["--kernels=loops"]),
                    ("st-overflowing-output-greedy-guards", ["--repetition-penalty", "1.5"])]:
    case(name, "safetensors: NaN/Inf values", [base(), OVERFLOWING, BASE_TEXT],
         translate(*extra), {"exit": 0, "stdout_lines": 3, "stderr_has": NOT_NUMBERS},
         note="greedy without scores (its fused choice on both kernel paths; the "
              "plain scan under repetition guards): a row whose chosen logit is "
              "not finite ends there and the line is warned about")

# The same, inside the decoder: its first FFN overflows, and the NaN it
# leaves reaches every later layer's input. int8 compute quantizes those
# inputs: a row that is not numbers must stay so (codes 0, scale NaN), not
# become finite codes of nothing (which translated every line to an empty
# one with a finite score, unsaid, on the library path until 2026-12-05).
OVERFLOWING_FFN = st_tensor("decoder_layers.0.feed_forward.linear1.weight",
                            lambda v: [max(min(x * 1e38, 3.4e38), -3.4e38) for x in v])
for name, extra in [("st-overflowing-activations", []),
                    ("st-overflowing-activations-int8", ["--compute-type", "int8"]),
                    ("st-overflowing-activations-int8-loops",
                     ["--compute-type", "int8", "--kernels=loops"]),
                    ("st-overflowing-activations-int8-beam",
                     ["--compute-type", "int8", "--beam-size", "2", "--scores"]),
                    ("st-overflowing-activations-beam", ["--beam-size", "2", "--scores"]),
                    ("st-overflowing-activations-beam-fused", ["--beam-size", "2"])]:
    case(name, "safetensors: NaN/Inf values", [base(), OVERFLOWING_FFN, BASE_TEXT],
         translate(*extra), {"exit": 0, "stdout_lines": 3, "stderr_has": NOT_NUMBERS},
         note="finite weights whose products overflow inside the decoder: on every "
              "compute type and kernel path the lines are warned about")

case("st-weights-missing", "safetensors: path", [base(), remove(ST)], COMPILE,
     model_error(ST, "cannot open file"))
case("st-weights-directory", "safetensors: path", [base(), remove(ST), mkdir(ST)], COMPILE,
     model_error(ST))
case("st-weights-dev-zero", "safetensors: path",
     [base(), set_field(["weights"], "/dev/zero")], COMPILE,
     model_error("/dev/zero"),
     note="a character device is not a weight file; must not read forever")
case("st-weights-empty-path", "safetensors: path",
     [base(), set_field(["weights"], "")], COMPILE,
     model_error("model.json", "field 'weights'"))

# =========================================================================
# model.json
# =========================================================================
MJ = "model.json"

case("json-nested-100k-arrays", "model.json: syntax", [base(), write(MJ, nested(100000))],
     COMPILE, model_error(MJ),
     note="100000 nested '[': must not overflow the stack")
case("json-nested-100k-unclosed", "model.json: syntax", [base(), write(MJ, "[" * 100000)],
     COMPILE, model_error(MJ, "invalid JSON"))
case("json-nested-100k-objects", "model.json: syntax",
     [base(), write(MJ, '{"a":' * 100000 + "0" + "}" * 100000)], COMPILE, model_error(MJ))
case("json-nested-in-field", "model.json: syntax",
     [base(), replace(MJ, '"d_model": 32', '"d_model": ' + nested(100000))], COMPILE,
     model_error(MJ))
case("json-empty-file", "model.json: syntax", [base(), write(MJ, "")], COMPILE,
     model_error(MJ, "invalid JSON"))
case("json-top-array", "model.json: syntax", [base(), write(MJ, "[1,2]")], COMPILE,
     model_error(MJ, "expected a JSON object at top level"))
case("json-trailing-garbage", "model.json: syntax",
     [base(), edit_bytes(MJ, lambda b: b + b" x")], COMPILE, model_error(MJ, "invalid JSON"))
case("json-invalid-utf8", "model.json: syntax",
     [base(), replace(MJ, '"relu"', b'"relu\xff"')], COMPILE, model_error(MJ))
case("json-nul-byte", "model.json: syntax",
     [base(), replace(MJ, '"relu"', b'"re\x00lu"')], COMPILE, model_error(MJ))
case("json-truncated", "model.json: syntax", [base(), truncate(MJ, 200)], COMPILE,
     model_error(MJ, "invalid JSON"))
case("json-duplicate-top", "model.json: fields",
     [base(), replace(MJ, '"weights": "model.safetensors"',
                      '"weights": "model.safetensors", "weights": "model.safetensors"')],
     COMPILE, model_error(MJ, "duplicate field 'weights'"))
case("json-duplicate-nested", "model.json: fields",
     [base(), replace(MJ, '"d_model": 32,', '"d_model": 32, "d_model": 32,')],
     COMPILE, model_error(MJ, "duplicate field 'architecture.d_model'"))
case("json-duplicate-special", "model.json: fields",
     [base(), replace(MJ, '"unk": 3', '"unk": 3, "unk": 4')],
     COMPILE, model_error(MJ, "duplicate field 'special_tokens.unk'"))
case("json-duplicate-escaped", "model.json: fields",
     [base(), replace(MJ, '"weights": "model.safetensors"',
                      '"weights": "model.safetensors", "w\\u0065ights": "x"')],
     COMPILE, model_error(MJ, "duplicate field 'weights'"),
     note="keys compare decoded: an escape does not make another key")
case("json-unknown-field", "model.json: fields",
     [base(), set_field(["architecture", "foo"], 1)], COMPILE,
     model_error(MJ, "unknown field 'architecture.foo'"))
case("json-missing-field", "model.json: fields",
     [base(), set_field(["weights"], DELETE)], COMPILE, model_error(MJ, "missing field 'weights'"))
case("json-missing-architecture-field", "model.json: fields",
     [base(), set_field(["architecture", "d_ff"], DELETE)], COMPILE,
     model_error(MJ, "missing field 'architecture.d_ff'"))

# Wrong JSON types, one per architecture field.
for field, value in [
    ("d_model", "abc"), ("num_heads", 4.5), ("num_encoder_layers", True),
    ("num_decoder_layers", None), ("d_ff", [64]), ("max_len", {"v": 64}),
    ("activation", 1), ("norm", False), ("layer_norm_eps", "1e-5"),
    ("embedding_scale", 0), ("positional_encoding", None),
]:
    case(f"arch-type-{field}", "model.json: field types",
         [base(), set_field(["architecture", field], value)], COMPILE,
         model_error(MJ, f"field 'architecture.{field}'"))

for name, keys, value, subs in [
    ("top-type-format", ["format"], 1, ["field 'format'"]),
    ("top-type-version-string", ["version"], "1", ["field 'version'"]),
    ("top-type-version-float", ["version"], 1.5, ["field 'version'"]),
    ("top-type-source", ["source"], "src.vocab", ["'source'"]),
    ("top-type-special", ["special_tokens"], [0, 1, 2, 3], ["'special_tokens'"]),
    ("top-type-weights", ["weights"], 7, ["field 'weights'"]),
    ("top-value-format", ["format"], "onnx", ["field 'format'"]),
    ("top-value-version", ["version"], 2, ["field 'version'", "unsupported version 2"]),
]:
    case(name, "model.json: field types", [base(), set_field(keys, value)], COMPILE,
         model_error(MJ, *subs))

# Values of the right type but out of range.
for field, value, subs in [
    ("d_model", 0, []), ("d_model", -32, []),
    ("d_model", 2 ** 63, []), ("d_model", 1e300, []),
    ("num_heads", 3, ["does not divide architecture.d_model (32)"]),
    ("num_heads", 0, []), ("num_heads", 64, ["does not divide"]),
    ("num_encoder_layers", 0, []), ("num_decoder_layers", -1, []),
    ("d_ff", 0, []), ("max_len", 0, []),
    ("layer_norm_eps", 0, []), ("layer_norm_eps", -1e-5, []),
    ("activation", "swish", []), ("norm", "mid", []),
    ("positional_encoding", "learned", []),
]:
    tag = str(value).replace("-", "neg").replace(".", "_").replace("+", "")
    case(f"arch-value-{field}-{tag}", "model.json: field values",
         [base(), set_field(["architecture", field], value)], COMPILE,
         model_error(MJ, f"field 'architecture.{field}'", *subs))

case("arch-value-layer_norm_eps-1e999", "model.json: field values",
     [base(), replace(MJ, '"layer_norm_eps": 1e-05', '"layer_norm_eps": 1e999')], COMPILE,
     model_error(MJ, "field 'architecture.layer_norm_eps'"),
     note="1e999 parses as infinity; the rule is finite and > 0")
case("arch-value-d_model-16", "model.json: field values",
     [base(), set_field(["architecture", "d_model"], 16)], COMPILE,
     model_error(ST, "expected shape"))
case("arch-value-encoder-layers-3", "model.json: field values",
     [base(), set_field(["architecture", "num_encoder_layers"], 3)], COMPILE,
     model_error(ST, "missing tensor 'encoder_layers.2."))
case("arch-value-decoder-layers-1", "model.json: field values",
     [base(), set_field(["architecture", "num_decoder_layers"], 1)], COMPILE,
     model_error(ST, "unexpected tensor 'decoder_layers.1."))
case("arch-value-encoder-layers-2p40", "model.json: field values",
     [base(), set_field(["architecture", "num_encoder_layers"], 2 ** 40)], COMPILE,
     model_error("encoder_layers"),
     note="must not enumerate 2^44 expected tensor names")
case("arch-value-d_model-2p40", "model.json: field values",
     [base(), set_field(["architecture", "d_model"], 2 ** 40)], COMPILE,
     model_error("model."))
case("arch-value-max_len-2p31", "model.json: field values",
     [base(), set_field(["architecture", "max_len"], 2 ** 31), ONE_LINE], TRANSLATE,
     {"exit": "any", "if_ok": {"stdout_lines": 1},
      "if_error": {"one_error": True, "error_has": ["architecture.max_len (2147483648)"]}},
     note="275 GB of positional table: refused naming the field on machines with less "
          "than twice that memory; never an allocation failure")
case("arch-value-max_len-50m", "model.json: field values",
     [base(), set_field(["architecture", "max_len"], 50_000_000), ONE_LINE], TRANSLATE,
     {"exit": "any", "if_ok": {"stdout_lines": 1},
      "if_error": {"one_error": True, "error_has": ["architecture.max_len (50000000)", "GB"]}},
     note="6.4 GB of positional table: under the corpus's 4 GiB address-space limit "
          "it is refused naming the field, not left to abort in the allocation")
case("arch-value-max_len-2p50", "model.json: field values",
     [base(), set_field(["architecture", "max_len"], 2 ** 50), ONE_LINE], TRANSLATE,
     tr_error(MJ, "architecture.max_len (1125899906842624)", "GB"))

# special_tokens
for name, tok, value, subs in [
    ("special-unk-out-of-range", "unk", 37, ["field 'special_tokens.unk'", "out of range", "src.vocab"]),
    ("special-pad-source-range", "pad", 40, ["field 'special_tokens.pad'", "out of range for the source vocabulary"]),
    ("special-eos-41", "eos", 41, ["field 'special_tokens.eos'", "out of range"]),
    ("special-pad-2p40", "pad", 2 ** 40, ["field 'special_tokens.pad'"]),
    ("special-pad-2p64", "pad", 2 ** 64, ["field 'special_tokens.pad'"]),
    ("special-pad-negative", "pad", -1, ["field 'special_tokens.pad'", "non-negative"]),
    ("special-pad-float", "pad", 1.5, ["field 'special_tokens.pad'"]),
    ("special-bos-equals-eos", "bos", 2, ["also used by 'special_tokens."]),
    ("special-unk-missing", "unk", DELETE, ["missing field 'special_tokens.unk'"]),
    ("special-extra-mask", "mask", 4, ["unknown field 'special_tokens.mask'"]),
]:
    case(name, "model.json: special tokens",
         [base(), set_field(["special_tokens", tok], value)], COMPILE,
         model_error(MJ, *subs))

# sides / tokenizers
for name, keys, value, subs in [
    ("side-tokenizer-bpe", ["source", "tokenizer"], "bpe", ["field 'source.tokenizer'"]),
    ("side-model-with-char", ["source", "model"], "x.spm", ["field 'source.model'", "only allowed"]),
    ("side-sentencepiece-no-model", ["target", "tokenizer"], "sentencepiece",
     ["missing field 'target.model'"]),
    ("side-vocab-empty-path", ["source", "vocab"], "", ["field 'source.vocab'"]),
    ("side-unknown-field", ["target", "lang"], "en", ["unknown field 'target.lang'"]),
]:
    case(name, "model.json: sides", [base(), set_field(keys, value)], COMPILE,
         model_error(MJ, *subs))

# the model path itself
case("path-model-directory", "model.json: path", [base()],
     ["{tfmc}", "compile", "{case}"] + CACHE, model_error("cannot open file"),
     note="a directory given as the model (cli: 'cannot open file: Is a directory')")
case("path-model-missing", "model.json: path", [base()],
     ["{tfmc}", "compile", "{case}/nosuch.json"] + CACHE,
     model_error("nosuch.json", "cannot open file"))
case("path-model-dev-null", "model.json: path", [],
     ["{tfmc}", "compile", "/dev/null"] + CACHE, model_error("/dev/null"))
case("path-model-directory-translate", "model.json: path", [base(), ONE_LINE],
     ["{tfmc}", "translate", "{case}", "-i", "{case}/input.txt"] + CACHE,
     tr_error("cannot open file"))
case("path-vocab-dev-zero", "model.json: path",
     [base(), set_field(["source", "vocab"], "/dev/zero")], COMPILE,
     model_error("/dev/zero"),
     note="an endless file with no line end must not be read forever")

# =========================================================================
# Block recipes
# =========================================================================
POST_ENC = "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x))"
RF = "field 'architecture.encoder_layer'"
for name, recipe, subs in [
    ("recipe-valid", POST_ENC, None),
    ("recipe-unexpected-char", "x = norm1(x + self_attn(x)); x = norm2(x * ffn(x))",
     ["column 42: unexpected character '*'"]),
    ("recipe-unknown-norm", "x = norm12(x + self_attn(x)); x = norm2(x + ffn(x))",
     ["column 5: unknown sublayer 'norm12'"]),
    ("recipe-self-attn-twice", "x = norm1(x + self_attn(x)); x = norm2(x + self_attn(x))",
     ["self_attn occurs more than once"]),
    ("recipe-no-ffn", "x = norm1(x + self_attn(x)); x = norm2(x)", ["no ffn"]),
    ("recipe-cross-in-encoder", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(cross_attn(x)))",
     ["cross_attn is only allowed in a decoder layer"]),
    ("recipe-use-before-assign", "x = norm1(x + self_attn(y)); x = norm2(x + ffn(x))",
     ["'y' is used before it is assigned"]),
    ("recipe-unused-value", "x = norm1(x + self_attn(x)); h = norm2(x + ffn(x))",
     ["the value assigned to 'h' is never used"]),
    ("recipe-empty", "", ["expected a non-empty string"]),
    ("recipe-unclosed", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x)", ["column"]),
    ("recipe-non-ascii", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x)) \u2713", ["column"]),
    ("recipe-nul", "x = norm1(x + self_attn(x));\u0000 x = norm2(x + ffn(x))", ["column"]),
    ("recipe-20000-summands", "x = norm1(x + self_attn(x)" + " + x" * 20000 + "); x = norm2(x + ffn(x))",
     ["the recipe is longer than 512 tokens"]),
    ("recipe-norm-not-in-weights", "x = norm3(x + self_attn(x)); x = norm2(x + ffn(x))",
     None),
    ("recipe-deep-100k", "x = x + self_attn(x); x = " + "norm1(" * 100000 + "x" + ")" * 100000,
     []),
    ("recipe-long-sum", "x = norm1(x + self_attn(x)); x = norm2(x + ffn(x)" + " + x" * 100000 + ")",
     None),
]:
    if subs is None and name == "recipe-valid":
        exp = ok()
    elif name == "recipe-norm-not-in-weights":
        exp = model_error(ST, "norm")
    elif name == "recipe-long-sum":
        exp = {"exit": "any", "if_error": {"one_error": True, "error_has": [RF]}}
    else:
        exp = model_error(MJ, RF, *subs)
    case(name, "model.json: block recipes",
         [base(), set_field(["architecture", "encoder_layer"], recipe)], COMPILE, exp)
case("recipe-not-a-string", "model.json: block recipes",
     [base(), set_field(["architecture", "encoder_layer"], 5)], COMPILE,
     model_error(MJ, RF))

# =========================================================================
# Vocabularies
# =========================================================================
for name, f, fn, subs in [
    ("vocab-src-short", SRC, lambda ls: ls[:-1],
     ["tensor 'encoder_embedding.weight' has 37 rows", "src.vocab", "has 36 tokens"]),
    ("vocab-tgt-long", TGT, lambda ls: ls + [b"t41"],
     ["tensor 'decoder_embedding.weight' has 41 rows", "tgt.vocab", "has 42 tokens"]),
    ("vocab-duplicate", SRC, lambda ls: ls[:9] + [ls[4]] + ls[10:],
     ["src.vocab", "line 10: duplicate token \"s4\" (first on line 5)"]),
    ("vocab-invalid-utf8", TGT, lambda ls: ls[:6] + [b"t\xff"] + ls[7:],
     ["tgt.vocab", "line 7: invalid UTF-8"]),
    ("vocab-overlong-utf8", SRC, lambda ls: ls[:6] + [b"\xc0\xaf"] + ls[7:],
     ["src.vocab", "line 7: invalid UTF-8"]),
    ("vocab-surrogate-utf8", SRC, lambda ls: ls[:6] + [b"\xed\xa0\x80"] + ls[7:],
     ["src.vocab", "line 7: invalid UTF-8"]),
    ("vocab-truncated-utf8", SRC, lambda ls: ls[:6] + [b"s\xe4\xbd"] + ls[7:],
     ["src.vocab", "line 7: invalid UTF-8"]),
    ("vocab-empty-line", SRC, lambda ls: ls[:4] + [b""] + ls[5:],
     ["src.vocab", "line 5: empty token"]),
]:
    case(name, "vocabularies", [base(), vocab_lines(f, fn)], COMPILE, model_error(*subs))

case("vocab-empty-file", "vocabularies", [base(), write(SRC, "")], COMPILE,
     model_error(SRC, "vocabulary is empty"))
case("vocab-only-newline", "vocabularies", [base(), write(TGT, "\n")], COMPILE,
     model_error(TGT, "line 1: empty token"))
case("vocab-double-final-newline", "vocabularies",
     [base(), edit_bytes(SRC, lambda b: b + b"\n")], COMPILE,
     model_error(SRC, "line 38: empty token"))
case("vocab-directory", "vocabularies", [base(), remove(SRC), mkdir(SRC)], COMPILE,
     model_error(SRC))
case("vocab-missing", "vocabularies", [base(), remove(TGT)], COMPILE,
     model_error(TGT, "cannot open file"))
case("vocab-nul-byte", "vocabularies",
     [base(), vocab_lines(SRC, lambda ls: ls[:5] + [b"s4\x00"] + ls[6:])], COMPILE,
     {"exit": "any",
      "if_error": {"one_error": True, "error_has": [SRC, "line 6"], "stderr_lacks": ["duplicate"]}},
     note="NUL is valid UTF-8: accepted, or refused naming line 6 -- but never read as "
          "the C string \"s4\" (a duplicate of line 5)")
case("vocab-crlf", "vocabularies",
     [base(), edit_bytes(SRC, lambda b: b.replace(b"\n", b"\r\n")),
      edit_bytes(TGT, lambda b: b.replace(b"\n", b"\r\n")), BASE_TEXT],
     TRANSLATE, lines_out(3, same_stdout_as="in-baseline"),
     note="CRLF line ends are allowed in vocabularies and do not become part of the token")
case("vocab-bom", "vocabularies",
     [base(), edit_bytes(SRC, lambda b: b"\xef\xbb\xbf" + b), BASE_TEXT], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"))
case("vocab-no-final-newline", "vocabularies",
     [base(), edit_bytes(TGT, lambda b: b.rstrip(b"\n")), BASE_TEXT], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"))
case("vocab-1mb-token", "vocabularies",
     [base(), vocab_lines(SRC, lambda ls: ls[:-1] + [b"z" * (1 << 20)])], COMPILE, ok())

# =========================================================================
# SentencePiece (the bundled zh-en model)
# =========================================================================
ZH = text("我们明天去公园吧。", "谢谢。")
rng = random.Random(20240601)
RANDOM_BYTES = bytes(rng.randrange(256) for _ in range(4096))

for name, steps, subs in [
    ("spm-random-bytes", [write("src.spm", RANDOM_BYTES)],
     ["cannot load SentencePiece model", "src.spm"]),
    ("spm-empty-file", [write("tgt.spm", b"")], ["cannot load SentencePiece model", "tgt.spm"]),
    ("spm-missing", [remove("src.spm")], ["cannot load SentencePiece model", "src.spm"]),
    ("spm-directory", [remove("tgt.spm"), mkdir("tgt.spm")], ["tgt.spm"]),
    ("spm-truncated", [truncate("tgt.spm", 150000)], ["tgt.spm"]),
    ("spm-other-model", [copy("src.spm", "tgt.spm")],
     ["SentencePiece model", "tgt.spm", "but vocabulary line"]),
    ("spm-vocab-line-differs", [vocab_lines(SRC, lambda ls: ls[:17] + [b"not-a-piece"] + ls[18:])],
     ["SentencePiece model", "src.spm", "vocabulary line 18 is 'not-a-piece'"]),
    ("spm-unk-mismatch", [set_field(["special_tokens", "unk"], 4)],
     ["SentencePiece model", "uses unk id 3 but special_tokens.unk is 4"]),
]:
    case(name, "SentencePiece", [zhen()] + steps + [ZH], TRANSLATE, tr_error(*subs))

case("spm-random-bytes-ids", "SentencePiece",
     [zhen(), write("src.spm", RANDOM_BYTES), write("tgt.spm", b""),
      text("22 239 33", "5")], translate("--ids", "--max-length", "8"),
     lines_out(2, nonempty_lines=[1]),
     note="--ids needs no tokenizer, so a broken .spm does not matter")
case("spm-text-invalid-utf8", "SentencePiece",
     [zhen(), text("我们明天去公园吧。", b"\xff\xfe", "谢谢。", b"\xe6\x88", "",
                   b"\xe4\xbd\xa0\xed\xa0\x80", "你好")],
     TRANSLATE,
     lines_out(7, input_warnings=3, empty_lines=[2, 4, 5, 6], nonempty_lines=[1, 3, 7],
               stderr_has=[f"warning: input line {i}: invalid UTF-8" for i in (2, 4, 6)]),
     note="unreadable text: a warning naming the line, an empty output line, exit 0")
case("spm-text-nul", "SentencePiece", [zhen(), text("你好\x00世界", "谢谢。")],
     TRANSLATE, lines_out(2, nonempty_lines=[2]),
     note="NUL bytes are part of a line like any other byte")
# A line over the reader's 256 KB limit: truncated with a warning, tokenized
# whole (one sentence: the tokenizer on ~87,000 characters) ...
case("spm-text-1mb-line", "SentencePiece",
     [zhen(), text("谢谢。", "我们明天去公园吧。" * 40000, "你好")],
     translate("--split-sentences=off"),
     lines_out(3, nonempty_lines=[1, 2, 3], stderr_has=["warning: input line 2"]))
# ... and a line of 2,000 sentences, each translated and the translations
# joined on one output line. (Until 2026-12-05 the 1 MB line was split into
# its ~9,700 sentences: ~20 s, past the timeout under a sanitizer build
# sharing the cores.)
case("spm-text-many-sentences", "SentencePiece",
     [zhen(), text("谢谢。", "我们明天去公园吧。" * 2000, "你好")], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2, 3]))
# A target SentencePiece model with byte fallback decodes <0x0A> and <0x0D>
# to a line feed and a carriage return: each output line stays one line
# (the breaks written as spaces, said once per input line), the 1-best and
# the n-best lists alike.
case("spm-output-line-breaks", "SentencePiece",
     [base(), byte_fallback_target("<0x0A>"), text("s4 s5 s6", "s7", "s8 s9 s10")],
     translate("--beam-size", "1", "--max-length", "4"),
     lines_out(3, input_warnings=3, nonempty_lines=[1, 2, 3],
               stderr_has=["warning: input line 2: the translation holds a line break; "
                           "written as a space"]))
case("spm-output-carriage-returns-nbest", "SentencePiece",
     [base(), byte_fallback_target("<0x0D>", "<0x0A>"), text("s4 s5 s6", "s7")],
     translate("--beam-size", "2", "--n-best", "2", "--max-length", "4"),
     lines_out(4, input_warnings=2, nonempty_lines=[1, 2, 3, 4],
               stderr_has=["warning: input line 1: the translation holds a line break"]))
case("spm-text-separators", "SentencePiece",
     [zhen(), text("你\r好", "谢\u2028谢", "我\u0085们", "明\x0b天\x0c", "\u2029")], TRANSLATE,
     lines_out(5, nonempty_lines=[1, 2, 3, 4]),
     note="only '\\n' ends a line: CR, VT, FF, NEL, U+2028/2029 inside a line do not")

# =========================================================================
# translate: text input (char/word fixture)
# =========================================================================
IN = "translate input"
case("in-crlf", IN, [base(), text("s4 s5 s6", "s7 s8", "s9", end="\r\n")], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"),
     note="CRLF ends a line like LF (as in vocabularies); the CR is not part of the sentence")
case("in-no-final-newline", IN,
     [base(), write("input.txt", "s4 s5 s6\ns7 s8\ns9")], TRANSLATE,
     lines_out(3, same_stdout_as="in-baseline"))
case("in-stdin", IN, [base(), BASE_TEXT], translate(stdin=True),
     lines_out(3, same_stdout_as="in-baseline"), stdin="input.txt")
BAD_UTF8 = text("s4 s5", b"\xff\xfe", "s6", b"s7 \xc3", b"\xed\xa0\x80", b"\xc0\xaf s8", "s8",
                b"\xf4\x90\x80\x80", b"s9 \xe2\x82")
BAD_LINES = [2, 4, 5, 6, 8, 9]
BAD_UTF8_EXPECT = dict(input_warnings=6, empty_lines=BAD_LINES, nonempty_lines=[1, 3, 7],
                       stderr_has=[f"warning: input line {i}: invalid UTF-8 at byte"
                                   for i in BAD_LINES])
UTF8_NOTE = ("invalid UTF-8 (bad byte, truncated sequence, surrogate, overlong, > U+10FFFF): "
             "'warning: input line N: invalid UTF-8 at byte K', an empty output line, exit 0")
case("in-invalid-utf8", IN, [base(), BAD_UTF8], TRANSLATE, lines_out(9, **BAD_UTF8_EXPECT),
     note=UTF8_NOTE)
case("in-invalid-utf8-stdin", IN, [base(), BAD_UTF8], translate(stdin=True),
     lines_out(9, **BAD_UTF8_EXPECT), stdin="input.txt")
case("in-invalid-utf8-batch1", IN, [base(), BAD_UTF8],
     translate("--batch-size", "1", "--read-ahead", "1"), lines_out(9, **BAD_UTF8_EXPECT))
case("in-invalid-utf8-strict", IN, [base(), BAD_UTF8], translate("--strict"),
     lines_out(9, exit="nonzero", **BAD_UTF8_EXPECT),
     note="--strict: the same output, exit status 1 at the end")
case("in-invalid-utf8-nbest", IN, [base(), text("s4 s5", b"\xff", "s6")],
     translate("--beam-size", "2", "--n-best", "2"),
     lines_out(4, input_warnings=1, nbest_indices=[0, 2], stderr_has=["input line 2"]),
     note="with --n-best a bad line gives no line and the indices keep the alignment")
case("in-invalid-utf8-replace-unk", IN, [base(), text("你好 s4", b"\xe4\xbd s5", "s6")],
     translate("--replace-unk"),
     lines_out(3, input_warnings=1, empty_lines=[2], nonempty_lines=[1, 3]))
case("in-nul-byte", IN, [base(), text("s4\x00s5", "s6", "\x00")], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2]),
     note="NUL bytes are part of a line like any other byte")
ONE_MB = ("s6 " * 349526)[:1 << 20]
case("in-1mb-line", IN, [base(), text("s4 s5", ONE_MB, "s7")], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2, 3], stderr_has=["warning: input line 2"]))
case("in-1mb-line-strict", IN, [base(), text("s4 s5", ONE_MB, "s7")], translate("--strict"),
     lines_out(3, exit="nonzero", nonempty_lines=[1, 2, 3], stderr_has=["warning: input line 2"]),
     note="--strict also fails the run (at the end) for a truncated line")
case("in-empty-lines", IN, [base(), text("s4", "", "s5", "", "")], TRANSLATE,
     lines_out(5, empty_lines=[2, 4, 5], nonempty_lines=[1, 3]))
case("in-only-empty-lines", IN, [base(), write("input.txt", "\n" * 7)], TRANSLATE,
     lines_out(7, empty_lines=[1, 2, 3, 4, 5, 6, 7]))
case("in-empty-file", IN, [base(), write("input.txt", "")], TRANSLATE, lines_out(0))
case("in-huge-line-no-newline", IN,
     [base(), write("input.txt", ("s4 s5 s6 " * 900000)[:8 << 20])], TRANSLATE,
     lines_out(1, nonempty_lines=[1], stderr_has=["warning: input line 1"]))
case("in-whitespace-lines", IN, [base(), text(" ", "\t", "  s4  ", "\u3000", "s5")], TRANSLATE,
     lines_out(5, nonempty_lines=[3, 5]))
case("in-separators", IN,
     [base(), text("s4\rs5", "s6\x0bs7\x0cs8", "s9\u2028s10", "s11\u0085s12", "s13\u2029")],
     TRANSLATE, lines_out(5),
     note="only '\\n' ends a line")
case("in-bom", IN, [base(), write("input.txt", "\ufeffs4 s5\ns6\n")], TRANSLATE, lines_out(2))
case("in-many-lines", IN,
     [base(), text(*[f"s{4 + i % 30} s{4 + (i * 7) % 30}" if i % 11 else "" for i in range(3000)])],
     TRANSLATE, lines_out(3000, empty_lines=list(range(1, 3001, 11))))
case("in-long-word", IN, [base(), text("s4", "q" * 100000, "s5")], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2, 3]))
case("in-long-cjk", IN, [base(), text("你" * 100000)], TRANSLATE,
     lines_out(1, nonempty_lines=[1], stderr_has=["warning: input line 1"]))
case("in-scores-every-token-forbidden", IN, [base(), text("s4 s5", "s6")],
     translate("--scores", "--no-repeat-ngram-size", "1", "--min-length", "60",
               "--max-length", "64", "--max-length-factor", "0"),
     {"exit": 0, "stdout_lines": 0,
      "stderr_has": ["warning: input line 1: no translation",
                     "warning: input line 2: no translation"]},
     note="a beam (greedy with scores: a beam of one) may end without a "
          "hypothesis (docs/reference.md): said, never silent")
case("in-beam-every-token-forbidden", IN, [base(), text("s4 s5", "s6")],
     translate("--beam-size", "2", "--no-repeat-ngram-size", "1", "--min-length", "60",
               "--max-length", "64", "--max-length-factor", "0"),
     {"exit": 0, "stdout_lines": 2, "empty_lines": [1, 2],
      "stderr_has": ["warning: input line 1: no translation",
                     "warning: input line 2: no translation"]},
     note="without --scores the beam's line is empty, and said")
case("in-scores-empty-line", IN, [base(), text("", "s4")], translate("--scores"),
     lines_out(2, stdout_has=["0 |||  ||| 0.000000"]))
# --split-sentences: one output line per input line whatever the line holds.
SPLIT = translate("--split-sentences", "on")
case("in-split-100k-marks", IN, [base(), text("。" * 100000, "s4。s5。", "")], SPLIT,
     lines_out(3, stderr_has=["warning: input line 1"]),
     note="one run of 100000 sentence marks is one sentence (truncated), in linear time")
case("in-split-20k-sentences", IN, [base(), text("s4 s5。" * 20000, "s6")], SPLIT,
     lines_out(2, nonempty_lines=[2]),
     note="20000 sentences in one line are batched with the others and joined")
case("in-split-quotes", IN, [base(), text("s4。" + '"' * 100000 + "s5", "'" * 50000 + "!")],
     SPLIT, lines_out(2))
case("in-split-with-nbest", IN, [base(), text("s4。s5。")],
     translate("--split-sentences", "on", "--n-best", "2", "--beam-size", "2"),
     option_error("--split-sentences on", "--n-best"))
case("in-split-bogus", IN, [base(), text("s4。s5。")], translate("--split-sentences", "yes"),
     option_error("--split-sentences", "on, off or auto"))

# =========================================================================
# translate --ids
# =========================================================================
ID = "translate --ids input"
case("ids-baseline", ID, [base(), text("4 5 6", "7 8", "9")], IDS,
     lines_out(3, nonempty_lines=[1, 2, 3]))
case("ids-crlf", ID, [base(), text("4 5 6", "7 8", "9", end="\r\n")], IDS,
     lines_out(3, same_stdout_as="ids-baseline"))
case("ids-no-final-newline", ID, [base(), write("input.txt", "4 5 6\n7 8\n9")], IDS,
     lines_out(3, same_stdout_as="ids-baseline"))
case("ids-non-integers", ID,
     [base(), text("4 5", "4 x 5", "4.5", "1e3", "0x10", "5abc", "\u0663", "6")], IDS,
     lines_out(8, exit="nonzero", input_errors=6, empty_lines=[2, 3, 4, 5, 6, 7],
               nonempty_lines=[1, 8],
               stderr_has=["error: input line 2: column 3: 'x'"]
               + [f"error: input line {i}: column 1:" for i in range(3, 8)]))
case("ids-outside-vocab", ID, [base(), text("4", "37", "5 99", "5")], IDS,
     lines_out(4, exit="nonzero", input_errors=2, empty_lines=[2, 3], nonempty_lines=[1, 4],
               stderr_has=["error: input line 2: column 1: token id 37",
                           "error: input line 3: column 3: token id 99"]))
case("ids-negative", ID, [base(), text("-1", "4 -5", "6")], IDS,
     lines_out(3, exit="nonzero", input_errors=2, empty_lines=[1, 2], nonempty_lines=[3],
               stderr_has=["error: input line 1: column 1:", "error: input line 2: column 3:"]))
case("ids-huge", ID,
     [base(), text("1099511627776", "4294967300", "18446744073709551616",
                   "9223372036854775807", "1" * 100, "18446744073709551621", "4")], IDS,
     lines_out(7, exit="nonzero", input_errors=6, empty_lines=[1, 2, 3, 4, 5, 6],
               nonempty_lines=[7]),
     note="4294967300 = 2^32+4 and 2^64+5 must not wrap to a valid id")
case("ids-tabs", ID, [base(), text("4\t5\t6", "7\t8", "9")], IDS,
     lines_out(3, same_stdout_as="ids-baseline"),
     note="fields are separated by spaces or tabs")
case("ids-empty-fields", ID, [base(), text("4  5", " 4", "5 ", "\t6", "4 \t5")], IDS,
     lines_out(5, exit="any"),
     note="runs of blanks: the docs do not say whether they make empty fields; either way "
          "each line is translated or reported, never dropped")
case("ids-signs-and-zeros", ID, [base(), text("+5", "05", "-0", "4")], IDS,
     lines_out(4, exit="any", nonempty_lines=[4]))
case("ids-special-ids", ID, [base(), text("0", "1 2 3", "2", "0 0 0 4")], IDS, lines_out(4),
     note="pad/bos/eos/unk ids are inside the vocabulary: valid sources")
case("ids-long-line", ID, [base(), text(" ".join(str(4 + i % 30) for i in range(100000)), "4")],
     IDS, lines_out(2, nonempty_lines=[1, 2], stderr_has=["warning: input line 1"]))
case("ids-nul-byte", ID, [base(), text("4\x005", "6")], IDS,
     lines_out(2, exit="nonzero", input_errors=1, empty_lines=[1], nonempty_lines=[2],
               stderr_has=["error: input line 1: column 1:"]),
     note="a NUL is part of the field, which is then not an integer (not the C string '4')")
case("ids-invalid-utf8", ID, [base(), text(b"4 \xff", "5")], IDS,
     lines_out(2, exit="nonzero", input_errors=1, empty_lines=[1], nonempty_lines=[2]))
case("ids-only-empty-lines", ID, [base(), write("input.txt", "\n\n\n")], IDS,
     lines_out(3, empty_lines=[1, 2, 3]))
case("ids-beam-bad-lines", ID, [base(), text("4 5", "x", "99", "6")],
     translate("--ids", "--beam-size", "3"),
     lines_out(4, exit="nonzero", input_errors=2, empty_lines=[2, 3], nonempty_lines=[1, 4]))

case("ids-nbest-bad-lines", ID, [base(), text("4 5", "x", "6")],
     translate("--ids", "--beam-size", "2", "--n-best", "2"),
     lines_out(4, exit="nonzero", input_errors=1, nbest_indices=[0, 2]),
     note="with --n-best a bad line gives no line and the indices keep the alignment")

# =========================================================================
# translate options and files
# =========================================================================
OP = "translate options"
for name, extra, subs in [
    ("opt-batch-size-0", ["--batch-size", "0"], ["--batch-size"]),
    ("opt-batch-size-negative", ["--batch-size", "-3"], ["--batch-size"]),
    ("opt-beam-size-0", ["--beam-size", "0"], ["--beam-size"]),
    ("opt-n-best-above-beam", ["--beam-size", "2", "--n-best", "3"], ["--n-best"]),
    ("opt-threads-0", ["--threads", "0"], ["--threads"]),
    ("opt-output-empty", ["-o", ""], ["-o", "the path is empty"]),
    ("opt-dump-ir-empty", ["--dump-ir="], ["--dump-ir", "the path is empty"]),
    ("opt-max-length-offset-negative", ["--max-length-offset", "-1"], ["--max-length-offset"]),
    ("opt-repetition-penalty-0", ["--repetition-penalty", "0"], ["--repetition-penalty"]),
    ("opt-shard-out-of-range", ["--shard", "2/2"], ["--shard"]),
    ("opt-shard-zero-of-zero", ["--shard", "0/0"], ["--shard"]),
    ("opt-kernels-bogus", ["--kernels=bogus"], ["--kernels"]),
    ("opt-batch-size-2p64", ["--batch-size", str(2 ** 64)], ["batch-size"]),
    ("opt-batch-size-text", ["--batch-size", "abc"], ["batch-size"]),
    ("opt-unknown-option", ["--bogus-option"], ["--bogus-option"]),
    ("opt-threads-100000", ["--threads", "100000"], ["--threads", "256"]),
    ("opt-beam-size-1000000", ["--beam-size", "1000000"], ["--beam-size", "256"]),
    ("opt-n-best-0", ["--n-best", "0"], ["--n-best"]),
    ("opt-min-length-over-max-length", ["--min-length", "100", "--max-length", "5"],
     ["--min-length", "--max-length (5)"]),
    ("opt-min-length-over-max-len", ["--min-length", "100", "--max-length", "200"],
     ["--min-length", "the model's max_len (64)"]),
    ("opt-length-penalty-inf", ["--length-penalty", "inf"], ["--length-penalty", "finite"]),
    ("opt-length-penalty-nan", ["--length-penalty", "nan"], ["--length-penalty", "finite"]),
    ("opt-repetition-penalty-subnormal", ["--repetition-penalty", "1e-40"],
     ["--repetition-penalty", "float32"]),
    ("opt-repetition-penalty-float-zero", ["--repetition-penalty", "1e-50"],
     ["--repetition-penalty"]),
    ("opt-compute-type-empty", ["--compute-type="], ["--compute-type"]),
    ("opt-kv-type-empty", ["--kv-type="], ["--kv-type"]),
    ("opt-kv-type-unknown", ["--kv-type", "bfloat16"], ["--kv-type", "bfloat16"]),
    # llvm::cl keeps the last of a repeated option: the first file would be
    # silently left out (-i) or left as it was (-o).
    ("opt-input-twice", ["-i", "{case}/input.txt"], ["-i", "more than once"]),
    ("opt-output-twice", ["-o", "{case}/a.txt", "-o", "{case}/b.txt"],
     ["-o", "more than once"]),
    ("opt-dump-ir-twice", ["--dump-ir", "{case}/a", "--dump-ir", "{case}/b"],
     ["--dump-ir", "more than once"]),
]:
    case(name, OP, [base(), ONE_LINE], translate(*extra), option_error(*subs))
case("opt-no-model", OP, [], ["{tfmc}", "translate"], option_error())
case("opt-unknown-command", OP, [], ["{tfmc}", "bogus-command"], option_error("bogus-command"))
case("opt-input-missing", OP, [base()], translate("-i", "{case}/nosuch.txt", stdin=True),
     option_error("nosuch.txt"))
case("opt-input-directory", OP, [base()], ["{tfmc}", "translate", MODEL, "-i", "{case}"] + CACHE,
     option_error("opt-input-directory"),
     note="the error names the path given to -i (here the case directory)")
case("opt-output-unwritable", OP, [base(), ONE_LINE],
     translate("-o", "{case}/no/such/dir/out.txt"), option_error("out.txt"))
case("opt-output-is-input", OP, [base(), ONE_LINE], translate("-o", "{case}/input.txt"),
     option_error("input.txt", "is the input file"),
     note="-o truncates its file: the input must survive (checked by a rerun below)")
case("opt-output-is-input-kept", OP, [base(), ONE_LINE],
     ["sh", "-c", "{tfmc} translate {case}/model.json --cache-dir {cache} -i {case}/input.txt"
      " -o {case}/input.txt; cat {case}/input.txt"],
     {"exit": 0, "stdout_lines": 1})
for name, target, role in [
    ("opt-output-is-weights", ST, "the model's weights"),
    ("opt-output-is-model-json", "model.json", "the model description"),
    ("opt-output-is-source-vocab", SRC, "the model's source vocabulary"),
    ("opt-output-is-target-vocab", TGT, "the model's target vocabulary"),
]:
    case(name, OP, [base(), ONE_LINE], translate("-o", "{case}/" + target),
         option_error(target, role, "would destroy it"),
         note="-o truncates its file: the weights would vanish under their "
              "mapping (SIGBUS), the other files be overwritten")
case("opt-output-is-weights-link", OP,
     [base(), ONE_LINE, write("link.py", "import os\nos.link('model.safetensors', 'weights.link')\n")],
     translate("-o", "{case}/weights.link"),
     option_error("weights.link", "the model's weights"),
     pre=[["{python}", "{case}/link.py"]],
     note="a hard link is the same file: checked by device and inode")
case("opt-stdout-is-input", OP, [base(), ONE_LINE],
     ["sh", "-c", "{tfmc} translate {case}/model.json --cache-dir {cache} -i {case}/input.txt"
      " >> {case}/input.txt"],
     option_error("standard output", "is the input file"),
     note="standard output appended to the input: the run would read its own output")
case("opt-output-is-weights-kept", OP, [base(), ONE_LINE],
     ["sh", "-c", "{tfmc} translate {case}/model.json --cache-dir {cache} -i {case}/input.txt"
      " -o {case}/model.safetensors; {tfmc} translate {case}/model.json --cache-dir {cache}"
      " -i {case}/input.txt"],
     {"exit": 0, "stdout_lines": 1}, note="the refused run leaves the model usable")
# --dump-ir DIR writes 01-tfm.mlir ... 06-asm.s there: none may be a file
# the run reads (until 2026-12-07 the weights or the input were overwritten).
case("dump-ir-file-is-weights", OP,
     [base(), ONE_LINE, copy(ST, "04-llvm.mlir"), set_field(["weights"], "04-llvm.mlir")],
     translate("--dump-ir", "{case}"),
     option_error("04-llvm.mlir", "the model's weights", "--dump-ir", "would destroy it"))
case("dump-ir-file-is-input", OP, [base(), ONE_LINE, copy("input.txt", "01-tfm.mlir")],
     ["{tfmc}", "translate", MODEL, "-i", "{case}/01-tfm.mlir", "--dump-ir", "{case}"] + CACHE,
     option_error("01-tfm.mlir", "the input file", "--dump-ir"))
case("dump-ir-file-full-device", OP,
     [base(), mkdir("dump"), write("link.py", "import os\nos.symlink('/dev/full', 'dump/01-tfm.mlir')\n")],
     ["{tfmc}", "compile", MODEL, "--dump-ir", "{case}/dump", "-o", "{case}/out.mlir"],
     option_error("01-tfm.mlir", "cannot write", "No space left"),
     pre=[["{python}", "{case}/link.py"]],
     note="a stage that cannot be written: one error line (LLVM ERROR until 2026-12-07)")
case("dump-ir-file-is-description-compile", OP,
     [base(), copy("model.json", "02-fused.dot")],
     ["{tfmc}", "compile", "{case}/02-fused.dot", "--dump-ir", "{case}", "-o", "{case}/out.mlir"],
     option_error("02-fused.dot", "the model description", "--dump-ir"))
case("dump-ir-file-is-source-encode", OP,
     [base(), write("05-llvmir.ll", "4 5 6\n")],
     ["{tfmc}", "encode", MODEL, "--src", "{case}/05-llvmir.ll", "-o", "{case}/out.npy",
      "--dump-ir", "{case}"] + CACHE,
     option_error("05-llvmir.ll", "the source file (--src)", "--dump-ir"))
PROFILE = ["{tfmc}", "profile", MODEL, "-i", "{case}/input.txt"] + CACHE
case("profile-output-is-input", OP, [base(), ONE_LINE],
     PROFILE + ["--profile-output", "{case}/input.txt"],
     option_error("input.txt", "is the input file"))
case("profile-svg-is-input", OP, [base(), ONE_LINE],
     PROFILE + ["--profile-svg", "{case}/input.txt"],
     option_error("input.txt", "is the input file"))
case("profile-svg-not-svg", OP, [base(), ONE_LINE],
     PROFILE + ["--profile-svg", "{case}/chart.png"],
     option_error("--profile-svg", "chart.png"),
     note="the chart is SVG text: a .png name would give a file viewers refuse")
case("profile-output-is-translations", OP, [base(), ONE_LINE],
     PROFILE + ["-o", "{case}/out.txt", "--profile-output", "{case}/out.txt"],
     option_error("out.txt", "the translations (-o)"),
     note="two outputs naming one file (here one that does not exist yet)")
case("profile-output-through-linked-directory", OP,
     [base(), ONE_LINE, mkdir("real"),
      write("link.py", "import os\nos.symlink('real', 'linked')\n")],
     PROFILE + ["-o", "{case}/real/out.txt", "--profile-output", "{case}/linked/out.txt"],
     option_error("linked/out.txt", "the translations (-o)"),
     pre=[["{python}", "{case}/link.py"]],
     note="two names of one file that does not exist yet, through a linked directory")
case("compile-output-is-model-json", OP, [base()],
     ["{tfmc}", "compile", MODEL, "-o", MODEL] + CACHE,
     option_error("model.json", "the model description"))
case("encode-output-is-source", OP, [base(), write("src.ids", "4 5\n")],
     ["{tfmc}", "encode", MODEL, "--src", "{case}/src.ids", "-o", "{case}/src.ids"] + CACHE,
     option_error("src.ids", "the source file (--src)"))
case("cache-only-with-emit", OP, [base()],
     ["{tfmc}", "compile", MODEL, "--cache-only", "--emit=asm"] + CACHE,
     option_error("--cache-only", "--emit"),
     note="--cache-only prints no IR: --emit or -o with it would be ignored")
for name, value in [("opt-integer-hex", "0x10"), ("opt-integer-binary", "0b101"),
                    ("opt-integer-plus", "+4")]:
    case(name, OP, [base(), ONE_LINE], translate("--max-length", value),
         option_error("--max-length", value),
         note="integers are decimal: llvm::cl alone reads 0x, 0b and a leading 0")
case("quantize-into-vocabulary-directory", OP,
     [base(), ONE_LINE, mkdir("out"), copy(SRC, "out/" + SRC), remove(SRC),
      set_field(["source", "vocab"], "out/" + SRC)],
     ["sh", "-c", "{tfmc} quantize {case}/model.json -o {case}/out > /dev/null && "
      "{tfmc} translate {case}/out/model.json --cache-dir {cache} -i {case}/input.txt"],
     {"exit": 0, "stdout_lines": 1},
     note="a vocabulary already in the output directory is kept, not copied onto "
          "itself (which would empty it)")
case("opt-output-full-device", OP, [base(), ONE_LINE], translate("-o", "/dev/full"),
     option_error("/dev/full", "cannot write"))
# Every command's output on a full device: one error line, a non-zero exit
# (encode/forward died of "LLVM ERROR", score, quantize and compile
# --cache-only said nothing and exited 0 until 2026-12-07).
for name, cmd, subs in [
    ("encode-output-full-device",
     ["{tfmc}", "encode", MODEL, "--src", "{case}/src.ids", "-o", "/dev/full"] + CACHE,
     ["/dev/full", "cannot write"]),
    ("forward-output-full-device",
     ["{tfmc}", "forward", MODEL, "--src", "{case}/src.ids", "--tgt", "{case}/tgt.ids",
      "-o", "/dev/full"] + CACHE, ["/dev/full", "cannot write"]),
    ("score-stdout-full-device",
     ["sh", "-c", "{tfmc} score --hyp {case}/src.ids --ref {case}/src.ids > /dev/full"],
     ["standard output", "cannot write"]),
    ("quantize-stdout-full-device",
     ["sh", "-c", "{tfmc} quantize {case}/model.json -o {case}/q8 > /dev/full"],
     ["standard output", "cannot write"]),
    ("compile-cache-only-stdout-full-device",
     ["sh", "-c", "{tfmc} compile {case}/model.json --cache-only --cache-dir {cache} > /dev/full"],
     ["standard output", "cannot write"]),
]:
    case(name, OP, [base(), write("src.ids", "4 5\n6\n"), write("tgt.ids", "1 4\n1 5\n")],
         cmd, option_error(*subs))
case("in-line-over-256k-bytes-cut", IN,
     [base(), text("s4 s5", "s6 " * 200000, "s7")], TRANSLATE,
     lines_out(3, nonempty_lines=[1, 2, 3],
               stderr_has=["warning: input line 2: longer than 262144 bytes"]),
     note="a line keeps its first 256 KiB (the rest is read and dropped)")
case("model-path-with-nul", "model.json", [base(), set_field(["weights"], "model.safetensors\u0000x")],
     COMPILE, model_error("weights", "NUL"))

# =========================================================================
# forward / score / cache
# =========================================================================
FWD = ["{tfmc}", "forward", MODEL, "--src", "{case}/src.ids", "--tgt", "{case}/tgt.ids",
       "-o", "{case}/out.npy"] + CACHE
for name, src, tgt, subs in [
    ("fwd-bad-source-id", "4 x\n5\n", "1 4\n1 5\n", ["src.ids", "line 1", "'x'"]),
    ("fwd-source-outside-vocab", "4 37\n", "1 4\n", ["src.ids", "line 1", "token id 37",
                                                      "source vocabulary"]),
    ("fwd-target-outside-vocab", "4\n", "1 41\n", ["tgt.ids", "line 1", "token id 41",
                                                      "target vocabulary"]),
    ("fwd-target-no-bos", "4\n", "2 5\n", ["tgt.ids:1:", "must start with bos"]),
    ("fwd-row-count", "4\n5\n", "1 4\n", ["src.ids has 2 lines", "tgt.ids has 1"]),
    ("fwd-target-invalid-utf8", "4\n", "1 \xff\n", []),
]:
    case(name, "forward", [base(), write("src.ids", src), write("tgt.ids", tgt.encode("latin-1"))],
         FWD, {"exit": "nonzero", "one_error": True, "error_has": subs})

# Weights so large that the arithmetic overflows: forward and encode write
# what came out, with one warning (as translate warns of such lines).
HUGE = [lambda v: [max(min(x * 1e38, 3.4e38), -3.4e38) for x in v]]
case("fwd-outputs-not-numbers", "forward",
     [base(), write("src.ids", "4 5\n6\n"), write("tgt.ids", "1 4\n1 5\n"),
      st_tensor("decoder_layers.0.feed_forward.linear1.weight", HUGE[0])],
     FWD, ok(stderr_has=["warning: ", "of the logits are not numbers"]))
case("encode-outputs-not-numbers", "forward",
     [base(), write("src.ids", "4 5\n6\n"),
      st_tensor("encoder_layers.1.feed_forward.linear1.weight", HUGE[0])],
     ["{tfmc}", "encode", MODEL, "--src", "{case}/src.ids", "-o", "{case}/out.npy"] + CACHE,
     ok(stderr_has=["warning: ", "of the encoder states are not numbers"]))

SCORE = ["{tfmc}", "score", "--hyp", "{case}/hyp.txt", "--ref", "{case}/ref.txt"]
for name, hyp, ref, subs in [
    ("score-invalid-utf8", b"a b\n\xff c\n", b"a b\nc d\n", ["hyp.txt:2", "invalid UTF-8"]),
    ("score-line-count", b"a\nb\nc\n", b"a\n", ["has 1 lines but", "has 3"]),
]:
    case(name, "score", [write("hyp.txt", hyp), write("ref.txt", ref)], SCORE,
         {"exit": "nonzero", "one_error": True, "error_has": subs})
# An empty reference line is scored as sacreBLEU 2.2+ scores it (no
# reference words), not refused.
case("score-empty-reference-line", "score", [write("hyp.txt", b"a b\nc d\n"),
                                             write("ref.txt", b"a b\n\n")], SCORE,
     lines_out(2, stdout_has=["hyp_len = 4 ref_len = 2", "chrF2 = 100.00"]))
case("score-dev-zero", "score", [write("ref.txt", "a\n")],
     ["{tfmc}", "score", "--hyp", "/dev/zero", "--ref", "{case}/ref.txt"],
     {"exit": "nonzero", "one_error": True, "error_has": ["/dev/zero", "256 MiB"]},
     note="a file that is not a regular one is read up to a bound")
case("score-missing-file", "score", [write("ref.txt", "a\n")], SCORE,
     {"exit": "nonzero", "one_error": True, "error_has": ["hyp.txt", "cannot open file"]})

CORRUPT = """import glob, sys
mode = sys.argv[1]
paths = glob.glob("cache/*.tfmo")
assert paths, "no cache entry"
for p in paths:
    b = bytearray(open(p, "rb").read())
    if mode == "truncate":
        b = b[:len(b) // 2]
    else:
        for i in range(len(b) // 3, len(b) // 3 + 64):
            b[i] ^= 0x5A
    open(p, "wb").write(bytes(b))
"""
PRE_COMPILE = ["{tfmc}", "compile", MODEL, "--cache-only", "--cache-dir", "{case}/cache"]
for mode in ("truncate", "flip"):
    case(f"cache-entry-{mode}", "compiled-model cache",
         [base(), ONE_LINE, write("corrupt.py", CORRUPT)],
         ["{tfmc}", "translate", MODEL, "-i", "{case}/input.txt", "--cache-dir", "{case}/cache"],
         lines_out(1, nonempty_lines=[1], stderr_has=["warning: compile cache"]),
         pre=[PRE_COMPILE, ["{python}", "{case}/corrupt.py", mode]],
         note="a corrupt entry is a warning and a recompile, never an error or a crash")
case("cache-dir-is-a-file", "compiled-model cache", [base(), ONE_LINE, write("afile", "x")],
     ["{tfmc}", "translate", MODEL, "-i", "{case}/input.txt", "--cache-dir", "{case}/afile"],
     lines_out(1, nonempty_lines=[1], stderr_has=["warning:"]))
SPECIAL = """import glob, os, sys
for p in glob.glob("cache/*.tfmo"):
    os.remove(p)
    if sys.argv[1] == "fifo":
        os.mkfifo(p)
    else:
        os.symlink("/dev/zero", p)
"""
for mode in ("fifo", "dev-zero"):
    case(f"cache-entry-{mode}", "compiled-model cache",
         [base(), ONE_LINE, write("special.py", SPECIAL)],
         ["{tfmc}", "translate", MODEL, "-i", "{case}/input.txt", "--cache-dir", "{case}/cache"],
         lines_out(1, nonempty_lines=[1], stderr_has=["not a regular file"]),
         pre=[PRE_COMPILE, ["{python}", "{case}/special.py", mode]],
         note="an entry that is not a regular file would block or never end a read")
case("cache-only-unusable-dir", "compiled-model cache", [base(), write("afile", "x")],
     ["{tfmc}", "compile", MODEL, "--cache-only", "--cache-dir", "{case}/afile"],
     {"exit": "nonzero", "stdout_lines": 0, "error_has": ["could not be stored"]},
     note="filling the cache is the command's only job: a cache it cannot write fails it")

# =========================================================================
# tfm-opt: .mlir files
# =========================================================================
MO = "tfm-opt"
VALID_MLIR = """func.func @f(%ids: tensor<?x?xi32>, %t: tensor<40x8xf32>, %w: tensor<16x8xf32>,
             %b: tensor<16xf32>, %g: tensor<16xf32>, %beta: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %e = tfm.embedding %ids, %t scale 1.0 : (tensor<?x?xi32>, tensor<40x8xf32>) -> tensor<?x?x8xf32>
  %h = tfm.linear relu %e, %w, %b : tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<?x?x16xf32>
  %n = tfm.layer_norm %h, %g, %beta eps 1.0e-5 : tensor<?x?x16xf32>, tensor<16xf32>
  return %n : tensor<?x?x16xf32>
}
"""
MHA = """func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %a = tfm.multi_head_attention causal %x, %x weights(%w, %b, %w, %b, %w, %b, %w, %b) heads HEADS
      : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}
"""
MLIR_ERR = {"exit": "nonzero", "stderr_has": ["input.mlir:", "error:"]}
# tfm-opt checks the text before MLIR's recursive parser sees it.
TOO_DEEP = {"exit": "nonzero", "one_error": True, "error_has": ["nested deeper than 256"]}
NO_CRASH = {"exit": "any", "if_error": {"stderr_has": ["error:"]}}
for name, content, cmd_extra, exp in [
    ("mlir-valid", VALID_MLIR, [], ok()),
    ("mlir-valid-lowered", VALID_MLIR, ["--tfm-lower-to-llvm"], ok()),
    ("mlir-missing-operand", VALID_MLIR.replace("tfm.embedding %ids, %t", "tfm.embedding %ids"), [], MLIR_ERR),
    ("mlir-wrong-operand-type", VALID_MLIR.replace("%ids: tensor<?x?xi32>", "%ids: tensor<?x?xf32>")
     .replace("(tensor<?x?xi32>, tensor<40x8xf32>)", "(tensor<?x?xf32>, tensor<40x8xf32>)"), [], MLIR_ERR),
    ("mlir-wrong-result-width", VALID_MLIR.replace("-> tensor<?x?x8xf32>\n  %h", "-> tensor<?x?x9xf32>\n  %h"), [], MLIR_ERR),
    ("mlir-type-mismatch-use", VALID_MLIR.replace("return %n : tensor<?x?x16xf32>", "return %e : tensor<?x?x16xf32>"), [], MLIR_ERR),
    ("mlir-unknown-op", VALID_MLIR.replace("tfm.layer_norm", "tfm.bogus"), [], MLIR_ERR),
    ("mlir-unknown-activation", VALID_MLIR.replace("tfm.linear relu", "tfm.linear swish"), [], MLIR_ERR),
    ("mlir-truncated", VALID_MLIR[:len(VALID_MLIR) * 3 // 5], [], MLIR_ERR),
    ("mlir-truncated-in-type", VALID_MLIR[:VALID_MLIR.index("tensor<40x8xf32>") + 9], [], MLIR_ERR),
    ("mlir-truncated-lowering", VALID_MLIR[:len(VALID_MLIR) - 3], ["--tfm-lower-to-llvm"], MLIR_ERR),
    ("mlir-invalid-on-pass", VALID_MLIR.replace("eps 1.0e-5", "eps -1.0"), ["--tfm-lower-to-llvm"], MLIR_ERR),
    ("mlir-eps-nan", VALID_MLIR.replace("eps 1.0e-5", "eps 0x7FF8000000000000"), [], MLIR_ERR),
    ("mlir-mha-heads-0", MHA.replace("HEADS", "0"), [], MLIR_ERR),
    ("mlir-mha-heads-negative", MHA.replace("HEADS", "-2"), [], MLIR_ERR),
    ("mlir-mha-heads-2p40", MHA.replace("HEADS", str(2 ** 40)), [], MLIR_ERR),
    ("mlir-mha-heads-0-lowered", MHA.replace("HEADS", "0"), ["--tfm-lower-multi-head-attention"], MLIR_ERR),
    ("mlir-slice-out-of-range", """func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %s = tfm.slice %x[4294967296] : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}
""", [], MLIR_ERR),
    ("mlir-zero-width-lowered", """func.func @f(%x: tensor<?x?x0xf32>, %g: tensor<0xf32>) -> tensor<?x?x0xf32> {
  %n = tfm.layer_norm %x, %g, %g eps 1.0e-5 : tensor<?x?x0xf32>, tensor<0xf32>
  return %n : tensor<?x?x0xf32>
}
""", ["--tfm-lower-to-llvm"], NO_CRASH),
    ("mlir-empty-file", "", [], ok()),
    ("mlir-garbage", RANDOM_BYTES, [], MLIR_ERR),
    ("mlir-invalid-utf8-string", b'func.func private @f() attributes {a = "\xff\xfe"}\n', [], NO_CRASH),
    ("mlir-nested-regions-100k", "module {" * 100000 + "}" * 100000 + "\n", [], TOO_DEEP),
    ("mlir-nested-regions-10k-lowered", "module {" * 10000 + "}" * 10000 + "\n", ["--tfm-lower-to-llvm"], TOO_DEEP),
    ("mlir-nested-types-100k", "func.func private @f(" + "tuple<" * 100000 + "f32" + ">" * 100000 + ")\n", [], TOO_DEEP),
    ("mlir-nested-attrs-100k", "func.func private @f() attributes {a = " + nested(100000) + "}\n", [], TOO_DEEP),
    ("mlir-nested-parens-100k", "#m = affine_map<(d0) -> (" + "(" * 100000 + "d0" + ")" * 100000 + ")>\n"
     "func.func private @f() attributes {m = #m}\n", [], TOO_DEEP),
    ("mlir-unclosed-100k", "module {" * 100000, [], TOO_DEEP),
]:
    case(name, MO, [write("input.mlir", content)], OPT + cmd_extra, exp)

# =========================================================================
# encode
# =========================================================================
ENC = ["{tfmc}", "encode", MODEL, "--src", "{case}/src.ids", "-o", "{case}/out.npy"] + CACHE
case("enc-bad-source-id", "encode", [base(), write("src.ids", "4 5\n4 x\n")], ENC,
     {"exit": "nonzero", "one_error": True, "error_has": ["x"]})
case("enc-empty-source", "encode", [base(), write("src.ids", "")], ENC,
     {"exit": "any", "if_error": {"one_error": True}})

# =========================================================================
# Known failures of the current build (findings). Each entry: what happens
# and which rule it breaks. Remove an entry once tfmc is fixed: the runner
# reports the case as XPASS (a failure) until then.
# =========================================================================
_STACK = ("SIGSEGV: stack overflow in a recursive parser; the rule is one 'error:' line "
          "naming the file, never a crash")
_CL = ("LLVM cl::opt diagnostic ('tfmc: ...', not starting with 'error:', sometimes two "
       "lines); cli.md: every error is one line starting with 'error:'")
KNOWN_FAILURES = {
}

_by_name = {c.name: c for c in CASES}
for _name, _why in KNOWN_FAILURES.items():
    _by_name[_name].xfail = _why
