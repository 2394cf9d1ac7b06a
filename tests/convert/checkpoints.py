"""Random-weight checkpoints in the exact on-disk layouts of Hugging Face
Marian (OPUS-MT) model directories and fairseq transformer checkpoints, with
tiny real SentencePiece models trained on Tatoeba text.

Nothing here is a real trained model: the weights are random (non-zero
biases, a non-zero final_logits_bias), the files are laid out as the
originals are (names, shapes, shared storages, config keys, dictionary
formats), so that tfmc-convert reads what it would read from a download.
"""

import argparse
import collections
import json
import math
import os
import struct

import numpy as np
import torch

# A Helsinki-NLP/opus-mt-zh-en config.json (transformers 4.2x conversion),
# with the real model's values; make_marian shrinks the sizes.
OPUS_MT_ZH_EN_CONFIG = {
    "_name_or_path": "Helsinki-NLP/opus-mt-zh-en",
    "activation_dropout": 0.0,
    "activation_function": "swish",
    "add_bias_logits": False,
    "add_final_layer_norm": False,
    "architectures": ["MarianMTModel"],
    "attention_dropout": 0.0,
    "bad_words_ids": [[65000]],
    "bos_token_id": 0,
    "classif_dropout": 0.0,
    "classifier_dropout": 0.0,
    "d_model": 512,
    "decoder_attention_heads": 8,
    "decoder_ffn_dim": 2048,
    "decoder_layerdrop": 0.0,
    "decoder_layers": 6,
    "decoder_start_token_id": 65000,
    "decoder_vocab_size": 65001,
    "dropout": 0.1,
    "encoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "encoder_layerdrop": 0.0,
    "encoder_layers": 6,
    "eos_token_id": 0,
    "extra_pos_embeddings": 65001,
    "forced_eos_token_id": 0,
    "gradient_checkpointing": False,
    "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
    "init_std": 0.02,
    "is_encoder_decoder": True,
    "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
    "max_length": 512,
    "max_position_embeddings": 512,
    "model_type": "marian",
    "normalize_before": False,
    "normalize_embedding": False,
    "num_beams": 4,
    "num_hidden_layers": 6,
    "pad_token_id": 65000,
    "scale_embedding": True,
    "share_encoder_decoder_embeddings": True,
    "static_position_embeddings": True,
    "torch_dtype": "float32",
    "transformers_version": "4.22.0.dev0",
    "use_cache": True,
    "vocab_size": 65001,
}

TOKENIZER_CONFIG = {"source_lang": "zh", "target_lang": "en", "separate_vocabs": False,
                    "model_max_length": 512, "eos_token": "</s>", "unk_token": "<unk>",
                    "pad_token": "<pad>", "sp_model_kwargs": {}, "tokenizer_class": "MarianTokenizer"}

SPM_CONTROL = {"<unk>", "<s>", "</s>", "<pad>"}


# --------------------------------------------------------------------------- SentencePiece


def train_spm(lines, prefix, vocab_size, coverage):
    """A tiny unigram SentencePiece model trained on `lines` (written to prefix.model)."""
    import sentencepiece as spm
    text = prefix + ".txt"
    with open(text, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=coverage, hard_vocab_limit=False, num_threads=1,
        minloglevel=2)
    return prefix + ".model"


def spm_pieces(model_file):
    """The model's ordinary pieces in id order (no control / unknown symbols)."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model_file)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i))]


# --------------------------------------------------------------------------- random weights


class Init:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def normal(self, shape, std, mean=0.0):
        return torch.randn(*shape, generator=self.g) * std + mean

    def linear(self, out_f, in_f):
        return self.normal((out_f, in_f), 1.0 / math.sqrt(in_f)), self.normal((out_f,), 0.1)

    def norm(self, d):
        return self.normal((d,), 0.1, 1.0), self.normal((d,), 0.1)


def _attention(init, sd, prefix, d, qk_gain=1.0, names=("k_proj", "v_proj", "q_proj", "out_proj")):
    """q/k weights scaled by qk_gain: sharper attention, so that random
    models' outputs depend on the source and the position."""
    for n in names:
        w, b = init.linear(d, d)
        sd[f"{prefix}.{n}.weight"], sd[f"{prefix}.{n}.bias"] = (w * qk_gain if n in ("q_proj", "k_proj") else w), b


def _ffn_norms(init, sd, prefix, d, ff, norms):
    sd[f"{prefix}.fc1.weight"], sd[f"{prefix}.fc1.bias"] = init.linear(ff, d)
    sd[f"{prefix}.fc2.weight"], sd[f"{prefix}.fc2.bias"] = init.linear(d, ff)
    for n in norms:
        sd[f"{prefix}.{n}.weight"], sd[f"{prefix}.{n}.bias"] = init.norm(d)


def marian_sinusoid(n_pos, dim):
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    j = np.arange(dim)
    enc = pos / np.power(10000, 2 * (j // 2) / dim)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = torch.empty(n_pos, dim)
    out[:, :half] = torch.FloatTensor(np.sin(enc[:, 0::2]))
    out[:, half:] = torch.FloatTensor(np.cos(enc[:, 1::2]))
    return out


# --------------------------------------------------------------------------- safetensors


def write_safetensors(path, tensors, metadata=None):
    """A safetensors file as the `safetensors` package writes it (F32)."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        data = t.detach().contiguous().float().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


# --------------------------------------------------------------------------- Marian


def marian_vocab(src_spm, tgt_spm):
    """vocab.json as OPUS-MT has it: </s> 0, <unk> 1, the pieces of both
    SentencePiece models (source first), <pad> last."""
    tokens = ["</s>", "<unk>"]
    seen = set(tokens)
    for p in spm_pieces(src_spm) + spm_pieces(tgt_spm):
        if p not in seen and p not in SPM_CONTROL:
            seen.add(p)
            tokens.append(p)
    tokens.append("<pad>")
    return {t: i for i, t in enumerate(tokens)}


def make_marian(out_dir, src_spm, tgt_spm, *, d_model=32, layers=(2, 2), heads=4, ffn=64,
                activation="swish", max_pos=64, fmt="bin", positions=False, lm_head=True,
                final_logits_bias=True, shared_names=("model.shared.weight", "model.encoder.embed_tokens.weight",
                                                      "model.decoder.embed_tokens.weight"),
                zero_pad_row=False, tie=True, emb_std=0.3, qk_gain=3.0, separate=False, seed=1,
                config_overrides=None):
    """A MarianMTModel directory with random weights.

    fmt: "bin" (torch.save of the state_dict, tied tensors sharing one
    storage, as save_pretrained wrote them) or "safetensors" (one entry per
    storage: the tied names other than the first of `shared_names` dropped).
    positions: include model.{encoder,decoder}.embed_positions.weight
    (older conversions saved them). lm_head: include lm_head.weight (tied).
    final_logits_bias: include it (non-zero), else absent. tie: false writes
    tie_word_embeddings: false and a separate lm_head.weight (random models
    with a tied output mostly repeat one token; untied ones do not).
    separate: separate vocabularies and embeddings
    (share_encoder_decoder_embeddings false, tokenizer_config separate_vocabs,
    target_vocab.json holding the same tokens in another order, the special
    tokens at the same ids)."""
    os.makedirs(out_dir, exist_ok=True)
    vocab = marian_vocab(src_spm, tgt_spm)
    V = len(vocab)
    pad = vocab["<pad>"]
    config = dict(OPUS_MT_ZH_EN_CONFIG)
    config.update({"_name_or_path": "random-opus-mt-zh-en", "activation_function": activation,
                   "d_model": d_model, "encoder_layers": layers[0], "decoder_layers": layers[1],
                   "num_hidden_layers": layers[0], "encoder_attention_heads": heads,
                   "decoder_attention_heads": heads, "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn,
                   "vocab_size": V, "decoder_vocab_size": V, "extra_pos_embeddings": V,
                   "pad_token_id": pad, "decoder_start_token_id": pad, "bad_words_ids": [[pad]],
                   "max_position_embeddings": max_pos, "max_length": max_pos})
    if not tie:
        config["tie_word_embeddings"] = False
    config.update(config_overrides or {})
    init = Init(seed)
    shared = init.normal((V, d_model), emb_std)
    if zero_pad_row:
        shared[pad] = 0.0
    dec_emb = shared
    if separate:
        config["share_encoder_decoder_embeddings"] = False
        dec_emb = init.normal((V, d_model), emb_std)
        tokens = sorted(vocab, key=vocab.get)
        target_tokens = tokens[:2] + tokens[2:-1][::-1] + tokens[-1:]
        target_vocab = {t: i for i, t in enumerate(target_tokens)}
    sd = collections.OrderedDict()
    sd["final_logits_bias"] = init.normal((1, V), 0.5) if final_logits_bias else None
    sd["model.shared.weight"] = shared
    sd["model.encoder.embed_tokens.weight"] = shared
    table = marian_sinusoid(max_pos, d_model)
    if positions:
        sd["model.encoder.embed_positions.weight"] = table
    for i in range(layers[0]):
        p = f"model.encoder.layers.{i}"
        _attention(init, sd, p + ".self_attn", d_model, qk_gain)
        sd[p + ".self_attn_layer_norm.weight"], sd[p + ".self_attn_layer_norm.bias"] = init.norm(d_model)
        _ffn_norms(init, sd, p, d_model, ffn, ["final_layer_norm"])
    sd["model.decoder.embed_tokens.weight"] = dec_emb
    if separate:
        del sd["model.shared.weight"]  # MarianModel sets shared = None
    if positions:
        sd["model.decoder.embed_positions.weight"] = table.clone()
    for i in range(layers[1]):
        p = f"model.decoder.layers.{i}"
        _attention(init, sd, p + ".self_attn", d_model, qk_gain)
        sd[p + ".self_attn_layer_norm.weight"], sd[p + ".self_attn_layer_norm.bias"] = init.norm(d_model)
        _attention(init, sd, p + ".encoder_attn", d_model, qk_gain)
        sd[p + ".encoder_attn_layer_norm.weight"], sd[p + ".encoder_attn_layer_norm.bias"] = init.norm(d_model)
        _ffn_norms(init, sd, p, d_model, ffn, ["final_layer_norm"])
    if not tie:
        sd["lm_head.weight"] = init.normal((V, d_model), 1.0)
    elif lm_head:
        sd["lm_head.weight"] = dec_emb
    if sd["final_logits_bias"] is None:
        del sd["final_logits_bias"]
    tied = [] if separate else ["model.shared.weight", "model.encoder.embed_tokens.weight",
                                "model.decoder.embed_tokens.weight", "lm_head.weight"]
    for name in tied:
        if fmt == "bin" and name in sd and name not in shared_names and name != "lm_head.weight":
            del sd[name]
    if fmt == "bin":
        torch.save(sd, os.path.join(out_dir, "pytorch_model.bin"))
    else:
        keep = [n for n in shared_names if n in sd][:1]
        st = collections.OrderedDict((k, v) for k, v in sd.items()
                                     if k not in tied or k in keep or k == "lm_head.weight")
        write_safetensors(os.path.join(out_dir, "model.safetensors"), st, metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, indent=2, ensure_ascii=False)
    if separate:
        with open(os.path.join(out_dir, "target_vocab.json"), "w", encoding="utf-8") as f:
            json.dump(target_vocab, f, indent=2, ensure_ascii=False)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(dict(TOKENIZER_CONFIG, separate_vocabs=separate), f)
    for src, name in ((src_spm, "source.spm"), (tgt_spm, "target.spm")):
        with open(src, "rb") as a, open(os.path.join(out_dir, name), "wb") as b:
            b.write(a.read())
    return out_dir


# --------------------------------------------------------------------------- fairseq


def fairseq_dict_lines(spm_file, lines, padding_factor=8):
    """dict.txt as fairseq-preprocess writes it for --bpe sentencepiece data:
    the pieces of the encoded text by falling count (ties by first
    occurrence), then madeupwordNNNN entries up to a multiple of 8 (with
    the 4 reserved symbols)."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=spm_file)
    counts = collections.Counter()
    order = {}
    for line in lines:
        for p in sp.encode(line, out_type=str):
            counts[p] += 1
            order.setdefault(p, len(order))
    words = sorted(counts, key=lambda w: (-counts[w], order[w]))
    out = [f"{w} {counts[w]}" for w in words]
    i = 0
    while (len(out) + 4) % padding_factor:
        out.append(f"madeupword{i:04d} 0")
        i += 1
    return out


def joined_dict_lines(src_spm, src_lines, tgt_spm, tgt_lines, padding_factor=8):
    """A joined dictionary: the pieces of both encoded corpora by falling count."""
    import sentencepiece as spm
    counts, order = collections.Counter(), {}
    for model, lines in ((src_spm, src_lines), (tgt_spm, tgt_lines)):
        sp = spm.SentencePieceProcessor(model_file=model)
        for line in lines:
            for p in sp.encode(line, out_type=str):
                counts[p] += 1
                order.setdefault(p, len(order))
    out = [f"{w} {counts[w]}" for w in sorted(counts, key=lambda w: (-counts[w], order[w]))]
    i = 0
    while (len(out) + 4) % padding_factor:
        out.append(f"madeupword{i:04d} 0")
        i += 1
    return out


def fairseq_state_dict(init, V_src, V_tgt, d, ff, layers, *, learned_pos, normalize_before, max_pos,
                       share_decoder_input_output_embed, qk_gain, pad=1):
    sd = collections.OrderedDict()
    sd["encoder.version"] = torch.Tensor([3])
    enc = init.normal((V_src, d), d ** -0.5)
    enc[pad] = 0
    sd["encoder.embed_tokens.weight"] = enc
    if learned_pos:
        t = init.normal((max_pos + pad + 1, d), d ** -0.5)
        t[pad] = 0
        sd["encoder.embed_positions.weight"] = t
    else:
        sd["encoder.embed_positions._float_tensor"] = torch.FloatTensor(1)
    for i in range(layers[0]):
        p = f"encoder.layers.{i}"
        _attention(init, sd, p + ".self_attn", d, qk_gain)
        sd[p + ".self_attn_layer_norm.weight"], sd[p + ".self_attn_layer_norm.bias"] = init.norm(d)
        _ffn_norms(init, sd, p, d, ff, ["final_layer_norm"])
    if normalize_before:
        sd["encoder.layer_norm.weight"], sd["encoder.layer_norm.bias"] = init.norm(d)
    sd["decoder.version"] = torch.Tensor([3])
    dec = init.normal((V_tgt, d), d ** -0.5)
    dec[pad] = 0
    sd["decoder.embed_tokens.weight"] = dec
    if learned_pos:
        t = init.normal((max_pos + pad + 1, d), d ** -0.5)
        t[pad] = 0
        sd["decoder.embed_positions.weight"] = t
    else:
        sd["decoder.embed_positions._float_tensor"] = torch.FloatTensor(1)
    for i in range(layers[1]):
        p = f"decoder.layers.{i}"
        _attention(init, sd, p + ".self_attn", d, qk_gain)
        sd[p + ".self_attn_layer_norm.weight"], sd[p + ".self_attn_layer_norm.bias"] = init.norm(d)
        _attention(init, sd, p + ".encoder_attn", d, qk_gain)
        sd[p + ".encoder_attn_layer_norm.weight"], sd[p + ".encoder_attn_layer_norm.bias"] = init.norm(d)
        _ffn_norms(init, sd, p, d, ff, ["final_layer_norm"])
    if normalize_before:
        sd["decoder.layer_norm.weight"], sd["decoder.layer_norm.bias"] = init.norm(d)
    if share_decoder_input_output_embed:
        sd["decoder.output_projection.weight"] = dec  # one storage, as the tied Parameter saves
    else:
        sd["decoder.output_projection.weight"] = init.normal((V_tgt, d), 1.0)
    return sd


def fairseq_args(d, ff, layers, heads, *, learned_pos, normalize_before, max_pos, activation,
                 share_decoder_input_output_embed):
    """The model options of `fairseq-train --arch transformer` (a subset of
    the real Namespace's many keys, including the ones the converter reads)."""
    return {
        "arch": "transformer", "task": "translation", "source_lang": "zh", "target_lang": "en",
        "data": "data-bin/zh-en", "bpe": "sentencepiece", "criterion": "label_smoothed_cross_entropy",
        "label_smoothing": 0.1, "optimizer": "adam", "lr": [0.0005], "max_tokens": 4096,
        "dropout": 0.3, "attention_dropout": 0.1, "activation_dropout": 0.0, "activation_fn": activation,
        "encoder_embed_path": None, "encoder_embed_dim": d, "encoder_ffn_embed_dim": ff,
        "encoder_layers": layers[0], "encoder_attention_heads": heads,
        "encoder_normalize_before": normalize_before, "encoder_learned_pos": learned_pos,
        "decoder_embed_path": None, "decoder_embed_dim": d, "decoder_ffn_embed_dim": ff,
        "decoder_layers": layers[1], "decoder_attention_heads": heads,
        "decoder_normalize_before": normalize_before, "decoder_learned_pos": learned_pos,
        "adaptive_softmax_cutoff": None, "adaptive_softmax_dropout": 0,
        "share_decoder_input_output_embed": share_decoder_input_output_embed,
        "share_all_embeddings": False, "no_token_positional_embeddings": False,
        "adaptive_input": False, "no_cross_attention": False, "cross_self_attention": False,
        "decoder_output_dim": d, "decoder_input_dim": d, "no_scale_embedding": False,
        "layernorm_embedding": False, "tie_adaptive_weights": False, "checkpoint_activations": False,
        "offload_activations": False, "encoder_layerdrop": 0, "decoder_layerdrop": 0,
        "encoder_layers_to_keep": None, "decoder_layers_to_keep": None, "quant_noise_pq": 0,
        "quant_noise_pq_block_size": 8, "quant_noise_scalar": 0, "max_source_positions": max_pos,
        "max_target_positions": max_pos, "left_pad_source": True, "left_pad_target": False,
        "seed": 1, "fp16": False,
    }


def nested_model_cfg(flat):
    """cfg['model'] in TransformerConfig's nested form (newer fairseq)."""
    out = {"_name": flat["arch"]}
    for k, v in flat.items():
        for side in ("encoder", "decoder"):
            if k.startswith(side + "_") and k[len(side) + 1:] in (
                    "embed_path", "embed_dim", "ffn_embed_dim", "layers", "attention_heads",
                    "normalize_before", "learned_pos", "layers_to_keep", "output_dim", "input_dim"):
                out.setdefault(side, {})[k[len(side) + 1:]] = v
                break
        else:
            if k != "arch":
                out[k] = v
    out["encoder"]["layerdrop"] = flat["encoder_layerdrop"]
    out["decoder"]["layerdrop"] = flat["decoder_layerdrop"]
    return out


def make_fairseq(out_dir, src_spm, tgt_spm, src_lines, tgt_lines, *, style="args", d_model=32,
                 layers=(2, 2), heads=4, ffn=64, activation="relu", learned_pos=False,
                 normalize_before=False, max_pos=64, share_decoder_input_output_embed=False, qk_gain=3.0,
                 joined=False, seed=2, arg_overrides=None):
    """checkpoint_best.pt + dict.zh.txt + dict.en.txt (+ the spm models).

    style: "args" (an argparse.Namespace under 'args', older fairseq),
    "cfg" (cfg['model'] a plain nested dict, newer fairseq) or "cfg-namespace"
    (cfg['model'] a Namespace, what newer fairseq stores for legacy archs).
    joined: one dictionary for both sides (fairseq-preprocess --joined-dictionary,
    counted over both encoded corpora) and --share-all-embeddings."""
    os.makedirs(out_dir, exist_ok=True)
    if joined:
        src_dict = tgt_dict = joined_dict_lines(src_spm, src_lines, tgt_spm, tgt_lines)
    else:
        src_dict = fairseq_dict_lines(src_spm, src_lines)
        tgt_dict = fairseq_dict_lines(tgt_spm, tgt_lines)
    for name, lines in (("dict.zh.txt", src_dict), ("dict.en.txt", tgt_dict)):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    init = Init(seed)
    sd = fairseq_state_dict(init, len(src_dict) + 4, len(tgt_dict) + 4, d_model, ffn, layers,
                            learned_pos=learned_pos, normalize_before=normalize_before, max_pos=max_pos,
                            share_decoder_input_output_embed=share_decoder_input_output_embed or joined,
                            qk_gain=qk_gain)
    if joined:  # one Parameter: encoder, decoder and output projection share its storage
        sd["encoder.embed_tokens.weight"] = sd["decoder.embed_tokens.weight"]
    flat = fairseq_args(d_model, ffn, layers, heads, learned_pos=learned_pos,
                        normalize_before=normalize_before, max_pos=max_pos, activation=activation,
                        share_decoder_input_output_embed=share_decoder_input_output_embed or joined)
    if joined:
        flat["share_all_embeddings"] = True
    flat.update(arg_overrides or {})
    ckpt = {
        "model": sd,
        "optimizer_history": [{"criterion_name": "LabelSmoothedCrossEntropyCriterion",
                               "optimizer_name": "FairseqAdam", "lr_scheduler_state": {"best": 3.25},
                               "num_updates": 1200}],
        "extra_state": {"epoch": 4, "val_loss": 3.25,
                        "train_iterator": {"version": 2, "epoch": 4, "iterations_in_epoch": 0, "shuffle": True},
                        "previous_training_time": 812.5},
        "last_optimizer_state": {"state": {}, "param_groups": [{"lr": 0.0005, "betas": (0.9, 0.98)}]},
    }
    if style == "args":
        ckpt["args"] = argparse.Namespace(**flat)
    else:
        model_cfg = nested_model_cfg(flat) if style == "cfg" else argparse.Namespace(_name="transformer", **flat)
        ckpt["args"] = None
        ckpt["cfg"] = {"_name": None, "common": {"seed": 1, "fp16": False},
                       "task": {"_name": "translation", "data": "data-bin/zh-en", "source_lang": "zh",
                                "target_lang": "en", "left_pad_source": True},
                       "model": model_cfg, "criterion": {"_name": "label_smoothed_cross_entropy"},
                       "bpe": {"_name": "sentencepiece"}, "tokenizer": None}
    path = os.path.join(out_dir, "checkpoint_best.pt")
    torch.save(ckpt, path)
    for src, name in ((src_spm, "sentencepiece.zh.model"), (tgt_spm, "sentencepiece.en.model")):
        with open(src, "rb") as a, open(os.path.join(out_dir, name), "wb") as b:
            b.write(a.read())
    return {"ckpt": path, "src_dict": os.path.join(out_dir, "dict.zh.txt"),
            "tgt_dict": os.path.join(out_dir, "dict.en.txt"),
            "src_spm": os.path.join(out_dir, "sentencepiece.zh.model"),
            "tgt_spm": os.path.join(out_dir, "sentencepiece.en.model")}


# --------------------------------------------------------------------------- a pickle that runs code


def pickle_calling(path, module, name, arg):
    """A torch.save-style zip whose data.pkl calls module.name(arg) when
    unpickled (REDUCE on a GLOBAL), built from pickle opcodes: nothing is
    ever executed here."""
    import pickle
    import zipfile
    g = f"{module}\n{name}\n".encode()
    a = arg.encode()
    body = (pickle.PROTO + bytes([2]) + pickle.GLOBAL + g + pickle.SHORT_BINUNICODE + bytes([len(a)]) + a
            + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", body)
        z.writestr("archive/version", "3\n")
    return path
