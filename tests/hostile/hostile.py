"""Building blocks of the hostile-input corpus (see docs/hostile-input.md).

A case is a name, a group, a list of *setup steps* that write the case's
files into its own directory, a command (an argv list with placeholders)
and the outcome the documentation promises.  This module holds the steps
and the expectation helpers; cases.py lists the cases; make_corpus.py
writes them; run_corpus.py runs them.

Placeholders in argv (resolved by run_corpus.py):
  {tfmc} {tfm_opt} {python}  the tools under test and this interpreter
  {case}                     the case's directory (absolute)
  {corpus}                   the corpus root (shared files live in _shared/)
  {cache}                    the compiled-model cache shared by all cases
"""

import json
import shutil
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "e2e" / "fixtures" / "post-relu-noscale"
ZHEN = REPO / "examples" / "zh-en"

WEIGHTS = "model.safetensors"


# --------------------------------------------------------------------------
# Case records


class Case:
    def __init__(self, name, group, setup, cmd, expect, stdin=None, pre=(),
                 xfail=None, note=""):
        self.name = name
        self.group = group
        self.setup = list(setup)
        self.cmd = list(cmd)
        self.expect = dict(expect)
        self.stdin = stdin          # file name in the case directory, or None
        self.pre = [list(p) for p in pre]  # commands that must succeed first
        self.xfail = xfail          # why the current build fails it, or None
        self.note = note

    def manifest(self):
        entry = {"name": self.name, "group": self.group, "argv": self.cmd,
                 "expect": self.expect}
        if self.stdin:
            entry["stdin"] = self.stdin
        if self.pre:
            entry["pre"] = self.pre
        if self.xfail:
            entry["xfail"] = self.xfail
        if self.note:
            entry["note"] = self.note
        return entry


class Ctx:
    """What a setup step sees: the case directory and the corpus root."""

    def __init__(self, case_dir, corpus):
        self.dir = Path(case_dir)
        self.corpus = Path(corpus)

    def path(self, name):
        return self.dir / name


# --------------------------------------------------------------------------
# Expectations.  Keys understood by run_corpus.py:
#   exit            0 | "nonzero" | "any"
#   one_error       exactly one stderr line starts with "error:"; every other
#                   stderr line starts with "warning:"
#   error_has       substrings the (first) "error:" line must contain
#   stderr_has      substrings stderr must contain
#   stderr_lacks    substrings stderr must not contain
#   stdout_lines    exact number of '\n'-terminated stdout lines (and stdout
#                   ends in '\n' unless empty)
#   empty_lines     1-based stdout lines that must be empty
#   nonempty_lines  1-based stdout lines that must not be empty
#   stdout_has / stdout_lacks   substrings of stdout
#   input_errors    exact number of "error: input line N" lines
#   consistent      translate bookkeeping: every "error: input line N" has an
#                   empty output line N (or, with --n-best/--scores, no
#                   line with index N-1), and the exit status is 1 exactly
#                   when there is such an error
#   same_stdout_as  name of a case whose stdout must be identical
#   if_error / if_ok  further expectations applied only when the exit status
#                   is non-zero / zero (for exit "any")
# Checked for every case: no timeout, no signal, exit status < 128, no LLVM
# crash banner; for tfmc, a non-zero exit has at least one "error:" line.


def model_error(*subs, out_lines=None):
    """A bad model file: non-zero, one `error:` line naming file + field."""
    e = {"exit": "nonzero", "one_error": True, "error_has": list(subs)}
    if out_lines is not None:
        e["stdout_lines"] = out_lines
    return e


def option_error(*subs):
    return {"exit": "nonzero", "one_error": True, "error_has": list(subs),
            "stdout_lines": 0}


def ok(**more):
    e = {"exit": 0}
    e.update(more)
    return e


def lines_out(n, exit=0, **more):
    """A translate run: exactly n output lines, bookkeeping consistent."""
    e = {"exit": exit, "stdout_lines": n, "consistent": True}
    e.update(more)
    return e


# --------------------------------------------------------------------------
# Setup steps: functions of a Ctx.


def base(files=("model.json", "src.vocab", "tgt.vocab", WEIGHTS)):
    """Copy the small fixture model (d_model 32, 2+2 layers, char/word)."""
    def step(ctx):
        for f in files:
            shutil.copyfile(FIXTURE / f, ctx.path(f))
    return step


def zhen(spm=True):
    """The bundled SentencePiece zh-en model; its 17 MB of weights are
    shared (model.json points at _shared/zh-en.safetensors)."""
    def step(ctx):
        for f in ("src.vocab", "tgt.vocab") + (("src.spm", "tgt.spm") if spm else ()):
            shutil.copyfile(ZHEN / f, ctx.path(f))
        desc = json.loads((ZHEN / "model.json").read_text())
        desc["weights"] = str(ctx.corpus / "_shared" / "zh-en.safetensors")
        write_json(ctx.path("model.json"), desc)
    return step


def byte_fallback_target(*spikes):
    """The small fixture with a SentencePiece target side whose model has
    byte fallback (trained here, ~300 pieces): the target vocabulary, the
    decoder embedding and the output projection resized to its pieces. The
    projection's weights are zero and its bias favours the pieces `spikes`
    (e.g. "<0x0A>", most favoured first), so every step picks the first:
    a model that writes raw bytes such as a line feed."""
    def step(ctx):
        import io
        import random

        import sentencepiece as spm
        rng = random.Random(1)
        words = ("the a cat dog runs sleeps park tea likes we go tomorrow "
                 "very tired morning every he she it").split()
        lines = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(300)]
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model, vocab_size=300,
            byte_fallback=True, hard_vocab_limit=False, model_type="bpe",
            pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="<pad>",
            bos_piece="<s>", eos_piece="</s>", unk_piece="<unk>", minloglevel=2)
        ctx.path("tgt.spm").write_bytes(model.getvalue())
        proc = spm.SentencePieceProcessor(model_proto=model.getvalue())
        n = proc.get_piece_size()
        ctx.path("tgt.vocab").write_text(
            "".join(proc.id_to_piece(i) + "\n" for i in range(n)), encoding="utf-8")
        desc = json.loads(ctx.path("model.json").read_text())
        desc["target"] = {"vocab": "tgt.vocab", "tokenizer": "sentencepiece",
                          "model": "tgt.spm"}
        write_json(ctx.path("model.json"), desc)
        header, data = st_split(ctx.path(WEIGHTS).read_bytes())
        d = header["linear.weight"]["shape"][1]
        bias = [0.0] * n
        for rank, piece in enumerate(spikes):
            bias[proc.piece_to_id(piece)] = 10.0 - rank
        out, new = bytearray(), {}
        for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]
                              if kv[0] != "__metadata__" else -1):
            if name == "__metadata__":
                new[name] = t
                continue
            if name in ("decoder_embedding.weight", "linear.weight"):
                raw, shape = struct.pack(f"<{n * d}f", *([0.01] * (n * d))), [n, d]
                if name == "linear.weight":
                    raw = bytes(4 * n * d)
            elif name == "linear.bias":
                raw, shape = struct.pack(f"<{n}f", *bias), [n]
            else:
                begin, end = t["data_offsets"]
                raw, shape = data[begin:end], t["shape"]
            new[name] = {"dtype": "F32", "shape": shape,
                         "data_offsets": [len(out), len(out) + len(raw)]}
            out += raw
        ctx.path(WEIGHTS).write_bytes(st_join(new, bytes(out)))
    return step


def shared_files(corpus):
    shared = Path(corpus) / "_shared"
    shared.mkdir(parents=True, exist_ok=True)
    target = shared / "zh-en.safetensors"
    if not target.exists():
        shutil.copyfile(ZHEN / WEIGHTS, target)


def write_json(path, obj):
    Path(path).write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write(name, data):
    """Write bytes (or str, as UTF-8) to a file of the case."""
    def step(ctx):
        p = ctx.path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return step


def mkdir(name):
    def step(ctx):
        ctx.path(name).mkdir(parents=True, exist_ok=True)
    return step


def remove(name):
    def step(ctx):
        p = ctx.path(name)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return step


def copy(src, dst):
    def step(ctx):
        shutil.copyfile(ctx.path(src), ctx.path(dst))
    return step


def edit_bytes(name, fn):
    """Replace a file's bytes with fn(bytes)."""
    def step(ctx):
        p = ctx.path(name)
        p.write_bytes(fn(p.read_bytes()))
    return step


def truncate(name, size):
    """Cut a file to `size` bytes; a negative size counts from the end."""
    def cut(b):
        return b[:size] if size >= 0 else b[:len(b) + size]
    return edit_bytes(name, cut)


def replace(name, old, new, count=1):
    """Textual replacement (bytes or str); fails loudly if `old` is absent."""
    def fn(b):
        o = old.encode() if isinstance(old, str) else old
        n = new.encode() if isinstance(new, str) else new
        if o not in b:
            raise ValueError(f"{name}: {o!r} not found")
        return b.replace(o, n, count)
    return edit_bytes(name, fn)


def set_field(keys, value, name="model.json"):
    """Set (or, with value=DELETE, remove) a nested field of a JSON file."""
    def step(ctx):
        p = ctx.path(name)
        obj = json.loads(p.read_text())
        node = obj
        for k in keys[:-1]:
            node = node[k]
        if value is DELETE:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
        write_json(p, obj)
    return step


DELETE = object()


def vocab_lines(name, fn):
    """Rewrite a vocabulary as a list of byte lines (no line ends)."""
    def edit(b):
        lines = b.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return b"\n".join(fn(lines)) + b"\n"
    return edit_bytes(name, edit)


# --------------------------------------------------------------------------
# safetensors


def st_split(b):
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    return header, b[8 + n:]


def st_join(header, data, header_text=None, length=None):
    text = header_text if header_text is not None else \
        json.dumps(header, separators=(",", ":")).encode()
    if isinstance(text, str):
        text = text.encode()
    n = len(text) if length is None else length
    return struct.pack("<Q", n) + text + data


def st_header(fn):
    """Edit the parsed header: fn(header dict, data bytes) -> (header, data)
    or returns None to keep the edited header in place."""
    def edit(b):
        header, data = st_split(b)
        r = fn(header, data)
        if r is not None:
            header, data = r
        return st_join(header, data)
    return edit_bytes(WEIGHTS, edit)


def st_header_text(fn):
    """Edit the header as JSON text: fn(str) -> str or bytes."""
    def edit(b):
        header, data = st_split(b)
        text = json.dumps(header, separators=(",", ":"))
        return st_join(None, data, header_text=fn(text))
    return edit_bytes(WEIGHTS, edit)


def st_length(n):
    """Overwrite the 8-byte header length."""
    return edit_bytes(WEIGHTS, lambda b: struct.pack("<Q", n) + b[8:])


def st_header_size(b):
    return struct.unpack("<Q", b[:8])[0]


def st_tensor(name, fn):
    """Edit one tensor's data: fn(list of floats) -> list of floats (F32)."""
    def edit(header, data):
        t = header[name]
        begin, end = t["data_offsets"]
        count = (end - begin) // 4
        values = list(struct.unpack(f"<{count}f", data[begin:end]))
        values = fn(values)
        data = data[:begin] + struct.pack(f"<{count}f", *values) + data[end:]
        return header, data
    return st_header(edit)


def st_convert(dtype):
    """Re-encode every tensor as F16 or BF16 (valid files)."""
    import array

    def edit(header, data):
        out = bytearray()
        new = {}
        for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]
                              if kv[0] != "__metadata__" else -1):
            if name == "__metadata__":
                new[name] = t
                continue
            begin, end = t["data_offsets"]
            vals = array.array("f")
            vals.frombytes(data[begin:end])
            if dtype == "F16":
                raw = struct.pack(f"<{len(vals)}e", *vals)
            else:
                raw = b"".join(struct.pack("<I", x)[2:4]
                               for x in struct.unpack(f"<{len(vals)}I", data[begin:end]))
            start = len(out)
            out += raw
            new[name] = {"dtype": dtype, "shape": t["shape"],
                         "data_offsets": [start, len(out)]}
        return new, bytes(out)
    return st_header(edit)


def st_int8(name, scales=None, scale_shape=None, drop_scale=False, flat=False,
            scale_dtype="F32"):
    """Store F32 matrix `name` as a pre-quantized I8 tensor plus `name_scale`
    (per row, max|w| / 127), appended after the data; `scales` edits the
    scale list, the other flags break the pair in one way each."""
    def edit(header, data):
        t = header.pop(name)
        begin, end = t["data_offsets"]
        rows, cols = t["shape"]
        vals = struct.unpack(f"<{rows * cols}f", data[begin:end])
        q, sc = [], []
        for r in range(rows):
            row = vals[r * cols:(r + 1) * cols]
            amax = max(abs(v) for v in row)
            s = amax / 127 if amax else 0.0
            sc.append(s)
            q += [max(-127, min(127, round(v / s))) if s else 0 for v in row]
        out = bytearray(data)
        start = len(out)
        out += struct.pack(f"<{len(q)}b", *q)
        header[name] = {"dtype": "I8", "shape": [rows * cols] if flat else [rows, cols],
                        "data_offsets": [start, len(out)]}
        if not drop_scale:
            sc = scales(sc) if scales else sc
            out += b"\0" * (-len(out) % 4)
            start = len(out)
            out += struct.pack(f"<{len(sc)}f", *sc)
            header[name + "_scale"] = {"dtype": scale_dtype,
                                       "shape": scale_shape or [len(sc)],
                                       "data_offsets": [start, len(out)]}
        return header, bytes(out)
    return st_header(edit)


def nested(depth, open_="[", close="]"):
    return open_ * depth + close * depth
