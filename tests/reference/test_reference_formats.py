"""Tests of the model.json fields the converters need, as tfmc.reference.tfm
implements them (docs/model-format.md): the "silu" activation, position
tables, special_tokens.bos/decoder_start/never_generate, and sentencepiece
sides with "piece_ids": "vocab".

    /usr/bin/python3 -m pytest -q tests/reference/test_reference_formats.py
"""

import json
import os
import random
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from tfmc.reference import tfm as ref  # noqa: E402

ZH_EN = os.path.join(ROOT, "examples", "zh-en")


def arch(**changes):
    a = dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=48, max_len=24,
             activation="relu", norm="pre", layer_norm_eps=1e-5, embedding_scale=True,
             positional_encoding="sinusoidal")
    a.update(changes)
    return a


def model(seed=3, special=None, src_vocab=29, tgt_vocab=31, **changes):
    return ref.random_init(ref.TranslationTransformer(arch(**changes), src_vocab, tgt_vocab, special).eval(),
                           seed, eos_bias=-1.0)


def lines(seed, n, vocab, low=4, longest=9):
    rng = random.Random(seed)
    return [[rng.randrange(low, vocab) for _ in range(rng.randint(1, longest))] for _ in range(n)]


SRCS = lines(1, 4, 29)
TGTS = [[1] + t for t in lines(2, 4, 31, longest=7)]


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)


# --------------------------------------------------------------------------- silu


def test_silu_is_x_times_sigmoid():
    # Weights from a fixed seed: drawn from the global generator, 14 of 500
    # draws gave an output near zero where torch's silu and x * sigmoid(x),
    # an ulp apart, differ by more than allclose's absolute 1e-8 (a fresh
    # machine's run failed so, 2026-12-06).
    with torch.random.fork_rng():
        torch.manual_seed(0)
        ffn = ref.FeedForward(8, 16, "silu")
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    h = ffn.linear1(x)
    assert torch.allclose(ffn(x), ffn.linear2(h * torch.sigmoid(h)))
    assert torch.allclose(ffn(x), ffn.linear2(torch.nn.functional.silu(h)))


def test_silu_model_round_trips(tmp_path):
    m = model(activation="silu")
    ref.export(m, str(tmp_path))
    with open(tmp_path / "model.json") as f:
        assert json.load(f)["architecture"]["activation"] == "silu"
    loaded = ref.load(str(tmp_path))
    assert np.array_equal(loaded.forward_ids(SRCS, TGTS), m.forward_ids(SRCS, TGTS))
    assert not np.allclose(model(activation="relu").forward_ids(SRCS, TGTS), m.forward_ids(SRCS, TGTS))


def test_unknown_activation_is_refused(tmp_path):
    ref.export(model(), str(tmp_path))
    desc = json.load(open(tmp_path / "model.json"))
    desc["architecture"]["activation"] = "swish"
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=r'^architecture.activation: expected "relu", "gelu" or "silu", '
                                         r"got 'swish'$"):
        ref.load(str(tmp_path))


# --------------------------------------------------------------------------- position tables


def as_table_model(m):
    """The same weights with "positional_encoding": "table" and the sinusoid as both tables."""
    t = ref.TranslationTransformer(dict(m.arch, positional_encoding="table"), m.src_vocab_size,
                                   m.tgt_vocab_size, m.special).eval()
    state = dict(m.state_dict())
    pe = ref.positional_encoding(m.max_len, m.arch["d_model"])
    state["encoder_positions.weight"] = pe
    if m.has_decoder:
        state["decoder_positions.weight"] = pe
    t.load_state_dict(state, strict=True)
    return t


def test_sinusoid_tables_give_the_sinusoidal_model():
    m = model()
    t = as_table_model(m)
    assert list(t.state_dict())[-2:] == ["encoder_positions.weight", "decoder_positions.weight"]
    assert np.array_equal(t.forward_ids(SRCS, TGTS), m.forward_ids(SRCS, TGTS))
    assert t.greedy(SRCS[0], 0, 12) == m.greedy(SRCS[0], 0, 12)


def test_tables_are_used_per_side_and_round_trip(tmp_path):
    m = as_table_model(model())
    base = m.forward_ids(SRCS, TGTS)
    with torch.no_grad():
        m.decoder_positions.weight[3] += 0.5
    changed = m.forward_ids(SRCS, TGTS)
    assert np.array_equal(changed[:, :3], base[:, :3]) and not np.allclose(changed[:, 3:], base[:, 3:])
    with torch.no_grad():
        m.encoder_positions.weight[0] += 0.5  # the first source token sits at position 0
    assert not np.allclose(m.forward_ids(SRCS, TGTS), changed)
    ref.export(m, str(tmp_path))
    assert json.load(open(tmp_path / "model.json"))["architecture"]["positional_encoding"] == "table"
    loaded = ref.load(str(tmp_path))
    assert np.array_equal(loaded.forward_ids(SRCS, TGTS), m.forward_ids(SRCS, TGTS))


def test_encoder_only_table_model_has_one_table(tmp_path):
    m = model(num_decoder_layers=0, positional_encoding="table")
    assert [k for k in m.state_dict() if "positions" in k] == ["encoder_positions.weight"]
    ref.export(m, str(tmp_path))
    assert np.array_equal(ref.load(str(tmp_path)).encode_states(SRCS), m.encode_states(SRCS))


def test_a_table_model_without_tables_is_refused(tmp_path):
    ref.export(model(), str(tmp_path))
    desc = json.load(open(tmp_path / "model.json"))
    desc["architecture"]["positional_encoding"] = "table"
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=r"missing \['decoder_positions.weight', 'encoder_positions.weight'\]"):
        ref.load(str(tmp_path))
    desc["architecture"]["positional_encoding"] = "rotary"
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=r'positional_encoding: expected "sinusoidal" or "table", got \'rotary\''):
        ref.load(str(tmp_path))


# --------------------------------------------------------------------------- decoder_start, never_generate


def recording(logits_by_step):
    """A step_logits function returning fixed rows, and the prefixes it saw."""
    seen = []

    def step(prefixes):
        seen.append([list(p) for p in prefixes])
        return np.array([logits_by_step[len(prefixes[0]) - 1]] * len(prefixes), dtype=np.float32)

    return step, seen


# Vocabulary of 6: pad 0, bos 1, eos 2, unk 3, then 4, 5. Step 0 prefers bos,
# then pad, then 4; step 1 prefers eos.
STEPS = [[5.0, 6.0, 0.0, 0.0, 4.0, 1.0], [0.0, 0.0, 9.0, 0.0, 1.0, 1.0]]
SPECIAL = {"pad": 0, "bos": 1, "eos": 2, "unk": 3}


def test_defaults_start_with_bos_and_ban_pad_and_bos():
    step, seen = recording(STEPS)
    assert ref.greedy_search(step, SPECIAL, 0, 5) == [4]
    assert [p[0][0] for p in seen] == [1, 1]
    assert ref.decoder_start(SPECIAL) == 1 and ref.never_generate(SPECIAL) == [0, 1]


def test_decoder_start_and_never_generate_change_greedy_and_beam():
    special = dict(SPECIAL, decoder_start=0, never_generate=[0])  # bos may now be chosen
    step, seen = recording(STEPS)
    assert ref.greedy_search(step, special, 0, 5) == [1]
    assert [p[0][0] for p in seen] == [0, 0]
    step, seen = recording(STEPS)
    assert ref.beam_search(step, special, 2, 1.0, 0, 5)[0][0] == [1]
    assert all(p[0] == 0 for call in seen for p in call)
    step, _ = recording(STEPS)
    assert ref.greedy_search(step, dict(SPECIAL, never_generate=[1, 4]), 0, 5) == [0]
    # without bos: never_generate defaults to [pad]
    no_bos = {"pad": 0, "eos": 2, "unk": 3, "decoder_start": 0}
    assert ref.never_generate(no_bos) == [0]
    step, seen = recording(STEPS)
    assert ref.greedy_search(step, no_bos, 0, 5) == [1] and seen[0] == [[0]]
    # eos stays banned before min_length
    step, _ = recording(STEPS + [STEPS[1]])
    assert ref.greedy_search(step, special, 2, 3) == [1, 4]


def swapped(m, a, b):
    """m with target ids a and b exchanged (embedding rows, output rows)."""
    s = ref.TranslationTransformer(m.arch, m.src_vocab_size, m.tgt_vocab_size, m.special).eval()
    s.load_state_dict(m.state_dict())
    with torch.no_grad():
        for t in (s.decoder_embedding.weight, s.linear.weight, s.linear.bias):
            t[[a, b]] = t[[b, a]]
    return s


def test_a_pad_decoder_start_is_not_padding():
    """Marian starts every target row with pad: position 0 must not be masked.
    A model whose ids 0 and 1 are exchanged, started with 0, computes what
    the original does started with bos 1 (target rows padded with 0 as before)."""
    m = model()
    c = swapped(m, 0, 1)
    c.special = {"pad": 0, "eos": 2, "unk": 3, "decoder_start": 0, "never_generate": [0, 1]}
    tgts = [[0] + t[1:] for t in TGTS]
    got, want = c.forward_ids(SRCS, tgts), m.forward_ids(SRCS, TGTS)
    for r, t in enumerate(TGTS):
        assert np.allclose(got[r, :len(t)][:, [1, 0] + list(range(2, 31))], want[r, :len(t)], atol=1e-5)
    for s in SRCS:
        assert c.greedy(s, 0, 10) == m.greedy(s, 0, 10)


def test_a_generated_pad_is_attended():
    """Target positions are masked by the rows' lengths, never by their ids
    (docs/model-format.md): where never_generate lets the model choose pad,
    the pad it chose is attended like any other token. A model whose ids 0
    (pad) and 5 are exchanged computes, on rows holding 0 inside them, what
    the original does on the same rows holding 5."""
    m = model()
    with torch.no_grad():
        m.linear.bias[5] += 2.0  # so that greedy chooses it now and then
    c = swapped(m, 0, 5)
    c.special = {"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [1, 5]}
    tgts = [t[:2] + [5] + t[2:] for t in TGTS]
    mapped = [[{5: 0, 0: 5}.get(v, v) for v in t] for t in tgts]
    got, want = c.forward_ids(SRCS, mapped), m.forward_ids(SRCS, tgts)
    order = [5, 1, 2, 3, 4, 0] + list(range(6, 31))
    for r, t in enumerate(tgts):
        assert np.allclose(got[r, :len(t)][:, order], want[r, :len(t)], atol=1e-5)
    # Greedy (by steps, rows of one length, no lengths given) chooses the
    # exchanged ids: 0 where the original chooses 5.
    m.special = {"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [0, 1]}
    chose_five = 0
    for s in SRCS + lines(5, 12, 29):
        out = m.greedy(s, 0, 12)
        chose_five += out.count(5)
        assert c.greedy(s, 0, 12) == [{5: 0}.get(v, v) for v in out]
    assert chose_five > 0  # the case is exercised


@pytest.mark.parametrize("special, message", [
    ({"pad": 0, "eos": 2, "unk": 3}, r"missing field 'special_tokens.bos' \(required without "),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "decoder_start": 31}, r"decoder_start: id 31 is out of range "
                                                                    r"for the target vocabulary \(31 tokens\)"),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [0, 2]}, r"never_generate: id 2 is eos"),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [0, 0]}, r"never_generate: id 0 is listed twice"),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": 0}, r"never_generate: expected a list"),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "never_generate": [True]}, r"expected non-negative integers"),
    ({"pad": 0, "bos": 1, "eos": 1, "unk": 3}, r"special_tokens.eos: id 1 is also used by 'special_tokens.bos'"),
    ({"pad": 0, "bos": 1, "eos": 2, "unk": 3, "start": 0}, r"unknown field 'special_tokens.start'"),
])
def test_special_tokens_are_checked(tmp_path, special, message):
    ref.export(model(), str(tmp_path))
    desc = json.load(open(tmp_path / "model.json"))
    desc["special_tokens"] = special
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=message):
        ref.load(str(tmp_path))


def test_new_special_tokens_round_trip(tmp_path):
    special = {"pad": 0, "eos": 2, "unk": 3, "decoder_start": 0, "never_generate": [0, 5]}
    m = model(special=special)
    ref.export(m, str(tmp_path))
    loaded = ref.load(str(tmp_path))
    assert loaded.special == special
    out = loaded.greedy(SRCS[1], 0, 12)
    assert 0 not in out and 5 not in out and out == m.greedy(SRCS[1], 0, 12)


# --------------------------------------------------------------------------- piece_ids: vocab

TEXTS = ["Let's go to the park tomorrow.", "He said: \"no\" — it's 3 o'clock!", "a ☃ snowman ☃☃ here",
         "Tom's  double  spaces", "☃"]


@pytest.fixture(scope="module")
def sp_model():
    path = os.path.join(ZH_EN, "tgt.spm")
    if not os.path.exists(path):
        pytest.skip("examples/zh-en/tgt.spm is absent")
    return path


def test_vocab_ids_in_model_order_are_the_model_ids(sp_model):
    vocab = ref.read_vocab(os.path.join(ZH_EN, "tgt.vocab"))
    by_model = ref.SentencePieceSide(sp_model, vocab, 3, "model")
    by_vocab = ref.SentencePieceSide(sp_model, vocab, 3, "vocab")
    for text in TEXTS:
        ids = by_model.encode(text)
        assert by_vocab.encode(text) == ids
        assert by_vocab.decode(ids) == by_model.decode(ids)
    # an unk between runs: the vocabulary's unk token, a space before it
    assert by_model.decode([by_model.sp.piece_to_id("▁a"), 3, by_model.sp.piece_to_id("▁go")]) == "a <unk> go"


def test_vocab_mapped_ids_round_trip(sp_model):
    """A vocabulary in another order, with its own specials (Marian's layout:
    </s> 0, <unk> 1, pieces, <pad> last) and without some pieces."""
    base = ref.read_vocab(os.path.join(ZH_EN, "tgt.vocab"))[4:]
    random.Random(5).shuffle(base)
    dropped = {"▁park", "▁tomorrow"}
    vocab = ["</s>", "<unk>"] + [p for p in base if p not in dropped] + ["<pad>"]
    side = ref.SentencePieceSide(sp_model, vocab, 1, "vocab")
    model_side = ref.SentencePieceSide(sp_model, ref.read_vocab(os.path.join(ZH_EN, "tgt.vocab")), 3, "model")
    for text in TEXTS:
        ids = side.encode(text)
        pieces = side.sp.encode(text, out_type=str)
        assert len(ids) == len(pieces)
        for i, p, mid in zip(ids, pieces, model_side.encode(text)):
            assert i == (1 if mid == 3 or p in dropped else vocab.index(p))
        decoded = side.decode(ids)
        if not dropped & set(pieces):  # the same unknowns as the model's own ids
            assert decoded == model_side.decode(model_side.encode(text)), text
    assert side.decode(side.encode("Let's go to the park tomorrow.")) == "Let's go to the <unk> <unk>."
    # a vocabulary token the SentencePiece model does not know decodes as its unknown surface
    extra = ref.SentencePieceSide(sp_model, vocab + ["NOT_A_PIECE"], 1, "vocab")
    assert extra.decode([vocab.index("▁go"), len(vocab)]) == sp_decode_pieces(extra, ["▁go", "NOT_A_PIECE"])
    assert side.decode([len(vocab) + 7, vocab.index("▁go")]) == "<unk> go"  # outside the vocabulary: unk


def sp_decode_pieces(side, pieces):
    return side.sp.decode_pieces(pieces)


def test_load_tokenizer_reads_piece_ids(tmp_path, sp_model):
    ref.export(model(tgt_vocab=4000), str(tmp_path), src_tokenizer="word")
    desc = json.load(open(tmp_path / "model.json"))
    desc["target"] = {"vocab": os.path.join(ZH_EN, "tgt.vocab"), "tokenizer": "sentencepiece",
                      "model": sp_model, "piece_ids": "vocab"}
    write_json(tmp_path / "model.json", desc)
    tok = ref.load_tokenizer(str(tmp_path), "target")
    assert tok.piece_ids == "vocab" and tok.decode(tok.encode(TEXTS[0])) == TEXTS[0]
    ref.load(str(tmp_path))
    desc["target"]["piece_ids"] = "text"
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=r"""^field 'target.piece_ids': expected "model" or "vocab", got "text"$"""):
        ref.load(str(tmp_path))
    desc["source"]["piece_ids"] = "vocab"
    write_json(tmp_path / "model.json", desc)
    with pytest.raises(ValueError, match=r"field 'source.piece_ids': only allowed with tokenizer"):
        ref.load(str(tmp_path))
