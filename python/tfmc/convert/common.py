"""What every converter subcommand shares: the one error type, notes, reading
torch.save() files without running code from them, and writing the pieces of
a tfmc model directory (docs/model-format.md).

    ConversionError            a user-facing error, printed as `error: ...`
    fail(msg), note(msg)       raise one; print `note: ...` on stderr
    check_input_file(path, what)   fail unless path is a regular file (symlinks followed)
    read_input(path, what)     its bytes (a bounded read of a regular file)
    parse_json(data, where), read_json(path, what)   JSON with tfmc's nesting limit
    table_size_problem(rows, d_model)   why a positional table would not fit, or None
    load_torch_checkpoint(path, allow=())   the unpickled object, safely
    state_dict_of(obj, path)   that object reduced to {name: tensor}
    write_safetensors(path, tensors, dtype="F32")
    write_vocab(path, tokens, source=None)
    write_model_json(path, desc)
"""

import collections
import io
import json
import os
import shutil
import pickle
import re
import resource
import stat
import struct
import sys
import zipfile

import numpy as np
import torch

from tfmc.reference import tfm as _tfm


class ConversionError(Exception):
    """A user-facing error: the dispatcher prints it as one line `error: ...`, exit status 1."""


def fail(message):
    raise ConversionError(message)


def note(message):
    print(f"note: {message}", file=sys.stderr)


# --------------------------------------------------------------------------- reading input files

# The most bytes a text input (config.json, a vocabulary, a dictionary, a
# --names map) may have: far above any real one, so that a wrong file is an
# error rather than an out-of-memory kill.
TEXT_LIMIT = 256 << 20

# How deep JSON may nest: tfmc's loader's limit (frontends/model/FileSupport.h,
# kMaxJsonNesting), which no real configuration comes near.
JSON_NESTING_LIMIT = 256

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def _input_problem(path, kind):
    """(None, stat result) when `path`, symlinks followed, is a regular file;
    else (why not, None)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"no such file: it is a symbolic link to the missing '{os.readlink(path)}'", None
        return "no such file", None
    except OSError as e:
        return f"cannot open: {e.strerror or e}", None
    if stat.S_ISREG(st.st_mode):
        return None, st
    thing = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
    if os.path.islink(path):
        thing = f"a symbolic link to {thing} '{os.path.realpath(path)}'"
    return f"it is {thing}, not {kind}", None


def check_input_file(path, what=None, where=None, kind="a regular file"):
    """Fails unless `path`, symlinks followed, is a regular file (a FIFO
    would hang a reader, /dev/zero would fill the memory): one line
    `WHERE: no such file (WHAT)`, `WHERE: it is a directory, not KIND
    (WHAT)`, ... `where` defaults to the path. Every input file a converter
    reads, or hands to a library, is checked here first."""
    problem, st = _input_problem(path, kind)
    if problem is not None:
        fail(f"{where or path}: {problem}" + (f" ({what})" if what else ""))
    return st


def read_input(path, what=None, where=None, limit=TEXT_LIMIT):
    """The bytes of the regular file `path` (check_input_file), at most
    `limit` of them (None: no limit); every failure is one line naming
    `where` (default: the path)."""
    where = where or path
    check_input_file(path, what, where)
    try:
        # O_NONBLOCK: should the path have become a FIFO since the check,
        # opening it does not wait for a writer (fstat below refuses it).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        fail(f"{where}: cannot read: {e.strerror or e}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            fail(f"{where}: it is not a regular file" + (f" ({what})" if what else ""))
        if limit is not None and st.st_size > limit:
            fail(f"{where}: the file has {st.st_size} bytes, more than the {limit >> 20} MiB "
                 f"allowed for a text input")
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as e:
            fail(f"{where}: cannot read: {e.strerror or e}")
    if limit is not None and len(data) > limit:
        fail(f"{where}: the file has more than the {limit >> 20} MiB allowed for a text input")
    return data


# Strings (whose brackets do not count) and brackets, in JSON text as bytes.
_JSON_NESTING_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)


def _nesting_beyond(data, limit):
    """The byte offset of the first bracket nested deeper than `limit`, or None
    (FileSupport.cpp's nestingBeyond)."""
    depth = 0
    for m in _JSON_NESTING_TOKENS.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return m.start()
        elif c in (b"]", b"}") and depth:
            depth -= 1
    return None


def _no_duplicates(where):
    def hook(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                fail(f"{where}: key '{k}' appears twice")
            seen.add(k)
        return dict(pairs)
    return hook


def parse_json(data, where, invalid="invalid JSON", offset=0):
    """`data` (UTF-8 bytes) as JSON, refusing a key repeated in one object and
    nesting deeper than tfmc's loader allows; every failure is one line
    `WHERE: INVALID: ...`. `offset`: where `data` starts in its file (for the
    byte positions in messages)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    at = _nesting_beyond(data, JSON_NESTING_LIMIT)
    if at is not None:
        fail(f"{where}: {invalid}: nested deeper than {JSON_NESTING_LIMIT} levels at byte {offset + at}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{where}: not UTF-8 text (byte {offset + e.start})")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(where))
    except json.JSONDecodeError as e:
        fail(f"{where}: {invalid}: line {e.lineno} column {e.colno}: {e.msg}")
    except RecursionError:  # not reached below the nesting limit; kept as a guard
        fail(f"{where}: {invalid}: nested too deeply")


def read_json(path, what=None, where=None):
    """A JSON input file (read_input, parse_json)."""
    where = where or path
    return parse_json(read_input(path, what, where), where)


def _available_memory():
    """(bytes, what) as tfmc's loader sees them (Model.cpp, checkMemory): the
    machine's memory, or the address-space limit (ulimit -v) when lower;
    (0, None) when unknown."""
    try:
        available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        available = 0
    what = "this machine's"
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError):
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY and (available <= 0 or soft < available):
        available, what = soft, "this process's address-space limit of"
    return max(available, 0), what


# Bytes per element the converters and their checks need to build a
# positional table: float64 angles and values, temporaries, the float32 result.
TABLE_BUILD_BYTES = 16


def table_size_problem(rows, d_model):
    """Why a positional table of `rows` x `d_model` cannot be built here, or
    None. tfmc's loader refuses a table of more than half the memory
    (docs/model-format.md, the max_len error); the converters build the
    table in float64 with temporaries (TABLE_BUILD_BYTES per element), which
    must fit in that half too. Sizes are Python integers (no overflow)."""
    need = int(rows) * int(d_model) * TABLE_BUILD_BYTES
    available, what = _available_memory()
    if available and need > available // 2:
        return (f"{rows} positions x d_model {d_model} need {need / 1e9:.1f} GB to build the positional "
                f"table, more than half of {what} {available / 1e9:.1f} GB")
    return None


# --------------------------------------------------------------------------- loading torch.save() files

# Storage classes a checkpoint's pickle names, and the dtypes they hold.
_STORAGE_DTYPES = {
    "FloatStorage": torch.float32, "DoubleStorage": torch.float64, "HalfStorage": torch.float16,
    "BFloat16Storage": torch.bfloat16, "LongStorage": torch.int64, "IntStorage": torch.int32,
    "ShortStorage": torch.int16, "CharStorage": torch.int8, "ByteStorage": torch.uint8,
    "BoolStorage": torch.bool,
}


class _StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


class _Corrupt(Exception):
    """A checkpoint whose pickle and data disagree; load_torch_checkpoint
    names the file."""


def _is_index(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _checked_view(storage, offset, size, stride):
    """storage.as_strided(size, stride, offset), after checking that every
    element it reaches is inside the storage."""
    if not (isinstance(storage, torch.Tensor) and _is_index(offset)
            and isinstance(size, (tuple, list)) and isinstance(stride, (tuple, list))
            and len(size) == len(stride) and all(_is_index(v) for v in list(size) + list(stride))):
        raise _Corrupt(f"a tensor's storage offset {offset!r}, size {size!r} or stride {stride!r} is not "
                       f"a valid layout")
    if all(size):
        end = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if end > storage.numel():
            raise _Corrupt(f"a tensor of size {list(size)}, stride {list(stride)} at offset {offset} reaches "
                           f"element {end - 1} of a storage of {storage.numel()} elements")
    return storage.as_strided(tuple(size), tuple(stride), offset)


def _rebuild_tensor(storage, offset, size, stride, *unused):
    return _checked_view(storage, offset, size, stride).clone()


def _rebuild_tensor_view(storage, offset, size, stride, *unused):
    """The legacy format's tensors: views of storages filled after the pickle."""
    return _checked_view(storage, offset, size, stride)


def _rebuild_parameter(data, *unused):
    return data


class PickledNamespace:
    """What an `argparse.Namespace` in a checkpoint (fairseq's `args`) is
    rebuilt as: attributes from a dict of string keys, nothing else. Its
    class is ours, so unpickling it runs no code from the file."""

    def __setstate__(self, state):
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise pickle.UnpicklingError("Unsupported state for argparse.Namespace")
        self.__dict__.update(state)

    def __contains__(self, key):
        return key in self.__dict__

    def __repr__(self):
        return "Namespace(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items())) + ")"


# Values a state_dict's pickle may name besides storages (torch.load with
# weights_only=True takes them too): torch.Size and the dtypes.
_TORCH_VALUES = {"Size": torch.Size}
_TORCH_VALUES.update({str(t).replace("torch.", ""): t for t in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16,
    torch.int32, torch.int64, torch.bool)})

# The classes a caller may accept with `allow`, and what each is rebuilt as.
_ALLOWABLE = {("argparse", "Namespace"): PickledNamespace}


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickles a zip-format torch.save() file itself (torch.load cannot be
    given a safe unpickler reliably), creating only plain containers,
    tensors and storages, plus the `allow`ed classes of _ALLOWABLE as our
    own stand-ins. Anything else is refused, never constructed."""

    def __init__(self, data, archive, prefix, allow):
        super().__init__(data)
        self.archive = archive
        self.prefix = prefix
        self.allow = allow
        self.rebuild = _rebuild_tensor

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) in (("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor")):
            return self.rebuild
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_VALUES:  # as torch.load(weights_only=True) allows
            return _TORCH_VALUES[name]
        if (module, name) in self.allow:
            return _ALLOWABLE[(module, name)]
        raise pickle.UnpicklingError(f"Unsupported class {module}.{name}")

    def persistent_load(self, pid):
        # ('storage', storage type, key, location, element count)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"Unsupported persistent id {pid!r}")
        _, kind, key, _, count = pid
        name = f"{self.prefix}data/{key}"
        if not _is_index(count):
            raise _Corrupt(f"storage '{name}' has an element count of {count!r}")
        size = count * torch.empty(0, dtype=kind.dtype).element_size()
        try:
            stored = self.archive.getinfo(name).file_size
        except KeyError:
            raise _Corrupt(f"storage '{name}' is missing from the archive") from None
        if stored < size:  # torch.load reads past the end of such a record
            raise _Corrupt(f"storage '{name}' is truncated: it holds {stored} bytes, but its {count} "
                           f"{str(kind.dtype).replace('torch.', '')} elements need {size}")
        with self.archive.open(name) as record:  # no more than the tensors use
            data = bytearray(record.read(size))
        if not data:
            return torch.empty(0, dtype=kind.dtype)
        return torch.frombuffer(data, dtype=kind.dtype)


class _LegacyUnpickler(_RestrictedUnpickler):
    """The same restrictions for the format of torch < 1.6 (torch.save with
    _use_new_zipfile_serialization=False): storages are allocated while the
    pickle is read and filled from the raw data that follows it."""

    def __init__(self, data, allow, file_size):
        super().__init__(data, None, None, allow)
        self.rebuild = _rebuild_tensor_view
        self.storages = {}  # root key -> flat tensor, filled later
        self.file_size = file_size  # no storage can hold more bytes than the file

    def persistent_load(self, pid):
        # ('storage', storage type, root key, location, element count, view metadata)
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] in ("storage", b"storage")
                and isinstance(pid[1], _StorageType) and _is_index(pid[4])):
            raise pickle.UnpicklingError(f"Unsupported persistent id {pid!r}")
        _, kind, key, _, count, view = pid
        storage = self.storages.get(key)
        if storage is None:
            if count * torch.empty(0, dtype=kind.dtype).element_size() > self.file_size:
                raise _Corrupt(f"storage '{key}' is truncated: its {count} elements need more bytes than "
                               f"the file has ({self.file_size})")
            storage = self.storages[key] = torch.zeros(count, dtype=kind.dtype)
        if view is None:
            return storage
        _, offset, size = view
        return storage[offset:offset + size]


def _legacy_load(path, f, allow):
    def plain():  # the header pickles hold numbers, strings and dicts only
        return _RestrictedUnpickler(f, None, None, frozenset()).load()

    try:
        header = (plain(), plain())
    except Exception:  # pickle raises many kinds on arbitrary bytes
        header = None
    if header != (0x1950A86A20F9469CFC6C, 1001):
        fail(f"cannot read checkpoint '{path}': not a torch.save() file (neither a zip archive nor the "
             f"format of torch < 1.6)")
    plain()  # system information
    unpickler = _LegacyUnpickler(f, allow, os.fstat(f.fileno()).st_size)
    result = unpickler.load()
    for key in plain():
        storage = unpickler.storages.get(key)
        header = f.read(8)
        if storage is None or len(header) != 8:
            fail(f"cannot read checkpoint '{path}': storage '{key}' is missing or truncated")
        (count,) = struct.unpack("<q", header)
        size = count * storage.element_size()
        data = f.read(size)
        if count != storage.numel() or len(data) != size:
            fail(f"cannot read checkpoint '{path}': storage '{key}' is truncated or of the wrong size")
        if size:
            storage.copy_(torch.frombuffer(bytearray(data), dtype=storage.dtype))
    return result


def _restricted_load(path, allow):
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            return _legacy_load(path, f, allow)
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
        if len(pickles) != 1:
            fail(f"cannot read checkpoint '{path}': no data.pkl in the archive")
        prefix = pickles[0][: -len("data.pkl")]
        data = io.BytesIO(archive.read(pickles[0]))
        return _RestrictedUnpickler(data, archive, prefix, allow).load()


def _torch_load(path, allow, restricted):
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if any(n.endswith("constants.pkl") for n in archive.namelist()):
                # torch.load would hand this to torch.jit.load, even with weights_only
                fail(f"refusing to load '{path}': it is a TorchScript archive, not a state_dict; "
                     f"save model.state_dict() instead")
        # Always our reader: torch.load (1.13) reads past the end of a
        # storage record shorter than its tensors (garbage weights, no error).
        return _restricted_load(path, allow)
    if allow or restricted:
        return _restricted_load(path, allow)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError as e:
        if "weights_only" not in str(e):
            raise
    except pickle.UnpicklingError:
        # torch 1.13's weights_only reader has no opcode for a Python float
        # (a checkpoint's "loss", a config's dropout): ours reads them, and
        # refuses what is really not data.
        pass
    return _restricted_load(path, allow)


def load_torch_checkpoint(path, allow=(), *, restricted=False):
    """The object a torch.save() file holds, read without running code from
    it: plain containers, numbers, strings and tensors (on the CPU), plus the
    classes in `allow`, a set of (module, name) pairs from _ALLOWABLE (only
    ("argparse", "Namespace"), rebuilt as a PickledNamespace). The zip
    format of torch >= 1.6 is always read by our own unpickler, which checks
    every storage record against the tensors' sizes (torch.load does not);
    the older format is too with `allow` or `restricted`, and else by
    torch.load(weights_only=True). `path` must be a regular file
    (check_input_file). Every failure is a ConversionError naming the file."""
    allow = frozenset(allow)
    unknown = sorted(allow - set(_ALLOWABLE))
    if unknown:
        raise ValueError(f"load_torch_checkpoint cannot rebuild {unknown}: only {sorted(_ALLOWABLE)}")
    check_input_file(path, where=f"cannot open checkpoint '{path}'", kind="a torch.save() file")
    try:
        return _torch_load(path, allow, restricted)
    except ConversionError:
        raise
    except _Corrupt as e:
        fail(f"cannot read checkpoint '{path}': {e}")
    except pickle.UnpicklingError as e:
        why = re.search(r"Unsupported (?:class|operand|state for) [^\s]+", str(e))
        hint = "" if allow else ": save model.state_dict() instead"
        fail(f"refusing to load '{path}': it holds Python objects other than tensors and plain "
             f"containers ({why.group(0) if why else str(e).splitlines()[0]}); this tool never runs "
             f"code from a checkpoint{hint}")
    except Exception as e:  # torch raises many kinds on files that are not checkpoints
        fail(f"cannot read checkpoint '{path}': not a torch.save() file ({type(e).__name__}: {e})")


def _is_state_dict(obj):
    return all(isinstance(v, torch.Tensor) for v in obj.values())


def state_dict_of(obj, path, keys=("state_dict", "model")):
    """The name -> tensor dict in a loaded checkpoint: `obj` itself, or the
    dict under the first of `keys` it holds when `obj` has non-tensor values.
    `path` names the file in errors."""
    if isinstance(obj, dict) and not _is_state_dict(obj):
        for key in keys:
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not obj:
        where = " or ".join(f"'{k}'" for k in keys)
        fail(f"'{path}' does not hold a state_dict (a dict of tensor names to tensors, "
             f"or a dict holding one under {where})")
    for k, v in obj.items():
        if not isinstance(k, str):
            fail(f"'{path}': state_dict key {k!r} is not a string")
        if not isinstance(v, torch.Tensor):
            fail(f"'{path}': state_dict entry '{k}' is a {type(v).__name__}, not a tensor")
    return dict(obj)


# --------------------------------------------------------------------------- writing a model directory


def write_safetensors(path, tensors, dtype="F32"):
    """tensors: ordered dict name -> numpy array or torch tensor (any float
    dtype), stored as `dtype` ("F32" or "F16") in that order."""
    if dtype not in ("F32", "F16"):
        raise ValueError(f"write_safetensors: dtype {dtype!r}, expected 'F32' or 'F16'")
    arrays = {}
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu().float().numpy()
        arrays[name] = np.asarray(t, dtype=np.float32)
    try:
        _tfm.write_safetensors(path, arrays, dtype=dtype)
    except OSError as e:
        fail(f"cannot write '{path}': {e.strerror}")


def copy_file(source, target):
    """Copies `source` to `target`; nothing to do when they are one file
    (an output directory that already holds it)."""
    try:
        shutil.copyfile(source, target)
    except shutil.SameFileError:
        pass
    except OSError as e:
        fail(f"cannot copy '{source}' to '{target}': {e.strerror or e}")


def check_output_dir(out, own=None):
    """Refuses an empty output path, and `own` (the model's directory, whose
    files a conversion would overwrite while reading them) as the output."""
    if not out:
        fail("-o: the output directory's path is empty")
    if own is not None and os.path.realpath(out) == os.path.realpath(own):
        fail(f"{out}: the output directory is the model's own; write the converted model elsewhere")


def write_vocab(path, tokens, source=None):
    """One token per line (docs/model-format.md, "Vocabulary files"). Tokens
    that file cannot hold (empty, with a line break, a trailing carriage
    return, a leading byte order mark on the first line, repeated) are
    errors naming `source`, the file the tokens came from (else `path`)."""
    where = source or path
    tokens = list(tokens)
    check_vocab_tokens(tokens, where)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(tokens) + "\n")
    except OSError as e:
        fail(f"cannot write '{path}': {e.strerror}")
    except UnicodeEncodeError as e:
        fail(f"'{where}': a token is not valid Unicode text ({e.reason})")


def check_vocab_tokens(tokens, where):
    """The rules of a tfmc vocabulary (write_vocab), for tokens read from
    `where`."""
    if not tokens:
        fail(f"'{where}': the vocabulary is empty")
    seen = {}
    for i, tok in enumerate(tokens):
        if not isinstance(tok, str):
            fail(f"'{where}': token {i} is a {type(tok).__name__}, not a string")
        if not tok:
            fail(f"'{where}': token {i} is empty, which a tfmc vocabulary cannot hold")
        if "\n" in tok or tok.endswith("\r"):
            fail(f"'{where}': token {i} {tok!r} holds a line break, which a tfmc vocabulary cannot hold")
        if i == 0 and tok.startswith("\ufeff"):
            fail(f"'{where}': token 0 {tok!r} starts with a byte order mark, which a tfmc vocabulary "
                 f"cannot hold on its first line")
        if tok in seen:
            fail(f"'{where}': token {i} {tok!r} repeats token {seen[tok]}; tfmc vocabulary tokens are unique")
        seen[tok] = i


def write_model_json(path, desc):
    """model.json as the reference writes it: two-space indent, a final newline."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(desc, f, indent=2, ensure_ascii=False)
            f.write("\n")
    except OSError as e:
        fail(f"cannot write '{path}': {e.strerror}")


class ConfigReader:
    """Typed reads of a checkpoint's configuration, each failure one line
    naming the file and the key. Subclasses say where values come from
    (`get`), how a key is named (`bad`) and how a value is shown."""

    TRUE_FALSE = "true or false"

    def get(self, key):
        raise NotImplementedError

    def bad(self, key, why):
        raise NotImplementedError

    def show(self, value):
        return repr(value)

    def missing(self, key, minimum):
        """A required integer that is absent."""
        self.bad(key, f"expected an integer >= {minimum}, got {self.show(None)}")

    def int(self, key, minimum=0, default=None):
        v = self.get(key)
        if v is None and default is not None:
            return default
        if v is None:
            self.missing(key, minimum)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            self.bad(key, f"expected an integer >= {minimum}, got {self.show(v)}")
        return v

    def bool(self, key):
        v = self.get(key)
        if not isinstance(v, bool):
            self.bad(key, f"expected {self.TRUE_FALSE}, got {self.show(v)}")
        return v


# fairseq's Transformer layer names, which Hugging Face's Marian keeps:
# tfmc's attention projections and their names there.
FAIRSEQ_LINEARS = {"query_linear": "q_proj", "key_linear": "k_proj", "value_linear": "v_proj",
                   "output_linear": "out_proj"}


def copy_fairseq_layers(out, get, prefix, n_enc, n_dec, d, ff):
    """Copies the encoder and decoder layers of a fairseq-named state dict
    (`{prefix}encoder.layers.{i}.self_attn.q_proj.weight`, `fc1`, the three
    `*_layer_norm`s ...) into `out` under tfmc's names. `get(name, shape)`
    returns the named tensor, checked against `shape`."""

    def layer(stack, i, attentions, norms):
        src, tf = f"{prefix}{stack}.layers.{i}", f"{stack}_layers.{i}"
        for tf_attn, src_attn in attentions:
            for tf_lin, src_lin in FAIRSEQ_LINEARS.items():
                out[f"{tf}.{tf_attn}.{tf_lin}.weight"] = get(f"{src}.{src_attn}.{src_lin}.weight", [d, d])
                out[f"{tf}.{tf_attn}.{tf_lin}.bias"] = get(f"{src}.{src_attn}.{src_lin}.bias", [d])
        out[f"{tf}.feed_forward.linear1.weight"] = get(f"{src}.fc1.weight", [ff, d])
        out[f"{tf}.feed_forward.linear1.bias"] = get(f"{src}.fc1.bias", [ff])
        out[f"{tf}.feed_forward.linear2.weight"] = get(f"{src}.fc2.weight", [d, ff])
        out[f"{tf}.feed_forward.linear2.bias"] = get(f"{src}.fc2.bias", [d])
        for k, norm in enumerate(norms, 1):
            out[f"{tf}.norm{k}.weight"] = get(f"{src}.{norm}.weight", [d])
            out[f"{tf}.norm{k}.bias"] = get(f"{src}.{norm}.bias", [d])

    for i in range(n_enc):
        layer("encoder", i, [("self_attention", "self_attn")], ["self_attn_layer_norm", "final_layer_norm"])
    for i in range(n_dec):
        layer("decoder", i, [("masked_self_attention", "self_attn"), ("enc_dec_attention", "encoder_attn")],
              ["self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"])


def run_check(out, original, reference, f16, check, tolerance):
    """Runs a converter's check of the written model `out` against the
    `original` (`check()` returns the largest logit difference relative to
    max(1, |logit|)), prints one `check:` line, and fails when the
    difference exceeds `tolerance` or the check cannot run."""
    try:
        diff = check()
    except ConversionError:
        raise
    except Exception as e:  # the reference could not run what was written
        fail(f"{out}: the check could not run the written model: {type(e).__name__}: {e}")
    ok = diff <= tolerance
    print(f"check: {out} (tfmc.reference.tfm) vs {original} ({reference}"
          f"{', tensors rounded to f16' if f16 else ''}): max logit difference "
          f"{diff:.3g} relative to max(1, |logit|) ({'ok' if ok else 'FAILED'}, tolerance {tolerance:g})")
    if not ok:
        fail(f"{out}: the written model's logits differ from the original's by {diff:.3g} "
             f"(more than {tolerance:g}); {out} is left for inspection")
    return 0
