"""Train the bundled Chinese->English model and export it for tfmc.

    /usr/bin/python3 examples/zh-en/train.py --data ../shared/data/tatoeba-zh-en --hours 2
    /usr/bin/python3 examples/zh-en/train.py --data ../shared/data/tatoeba-zh-en --export-only

The model is the PyTorch module of tests/reference (DESIGN.md architecture,
sinusoidal positions; by default pre-norm with scaled embeddings and the
target embedding tied to the output projection). Dropout is added during
training only (forward hooks, and the reference attention's
training-only `attention_dropout`), so the exported state_dict has exactly
the names and shapes tfmc expects. Optional regularisers: word dropout on
either side (--word-dropout, --source-word-dropout), R-Drop (--rdrop); more
training pairs from files (--extra ZH EN, e.g. the train split translated
by other models). SentencePiece models (pad=0, bos=1, eos=2, unk=3) are
trained first, on the train split only, with Debian's python3-sentencepiece.

Training is resumable: every epoch writes WORK/ckpt-NNNN.pt (model, optimiser,
step, epoch); a new run continues from the newest one until --hours of wall
time have passed in this run or --epochs are done. The epoch's batch order
depends only on (seed, epoch), so a resumed run sees the same data order as an
uninterrupted one. Export averages the last --average checkpoints and writes
model.json, model.safetensors (F16), src/tgt.spm and src/tgt.vocab to --out.
"""

import argparse
import glob
import json
import math
import os
import random
import shutil
import sys
import time


def choose_openblas_kernels():
    """Debian's PyTorch multiplies matrices through OpenBLAS, whose 0.3.21
    takes AMD Zen 4/5 cores for Haswell (and this project's machine image
    sets OPENBLAS_CORETYPE=Haswell outright), so it runs its AVX2 kernels:
    on a Zen 5 core 93-105 GFLOP/s against 146-195 with its AVX-512
    (SkylakeX) kernels at this model's training shapes. Where the CPU has
    the AVX-512 subsets those kernels use, ask for them (before NumPy or
    PyTorch load OpenBLAS) unless another core type than Haswell was
    chosen."""
    if os.environ.get("OPENBLAS_CORETYPE", "haswell").lower() != "haswell":
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        os.environ["OPENBLAS_CORETYPE"] = "SKYLAKEX"


choose_openblas_kernels()

import numpy as np  # noqa: E402  (after choose_openblas_kernels)
import sentencepiece as spm  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from tfmc.reference import tfm as ref  # noqa: E402
import metrics  # noqa: E402  (examples/zh-en/metrics.py)

PAD, BOS, EOS, UNK = 0, 1, 2, 3


def log(work, msg):
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    with open(os.path.join(work, "train.log"), "a") as f:
        f.write(line + "\n")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


# --------------------------------------------------------------------------- tokenizers


def train_spm(work, name, lines, vocab_size, coverage):
    prefix = os.path.join(work, name)
    if os.path.exists(prefix + ".model"):
        return spm.SentencePieceProcessor(model_file=prefix + ".model")
    text = os.path.join(work, name + ".txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=coverage, pad_id=PAD, bos_id=BOS, eos_id=EOS, unk_id=UNK,
        pad_piece="<pad>", bos_piece="<s>", eos_piece="</s>", unk_piece="<unk>",
        hard_vocab_limit=False, input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=1, seed_sentencepiece_size=1000000)
    os.remove(text)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


# --------------------------------------------------------------------------- model


def build_model(args, src_vocab, tgt_vocab):
    arch = dict(d_model=args.d_model, num_heads=args.heads, num_encoder_layers=args.layers,
                num_decoder_layers=args.layers, d_ff=args.d_ff, max_len=args.max_len,
                activation="relu", norm=args.norm, layer_norm_eps=1e-5,
                embedding_scale=args.embedding_scale, positional_encoding="sinusoidal")
    model = ref.TranslationTransformer(arch, src_vocab, tgt_vocab)
    # Scaled embeddings (x sqrt(d)) start at std d^-1/2 so that both kinds of
    # model see unit-variance token vectors next to the positional encoding.
    emb_std = args.d_model ** -0.5 if args.embedding_scale else 1.0
    for name, p in model.named_parameters():
        if p.dim() == 2 and "embedding" not in name:
            torch.nn.init.xavier_uniform_(p)
        elif "embedding" in name:
            torch.nn.init.normal_(p, 0.0, emb_std)
    if args.tie_target:
        # One matrix for the decoder's input embedding and the output
        # projection; the export still writes both names (same values).
        model.linear.weight = model.decoder_embedding.weight
    return model


def add_dropout(model, p, attention_p):
    """Dropout on every sublayer output, the FFN hidden layer and the embeddings,
    and on attention probabilities (training mode only); no parameters, so the
    state_dict is unchanged."""

    def hook(module, inputs, output):
        return F.dropout(output, p, training=module.training)

    for module in model.modules():
        if isinstance(module, ref.MultiHeadAttention):
            module.attention_dropout = attention_p

    for layer in list(model.encoder_layers) + list(model.decoder_layers):
        for name in ("self_attention", "masked_self_attention", "enc_dec_attention", "feed_forward"):
            sub = getattr(layer, name, None)
            if sub is not None:
                sub.register_forward_hook(hook)
        layer.feed_forward.linear1.register_forward_hook(hook)
    model.encoder_embedding.register_forward_hook(hook)
    model.decoder_embedding.register_forward_hook(hook)


def drop_words(ids, p, generator):
    """Word dropout (Sennrich & Zhang, 2019): each non-special token becomes
    <unk> with probability p, so the model cannot lean on every input word
    being present. Training only; pad and bos stay."""
    if p <= 0:
        return ids
    hit = (torch.rand(ids.shape, generator=generator) < p) & (ids > UNK)
    return ids.masked_fill(hit, UNK)


def rdrop_loss(model, src, tgt_in, tgt_out, args, ntok):
    """R-Drop (Liang et al., 2021): the batch runs twice in one forward pass
    (two independent dropout masks); the objective is the mean smoothed
    cross-entropy of both copies plus args.rdrop times the symmetric KL
    divergence between their output distributions, per target token.
    Returns (cross-entropy sum of one copy for the log, objective)."""
    logits = model(torch.cat([src, src]), torch.cat([tgt_in, tgt_in]))
    flat = logits.reshape(-1, logits.shape[-1])
    target = torch.cat([tgt_out, tgt_out]).reshape(-1)
    ce = F.cross_entropy(flat, target, ignore_index=PAD, label_smoothing=args.label_smoothing,
                         reduction="sum")
    lp = F.log_softmax(flat.float(), dim=-1)
    lp1, lp2 = lp.chunk(2)
    keep = (tgt_out.reshape(-1) != PAD).unsqueeze(1)
    kl = ((lp1.exp() * (lp1 - lp2) + lp2.exp() * (lp2 - lp1)) * keep).sum() / 2
    return ce / 2, (ce / 2 + args.rdrop * kl) / ntok


# --------------------------------------------------------------------------- data


def segment(texts, sp_src, sp_tgt, alpha):
    """(zh, en) sentence pairs -> (source ids, target ids): the best
    segmentation, or with alpha > 0 one sampled from each unigram lattice
    (subword regularisation; nbest -1 samples over all segmentations)."""
    sample = dict(enable_sampling=True, alpha=alpha, nbest_size=-1) if alpha > 0 else {}
    src = sp_src.encode([z for z, _ in texts], **sample)
    tgt = sp_tgt.encode([e for _, e in texts], **sample)
    return list(zip(src, tgt))


def make_batches(pairs, batch_tokens, seed, epoch):
    """Length-bucketed batches; the order depends only on (seed, epoch)."""
    rng = random.Random(seed * 100003 + epoch)
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), len(pairs[i][1]), rng.random()))
    batches, cur, width = [], [], 0
    for i in order:
        need = max(len(pairs[i][0]), len(pairs[i][1])) + 1
        w = max(width, need)
        if cur and w * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, w = [], need
        cur.append(i)
        width = w
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def tensors(model, pairs, idx):
    src = model.pad_batch([model.source_ids(pairs[i][0]) for i in idx])
    tgt_in = model.pad_batch([[BOS] + pairs[i][1] for i in idx])
    tgt_out = model.pad_batch([pairs[i][1] + [EOS] for i in idx])
    return src, tgt_in, tgt_out


@torch.no_grad()
def dev_loss(model, pairs, batch_tokens):
    """Teacher-forced cross-entropy per target token (no smoothing, no dropout)."""
    model.eval()
    total, count = 0.0, 0
    for idx in make_batches(pairs, batch_tokens, 0, 0):
        src, tgt_in, tgt_out = tensors(model, pairs, idx)
        logits = model(src, tgt_in)
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                       ignore_index=PAD, reduction="sum"))
        count += int((tgt_out != PAD).sum())
    return total / count


# --------------------------------------------------------------------------- decoding


@torch.no_grad()
def greedy_batch(model, src_rows, max_length):
    """Greedy decoding (DESIGN.md: pad and bos never chosen, ties to the lowest id),
    batched with full recomputation. Returns id lists without bos/eos."""
    src = model.pad_batch([model.source_ids(r) for r in src_rows])
    mem = model.encode(src)
    n = len(src_rows)
    out = [[] for _ in range(n)]
    done = [False] * n
    tgt = torch.full((n, 1), BOS, dtype=torch.long)
    for _ in range(max_length):
        logits = model.decode(tgt, mem, src)[:, -1, :]
        logits[:, PAD] = -float("inf")
        logits[:, BOS] = -float("inf")
        tok = torch.argmax(logits, dim=-1)  # first maximum
        for i in range(n):
            if not done[i]:
                if int(tok[i]) == EOS:
                    done[i] = True
                else:
                    out[i].append(int(tok[i]))
        if all(done):
            break
        tgt = torch.cat([tgt, tok[:, None]], dim=1)
    return out


def translate(model, sp_src, sp_tgt, lines, max_length=128, batch=64):
    model.eval()
    rows = [sp_src.encode(line) for line in lines]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    hyps = [None] * len(rows)
    for b in range(0, len(order), batch):
        idx = order[b:b + batch]
        for i, ids in zip(idx, greedy_batch(model, [rows[i] for i in idx], max_length)):
            hyps[i] = sp_tgt.decode(ids)
    return hyps


# --------------------------------------------------------------------------- checkpoints


def checkpoints(work):
    return sorted(glob.glob(os.path.join(work, "ckpt-*.pt")))


ARCH_ARGS = ("d_model", "heads", "layers", "d_ff", "max_len", "norm", "embedding_scale", "tie_target")


def adopt_checkpoint_architecture(args, latest):
    """A resumed run or an export uses the architecture its checkpoints were
    trained with (`latest`, the newest checkpoint, or None); architecture
    options only shape a fresh run."""
    if latest is None:
        return
    saved = latest["args"]
    for name in ARCH_ARGS:
        # Checkpoints from before an option existed were made with its old default.
        value = saved.get(name, {"norm": "post", "embedding_scale": False, "tie_target": False}.get(name))
        if value != getattr(args, name):
            log(args.work, f"--{name.replace('_', '-')} {value} (from the checkpoints in {args.work})")
            setattr(args, name, value)


def adopt_init_model(args, init):
    """--init: the architecture and tokenizers of an exported model (this
    script's export: model.json, src.spm/tgt.spm) for a fresh run."""
    with open(os.path.join(init, "model.json")) as f:
        desc = json.load(f)
    a = desc["architecture"]
    if a["num_encoder_layers"] != a["num_decoder_layers"] or a["activation"] != "relu":
        sys.exit(f"error: {init} is not a model this script trains")
    args.d_model, args.heads, args.layers = a["d_model"], a["num_heads"], a["num_encoder_layers"]
    args.d_ff, args.max_len, args.norm = a["d_ff"], a["max_len"], a["norm"]
    args.embedding_scale = a["embedding_scale"]
    weights = ref.read_safetensors(os.path.join(init, desc["weights"]))
    args.tie_target = bool(np.array_equal(weights["decoder_embedding.weight"], weights["linear.weight"]))
    for side in ("src", "tgt"):
        shutil.copyfile(os.path.join(init, side + ".spm"), os.path.join(args.work, side + ".model"))
    log(args.work, f"architecture and tokenizers from {init}")


def average(paths):
    avg = None
    for p in paths:
        sd = torch.load(p, map_location="cpu")["model"]
        if avg is None:
            avg = {k: v.clone().double() for k, v in sd.items()}
        else:
            for k in avg:
                avg[k] += sd[k].double()
    return {k: (v / len(paths)).float() for k, v in avg.items()}


def export(args, model, sp_src, sp_tgt):
    out = args.out
    os.makedirs(out, exist_ok=True)
    desc = {
        "format": "tfm-model", "version": 1,
        "architecture": {k: model.arch[k] for k in ref.ARCH_FIELDS},
        "source": {"vocab": "src.vocab", "tokenizer": "sentencepiece", "model": "src.spm"},
        "target": {"vocab": "tgt.vocab", "tokenizer": "sentencepiece", "model": "tgt.spm"},
        "special_tokens": {"pad": PAD, "bos": BOS, "eos": EOS, "unk": UNK},
        "weights": "model.safetensors",
        # Trained on single sentences: --split-sentences auto splits lines.
        "sentence_level": True,
    }
    # The decoding chosen on dev: what tfmc translate does without flags.
    decoding = {}
    if args.default_beam:
        decoding["beam_size"] = args.default_beam
    if args.default_length_penalty is not None:
        decoding["length_penalty"] = args.default_length_penalty
    if decoding:
        desc["decoding"] = decoding
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(desc, f, indent=2)
        f.write("\n")
    for side, sp in (("src", sp_src), ("tgt", sp_tgt)):
        shutil.copyfile(os.path.join(args.work, side + ".model"), os.path.join(out, side + ".spm"))
        with open(os.path.join(out, side + ".vocab"), "w", encoding="utf-8") as f:
            f.write("".join(sp.id_to_piece(i) + "\n" for i in range(sp.get_piece_size())))
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    ref.write_safetensors(os.path.join(out, "model.safetensors"), state, dtype="F16")


# --------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="directory with train.zh/train.en/dev.zh/dev.en")
    p.add_argument("--work", default=os.path.join(HERE, "work"), help="checkpoints and logs")
    p.add_argument("--out", default=HERE, help="export directory")
    p.add_argument("--hours", type=float, default=2.05, help="wall-time budget of this run")
    p.add_argument("--epochs", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--src-vocab", type=int, default=4000)
    p.add_argument("--tgt-vocab", type=int, default=4000)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--norm", choices=("post", "pre"), default="pre")
    p.add_argument("--embedding-scale", action=argparse.BooleanOptionalAction, default=True,
                   help="embeddings x sqrt(d_model)")
    p.add_argument("--tie-target", action=argparse.BooleanOptionalAction, default=True,
                   help="share the decoder embedding and the output projection matrix")
    p.add_argument("--dropout", type=float, default=0.3)
    p.add_argument("--attention-dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--extra", nargs=2, action="append", default=[], metavar=("ZH", "EN"),
                   help="more training pairs, line-aligned files (e.g. the train split translated by "
                        "other models: data diversification); the tokenizers still learn from "
                        "the train split only")
    p.add_argument("--word-dropout", type=float, default=0.0,
                   help="probability that a decoder input token becomes <unk> in training")
    p.add_argument("--source-word-dropout", type=float, default=0.0,
                   help="probability that a source token becomes <unk> in training")
    p.add_argument("--spm-sampling", type=float, default=0.0, metavar="ALPHA",
                   help="subword regularisation (Kudo, 2018): every epoch segments each training "
                        "sentence anew, sampled from the SentencePiece unigram lattice with "
                        "smoothing ALPHA (0.3: about half the sentences change; 0: off, the best "
                        "segmentation always); translation keeps the best segmentation")
    p.add_argument("--rdrop", type=float, default=0.0,
                   help="R-Drop: weight of the symmetric KL between two dropout passes (0: off)")
    p.add_argument("--lr", type=float, default=1.5e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=400, help="warm-up steps (then 1/sqrt decay)")
    p.add_argument("--batch-tokens", type=int, default=1500, help="padded tokens per batch side")
    p.add_argument("--eval-minutes", type=float, default=20.0, help="dev BLEU every N minutes")
    p.add_argument("--average", type=int, default=5, help="checkpoints averaged at export")
    p.add_argument("--keep", type=int, default=8, help="checkpoints kept")
    p.add_argument("--export-only", action="store_true")
    p.add_argument("--no-dev", action="store_true", help="with --export-only: skip the dev BLEU")
    p.add_argument("--init", metavar="MODEL_DIR",
                   help="a fresh run starts from this exported model (its weights, tokenizers and "
                        "architecture) instead of random weights: continued training, e.g. on "
                        "diversified data")
    p.add_argument("--init-step", type=int, default=0,
                   help="with --init: the learning-rate schedule goes on from this step (the "
                        "model's own last step continues its decay; 0 warms up again)")
    p.add_argument("--default-beam", type=int, default=0,
                   help="write \"decoding\": {\"beam_size\": K} into the exported model.json "
                        "(tfmc's default search for it; 0: none, greedy)")
    p.add_argument("--default-length-penalty", type=float, default=None,
                   help="... and its length_penalty")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    os.makedirs(args.work, exist_ok=True)
    train_zh = read_lines(os.path.join(args.data, "train.zh"))
    train_en = read_lines(os.path.join(args.data, "train.en"))
    dev_zh = read_lines(os.path.join(args.data, "dev.zh"))
    dev_en = read_lines(os.path.join(args.data, "dev.en"))
    if len(train_zh) != len(train_en) or len(dev_zh) != len(dev_en):
        sys.exit("error: source and target files differ in length")

    existing = checkpoints(args.work)
    init = args.init if args.init and not existing else None
    if init:
        adopt_init_model(args, init)
    sp_src = train_spm(args.work, "src", train_zh, args.src_vocab, 0.9995)
    sp_tgt = train_spm(args.work, "tgt", train_en, args.tgt_vocab, 1.0)
    latest = torch.load(existing[-1], map_location="cpu") if existing else None
    adopt_checkpoint_architecture(args, latest)
    torch.manual_seed(args.seed)
    model = build_model(args, sp_src.get_piece_size(), sp_tgt.get_piece_size())

    if args.export_only:
        paths = checkpoints(args.work)[-args.average:]
        if not paths:
            sys.exit("error: no checkpoints in " + args.work)
        model.load_state_dict(average(paths))
        export(args, model, sp_src, sp_tgt)
        if args.no_dev:
            log(args.work, f"exported average of {len(paths)} checkpoints to {args.out}")
            return
        exported = ref.load(os.path.join(args.out, "model.json"))
        hyps = translate(exported, sp_src, sp_tgt, dev_zh)
        log(args.work, f"exported average of {len(paths)} checkpoints "
            f"({os.path.basename(paths[0])}..{os.path.basename(paths[-1])}) to {args.out}: "
            f"dev BLEU {metrics.corpus_bleu(hyps, dev_en):.2f} chrF {metrics.corpus_chrf(hyps, dev_en):.2f}")
        return

    add_dropout(model, args.dropout, args.attention_dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    step, epoch = 0, 0
    if latest is not None:
        model.load_state_dict(latest["model"])
        opt.load_state_dict(latest["optimizer"])
        step, epoch = latest["step"], latest["epoch"]
        log(args.work, f"resumed from {os.path.basename(existing[-1])} (step {step})")
    elif init:
        model.load_state_dict(ref.load(init).state_dict())
        step = args.init_step
        log(args.work, f"initialised from {init} (schedule from step {step})")

    texts = list(zip(train_zh, train_en))
    for zh_path, en_path in args.extra:
        extra_zh, extra_en = read_lines(zh_path), read_lines(en_path)
        if len(extra_zh) != len(extra_en):
            sys.exit(f"error: {zh_path} and {en_path} differ in length")
        texts += [(z, e) for z, e in zip(extra_zh, extra_en) if z.strip() and e.strip()]
    pairs = segment(texts, sp_src, sp_tgt, 0.0)
    dev_pairs = [(sp_src.encode(z), sp_tgt.encode(e)) for z, e in zip(dev_zh, dev_en)]
    n_params = sum(p.numel() for p in model.parameters())
    log(args.work, f"{len(pairs)} pairs, vocab {sp_src.get_piece_size()}/{sp_tgt.get_piece_size()}, "
        f"{n_params / 1e6:.2f}M parameters, {args.threads} thread(s)")

    # Word-dropout masks depend only on (seed, step), like the batch order.
    noise = torch.Generator()
    noise.manual_seed(args.seed * 7919 + step)
    start = time.time()
    last_eval = start
    while epoch < args.epochs and time.time() - start < args.hours * 3600:
        model.train()
        t0, loss_sum, tok_sum = time.time(), 0.0, 0
        if args.spm_sampling > 0:
            spm.set_random_generator_seed(args.seed * 100003 + epoch)
            pairs = segment(texts, sp_src, sp_tgt, args.spm_sampling)
        for idx in make_batches(pairs, args.batch_tokens, args.seed, epoch):
            step += 1
            lr = args.lr * min(step / args.warmup, math.sqrt(args.warmup / step))
            for g in opt.param_groups:
                g["lr"] = lr
            src, tgt_in, tgt_out = tensors(model, pairs, idx)
            src = drop_words(src, args.source_word_dropout, noise)
            tgt_in = drop_words(tgt_in, args.word_dropout, noise)
            ntok = int((tgt_out != PAD).sum())
            if args.rdrop > 0:
                loss, objective = rdrop_loss(model, src, tgt_in, tgt_out, args, ntok)
            else:
                logits = model(src, tgt_in)
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                       ignore_index=PAD, label_smoothing=args.label_smoothing,
                                       reduction="sum")
                objective = loss / ntok
            opt.zero_grad()
            objective.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            loss_sum += float(loss)
            tok_sum += ntok
        epoch += 1
        path = os.path.join(args.work, f"ckpt-{epoch:04d}.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                    "epoch": epoch, "args": vars(args)}, path + ".tmp")
        os.replace(path + ".tmp", path)
        for old in checkpoints(args.work)[:-args.keep]:
            os.remove(old)
        msg = (f"epoch {epoch} step {step} lr {lr:.2e} loss {loss_sum / tok_sum:.3f} "
               f"({time.time() - t0:.0f} s) dev loss {dev_loss(model, dev_pairs, args.batch_tokens):.3f}")
        if time.time() - last_eval >= args.eval_minutes * 60:
            hyps = translate(model, sp_src, sp_tgt, dev_zh)
            msg += (f" dev BLEU {metrics.corpus_bleu(hyps, dev_en):.2f}"
                    f" chrF {metrics.corpus_chrf(hyps, dev_en):.2f}")
            last_eval = time.time()
        log(args.work, msg)


if __name__ == "__main__":
    main()
