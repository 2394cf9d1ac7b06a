"""The `tfmc` Python module (python/), run by ctest as

    PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python -q

Translations must equal the CLI's / the PyTorch reference's committed
outputs; encoder states the committed reference states.
"""

import os
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

import tfmc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from overflowing import write_overflowing  # noqa: E402
from with_decoding import write_with_decoding  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZH_EN = os.path.join(ROOT, "examples", "zh-en", "model.json")
INPUTS = os.path.join(ROOT, "tests", "lit", "tfmc", "Inputs", "zh-en")
FIXTURES = os.path.join(ROOT, "tests", "e2e", "fixtures")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def read_ids(path):
    return [[int(x) for x in line.split()] for line in read_lines(path)]


@pytest.fixture(scope="module")
def zh_en():
    return tfmc.Translator(ZH_EN, cache_dir=os.environ.get("TFMC_CACHE_DIR", ""))


def test_text_equals_reference(zh_en):
    # expected.en: the PyTorch reference's greedy translations (max length 128).
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh"))
    expected = read_lines(os.path.join(INPUTS, "expected.en"))
    assert zh_en.translate(sentences, max_length=128) == expected
    assert zh_en.translate(sentences, max_length=128, batch_size=5) == expected
    # Any sequence of str: a numpy array's items (made afresh per index)
    # were read after they were freed (wrong translations, a crash).
    assert zh_en.translate(np.array(sentences), max_length=128) == expected
    assert zh_en.translate(tuple(sentences), max_length=128) == expected


def test_beam_and_nbest(zh_en):
    best = zh_en.translate(["我们明天去公园吧。"], beam_size=4)
    assert best == ["Let's go to the park tomorrow."]
    nbest = zh_en.translate(["我们明天去公园吧。", "谢谢。"], beam_size=4, n_best=3)
    assert len(nbest) == 2 and all(len(h) == 3 for h in nbest)
    assert nbest[0][0][0] == best[0]
    scores = [s for _, s in nbest[0]]
    assert scores == sorted(scores, reverse=True)
    # Greedy scores on request (a beam of one, as `tfmc translate --scores`).
    greedy = zh_en.translate(["我们明天去公园吧。", "谢谢。"], beam_size=1, return_scores=True)
    plain = zh_en.translate(["我们明天去公园吧。", "谢谢。"], beam_size=1)
    assert [h[0][0] for h in greedy] == plain
    assert all(h[0][1] < 0 for h in greedy), greedy


def test_bad_and_empty_sentences(zh_en):
    with pytest.raises(ValueError, match="sentence 1: invalid UTF-8"):
        zh_en.translate(["谢谢。", b"\xff\xfe"])
    with pytest.raises(ValueError, match="sentence 0: invalid UTF-8"):
        zh_en.translate([b"\xff".decode("utf-8", "surrogateescape")])
    with pytest.raises(TypeError):
        zh_en.translate([3])
    # One string in place of the list would be one sentence a character.
    for one in ("谢谢。", b"abc"):
        with pytest.raises(TypeError, match="a list of str or bytes"):
            zh_en.translate(one)
    # Any lone surrogate, not only surrogateescape's, is an unreadable
    # sentence (ValueError; "" with errors="ignore").
    for lone in ("\ud800abc", "a\udfff", "\udc80"):
        with pytest.raises(ValueError, match="sentence 0: invalid UTF-8"):
            zh_en.translate([lone, "谢谢。"])
        assert zh_en.translate([lone, "谢谢。"], errors="ignore") == \
            ["", zh_en.translate(["谢谢。"])[0]]
    out = zh_en.translate(["", "谢谢。"], errors="ignore")
    assert out == ["", zh_en.translate(["谢谢。"])[0]] and out[1]
    with pytest.raises(RuntimeError, match="n-best"):
        zh_en.translate(["谢谢。"], beam_size=2, n_best=3)


def test_ids_equal_fixture():
    fixture = os.path.join(FIXTURES, "pre-gelu-scale")
    t = tfmc.Translator(os.path.join(fixture, "model.json"), kernels="loops")
    src = read_ids(os.path.join(fixture, "src.ids"))
    expected = read_ids(os.path.join(fixture, "greedy-min0-max20.ids"))
    assert t.translate_ids(src, max_length=20, max_length_factor=0) == expected
    with pytest.raises(ValueError, match="outside the source vocabulary"):
        t.translate_ids([[5], [10**6]])
    with pytest.raises(tfmc.OptionError, match=r"min length must not exceed max length \(20\)"):
        t.translate_ids(src, min_length=21, max_length=20)
    with pytest.raises(tfmc.OptionError, match=r"min length must not exceed the model's max_len \(64\)"):
        t.translate_ids(src, min_length=65, max_length=100)


def test_encoder_states_equal_reference():
    fixture = os.path.join(FIXTURES, "encoder-only")
    t = tfmc.Translator(os.path.join(fixture, "model.json"))
    assert t.encoder_only
    # No keys/values to speak of without a decoder.
    assert t.configuration in ("float32 weights, library kernels",
                               "float32 weights, compiled loops")
    # Row 3 of src.ids is longer than max_len - 1: truncated, and said.
    with pytest.warns(RuntimeWarning, match=r"row 3: 30 ids, truncated to 23"):
        states = t.encode(read_ids(os.path.join(fixture, "src.ids")))
    expected = np.load(os.path.join(fixture, "states.npy"))
    assert states.dtype == np.float32 and states.shape == expected.shape
    assert np.abs(states - expected).max() <= 1e-4
    with pytest.raises(RuntimeError, match="encoder-only"):
        t.translate_ids([[5, 6]])


def test_bad_option_values_are_option_errors(zh_en):
    # A ValueError, as Python code expects of a bad argument, and a
    # RuntimeError, as these were before; a model that cannot load is not.
    assert issubclass(tfmc.OptionError, ValueError)
    assert issubclass(tfmc.OptionError, RuntimeError)
    for kwargs in [dict(threads=0), dict(kernels="fast"), dict(compute_type="int4")]:
        with pytest.raises(tfmc.OptionError):
            tfmc.Translator(ZH_EN, **kwargs)
    for kwargs in [dict(beam_size=0), dict(beam_size=2, n_best=3), dict(max_length=0),
                   dict(length_penalty=float("nan")), dict(max_length_factor=float("inf")),
                   dict(repetition_penalty=0.0), dict(batch_size=0), dict(errors="warn")]:
        with pytest.raises(tfmc.OptionError):
            zh_en.translate(["谢谢。"], **kwargs)
        with pytest.raises(ValueError):
            zh_en.translate_ids([[5, 6]], **{k: v for k, v in kwargs.items()})
    with pytest.raises(RuntimeError) as e:
        tfmc.Translator("/nonexistent/missing.json")
    assert not isinstance(e.value, tfmc.OptionError)


def test_load_errors():
    with pytest.raises(RuntimeError, match="missing.json: cannot open file"):
        tfmc.Translator("/nonexistent/missing.json")
    # A NUL would cut the path in C++ (and load another file), as open()
    # refuses it; path-like objects are paths.
    with pytest.raises(ValueError, match="model: embedded null byte"):
        tfmc.Translator(ZH_EN + "\0junk")
    with pytest.raises(ValueError, match="cache_dir: embedded null byte"):
        tfmc.Translator(ZH_EN, cache_dir="/tmp\0x")
    import pathlib
    assert tfmc.Translator(pathlib.Path(ZH_EN)).translate(["谢谢。"]) == \
        tfmc.Translator(ZH_EN.encode()).translate(["谢谢。"])
    with pytest.raises(tfmc.OptionError, match="compute type: expected"):
        tfmc.Translator(ZH_EN, compute_type="int4")
    with pytest.raises(tfmc.OptionError, match="kv type: expected 'auto', 'float32' or 'float16', got 'int8'"):
        tfmc.Translator(ZH_EN, kv_type="int8")
    for rows in (0, 257):
        with pytest.raises(tfmc.OptionError, match="warm-up rows must be between 1 and 256"):
            tfmc.Translator(ZH_EN, warm_up_rows=rows)


def test_warm_up_at_the_batch_size_keeps_the_translations():
    # The second warm-up batch (5 sentences) runs before any call: the
    # translations and their order are the reference's all the same.
    t = tfmc.Translator(ZH_EN, cache_dir=os.environ.get("TFMC_CACHE_DIR", ""), warm_up_rows=5)
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh"))
    expected = read_lines(os.path.join(INPUTS, "expected.en"))
    assert t.translate(sentences, max_length=128, batch_size=5) == expected


def test_gil_is_released(zh_en):
    # Another Python thread keeps running while a long translation runs.
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh")) * 8
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    start = time.perf_counter()
    zh_en.translate(sentences, beam_size=2)
    end = time.perf_counter()
    done.set()
    thread.join()
    during = [t for t in ticks if start < t < end]
    # With the GIL held the ticker could not run at all during the call.
    assert len(during) >= 10, (len(during), end - start)


def test_compute_types_keep_the_translations():
    # float16, bfloat16 and int8 weights translate the committed test
    # sentences as the float32 reference does (bfloat16 and int8: at least
    # 90% of the lines).
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh"))
    expected = read_lines(os.path.join(INPUTS, "expected.en"))
    cache = os.environ.get("TFMC_CACHE_DIR", "")
    for compute_type, needed in (("float16", 1.0), ("bfloat16", 0.9), ("int8", 0.9)):
        t = tfmc.Translator(ZH_EN, compute_type=compute_type, cache_dir=cache)
        out = t.translate(sentences, max_length=128)
        same = sum(a == b for a, b in zip(out, expected))
        assert same >= needed * len(expected), (compute_type, same, len(expected))


def test_kv_type_reaches_the_compiled_model(tmp_path):
    # The compiled-model cache keys the storage of keys and values as
    # resolved: float16 under float32 weights is an entry of its own,
    # "float32" is auto's.
    cache = str(tmp_path / "cache")
    entries = lambda: len([f for f in os.listdir(cache) if f.endswith(".tfmo")])  # noqa: E731
    tfmc.Translator(ZH_EN, cache_dir=cache)
    assert entries() == 1
    tfmc.Translator(ZH_EN, cache_dir=cache, kv_type="float16")
    assert entries() == 2
    tfmc.Translator(ZH_EN, cache_dir=cache, kv_type="float32")
    assert entries() == 2


def test_kv_types_keep_the_translations():
    # float16 keys/values on float32 weights, float32 ones on int8 weights:
    # the float32 reference's translations of the committed sentences (int8:
    # at least 90% of the lines, as above), beam search included.
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh"))
    expected = read_lines(os.path.join(INPUTS, "expected.en"))
    cache = os.environ.get("TFMC_CACHE_DIR", "")
    half = tfmc.Translator(ZH_EN, kv_type="float16", cache_dir=cache)
    assert half.configuration.startswith("float32 weights, float16 keys/values, ")
    assert half.translate(sentences, max_length=128) == expected
    assert len(half.translate(sentences, beam_size=4, max_length=128)) == len(expected)
    wide = tfmc.Translator(ZH_EN, compute_type="int8", kv_type="float32", cache_dir=cache)
    assert wide.configuration.startswith("int8 weights, float32 keys/values, ")
    out = wide.translate(sentences, max_length=128)
    same = sum(a == b for a, b in zip(out, expected))
    assert same >= 0.9 * len(expected), (same, len(expected))


def test_decoding_defaults_from_the_model_file(zh_en, tmp_path):
    # A copy of the bundled model.json (absolute paths) with a "decoding"
    # object: calls without beam_size / length_penalty use it, either one
    # given overrides it.
    path = tmp_path / "model.json"
    write_with_decoding(ZH_EN, str(path), {"beam_size": 3, "length_penalty": 0.5})
    t = tfmc.Translator(str(path), cache_dir=os.environ.get("TFMC_CACHE_DIR", ""))
    sentences = read_lines(os.path.join(INPUTS, "sentences.zh"))
    beam = zh_en.translate(sentences, beam_size=3, length_penalty=0.5, return_scores=True)
    assert t.translate(sentences, return_scores=True) == beam
    assert t.translate(sentences, beam_size=1) == zh_en.translate(sentences, beam_size=1)
    greedy_scores = zh_en.translate(sentences, beam_size=1, length_penalty=0.5,
                                    return_scores=True)
    assert t.translate(sentences, beam_size=1, return_scores=True) == greedy_scores
    assert (t.translate(sentences, length_penalty=2.0, return_scores=True)
            == zh_en.translate(sentences, beam_size=3, length_penalty=2.0, return_scores=True))
    assert beam != zh_en.translate(sentences, beam_size=3, length_penalty=2.0, return_scores=True)


def test_warnings_are_runtime_warnings(tmp_path):
    import warnings
    fixture = os.path.join(FIXTURES, "pre-relu-scale")
    src = read_ids(os.path.join(fixture, "src.ids"))[:2]
    t = tfmc.Translator(os.path.join(fixture, "model.json"))
    # 41 target tokens, none repeatable, eos banned for 60: no hypothesis.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = t.translate_ids(src, beam_size=2, no_repeat_ngram_size=1, min_length=60,
                              max_length=64, max_length_factor=0)
    assert out == [[], []]
    assert [(w.category, str(w.message)[:26]) for w in caught] == \
        [(RuntimeWarning, f"sentence {i}: no translation") for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="sentence 0: no translation"):
            t.translate_ids(src, beam_size=2, no_repeat_ngram_size=1, min_length=60,
                            max_length=64, max_length_factor=0)
    # Logits that overflow float32: one warning per sentence, with beam
    # search (NaN scores) and greedy (a row ends where its chosen logit is
    # not finite), also for a line split into several sentences (said once,
    # not once per part).
    nan = tfmc.Translator(write_overflowing(fixture, str(tmp_path)))
    for beam, split in ((2, "off"), (2, "on"), (1, "off"), (1, "on")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nan.translate(["ab。cd。ef。", "gh"], beam_size=beam, split_sentences=split)
        messages = [str(w.message) for w in caught]
        assert len(messages) == 2, messages
        for i, m in enumerate(messages):
            assert m.startswith(f"sentence {i}: the model's outputs are not numbers")
            assert m.count("not numbers") == 1


def test_uninitialised_translator_is_an_error():
    # Translator.__new__ without __init__: every method raises. The memory
    # pybind11 hands such an instance is the heap's, so translators made and
    # freed first leave it non-zero (a segfault before 2026-12-07).
    for _ in range(3):
        t = tfmc.Translator(ZH_EN, cache_dir=os.environ.get("TFMC_CACHE_DIR", ""))
        t.translate(["谢谢。"])
        del t
    for _ in range(5):
        bare = tfmc.Translator.__new__(tfmc.Translator)
        for call in (lambda: bare.translate(["谢谢。"]), lambda: bare.translate_ids([[5, 6]]),
                     lambda: bare.encode([[5, 6]]), lambda: bare.configuration,
                     lambda: bare.source_vocabulary_size):
            with pytest.raises(RuntimeError, match="this Translator was not initialised"):
                call()
