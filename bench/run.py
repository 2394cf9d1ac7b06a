"""tfmc vs PyTorch eager on a random base model: tokens/s, ratios, limits.

    /usr/bin/python3 bench/run.py [--work /tmp/tfmc-bench] [--batches 1,16,64] [--threads 1,2]

Builds (once) a random base model with tests/reference/make_model.py
(d_model 512, 8 heads, 6+6 layers, d_ff 2048, vocab 8000), 32-token
sources, and for every batch size x thread count runs `tfmc translate
--ids --stats` and bench/pytorch_eager.py in the same run, each generating
exactly --steps tokens per sentence (greedy, eos barred). Model load and
JIT time are excluded from tokens/s and reported separately. Prints a
markdown table. Needs build/ (scripts/setup.sh) and Debian's python3-torch.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"


def run(cmd):
    """Runs cmd; returns (stdout, stderr, peak RSS in MB)."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # Read both pipes (stderr is small), then reap the child with wait4 to
    # get its own resource usage.
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{err}")
    return out, err, usage.ru_maxrss / 1024.0


def gemm_flops_per_token(a, vocab):
    """The linear layers' multiply-adds x2 of one generated token (self
    attention's four projections, cross attention's query and output, the
    feed-forward pair, the output projection)."""
    d, ff, L = a["d_model"], a["d_ff"], a["num_decoder_layers"]
    return L * 2 * (4 * d * d + 2 * d * d + 2 * d * ff) + 2 * d * vocab


def flops_per_token(a, src_len, steps, vocab):
    """Multiply-adds x2 of one generated token with a KV cache (average
    self-attention length steps/2), cross keys/values precomputed."""
    d, L = a["d_model"], a["num_decoder_layers"]
    attention = 2 * 2 * d * (steps / 2 + src_len)
    return gemm_flops_per_token(a, vocab) + L * attention


# A weight value's bytes as a fraction of float32's 4, by compute type.
WEIGHT_SCALE = {"float32": 1.0, "float16": 0.5, "bfloat16": 0.5, "int8": 0.25}


def layer_bytes(a, ct="float32"):
    """Bytes of the decoder layers' weights (biases and norms included)
    with compute type `ct`."""
    d, ff, L = a["d_model"], a["d_ff"], a["num_decoder_layers"]
    per_layer = 4 * d * d + 2 * d * d + 2 * d * ff + 8 * d + ff
    return 4 * L * per_layer * WEIGHT_SCALE.get(ct, 1.0)


def weight_bytes_per_step(a, vocab, ct="float32", bf16_tiles=False):
    """Bytes of weights one decoder step reads with compute type `ct`.
    Greedy's output projection reads an int8 copy of a float weight (codes
    plus six floats per output: runtime/kernels/ShortlistArgmax.h) wherever
    the packed kernels run, but for bfloat16 on AMX tiles (`bf16_tiles`),
    whose full scan is as fast (since 2026-12-06; before, from 8,192
    outputs or 8 MiB)."""
    if ct != "int8" and not (ct == "bfloat16" and bf16_tiles):
        return layer_bytes(a, ct) + shortlist_bytes(a, vocab)
    return layer_bytes(a, ct) + 4 * WEIGHT_SCALE[ct] * vocab * a["d_model"] + 4 * vocab


def shortlist_bytes(a, vocab):
    """The int8 shortlist's bytes of greedy's output projection."""
    return vocab * a["d_model"] + 24 * vocab


def float32_ceiling(a, src_len, steps, vocab, batch, sgemm_gflops, read_gbs, kv_bytes=4):
    """The largest share of sgemm a float32 greedy step at `batch` rows can
    reach on a machine with these probe rates, as a step runs: the
    decoder layers' GEMMs at sgemm's rate or their weights at the read
    rate, whichever is slower; greedy's output projection, which runs as an
    int8 shortlist (its int8 copy at the read rate, the int8 products
    taken as free: AMX or vpdpbusd, many times sgemm's rate); then
    attention reading the keys and values (self caches at steps/2
    positions on average, cross rows at src_len, kv_bytes each: 4 for
    float32, 2 with --kv-type float16) at the read rate. The step's FLOP (flops_per_token, the projection counted as the
    float32 GEMM it stands for) over that time, over sgemm. Taking the
    int8 products as free flatters AVX2-only hosts (their shortlist took
    0.5-0.65x the full scan's time, not ~0.25x), and where memory reads
    are fast against sgemm the projection's FLOP for its bytes alone can
    put this above 100%."""
    d, L = a["d_model"], a["num_decoder_layers"]
    projection_flops = 2 * d * vocab
    gemm = batch * (gemm_flops_per_token(a, vocab) - projection_flops) / (sgemm_gflops * 1e9)
    weights = layer_bytes(a) / (read_gbs * 1e9)
    projection = shortlist_bytes(a, vocab) / (read_gbs * 1e9)
    keys_values = L * batch * (steps / 2 + src_len) * 2 * d * kv_bytes / (read_gbs * 1e9)
    step = max(gemm, weights) + projection + keys_values
    return batch * flops_per_token(a, src_len, steps, vocab) / (sgemm_gflops * 1e9) / step


STATS = re.compile(r"(\d+) tokens in [\d.]+ s: .* load\+compile ([\d.]+) s \(JIT ([\d.]+) s\), "
                   r"encode ([\d.]+) s, decode ([\d.]+) s .*, ([\d.]+) tokens/s decoding")


def tfmc_stats(err):
    """(tokens, load s, JIT s, encode s, decode s, tokens/s) from --stats."""
    m = STATS.search(err)
    if not m:
        sys.exit(f"bench: no stats from tfmc:\n{err}")
    return m.groups()


def translate_seconds(err):
    m = re.search(r"tokens in ([\d.]+) s:", err)
    return float(m.group(1))


def beam_rows(tfmc, model, work, src, beam, batches, steps):
    """Beam search at exactly `steps` tokens (eos barred): hypothesis rows
    decoded per second, next to greedy at the largest batch."""
    out = []
    with open(src) as f:
        lines = f.readlines()
    for batch in batches:
        inp = os.path.join(work, f"beam-src-{batch}.ids")
        with open(inp, "w") as g:
            g.writelines(lines[:batch])
        for k in (1, beam):
            _, err, rss = run([tfmc, "translate", model, "--ids", "-i", inp, "--min-length",
                               str(steps), "--max-length", str(steps), "--max-length-factor", "0",
                               "--batch-size", str(batch), "--beam-size", str(k), "--stats"])
            _, _, _, _, dec, _ = tfmc_stats(err)
            rows_per_s = k * batch * steps / float(dec)
            out.append(dict(batch=batch, beam=k, rows_per_s=rows_per_s, decode=float(dec), rss=rss))
            print(f"bench: beam {k} batch {batch}: {rows_per_s:.1f} hypothesis rows/s",
                  file=sys.stderr)
    return out


def sorted_rows(tfmc, model, work, vocab, lines=256, repeats=3):
    """A file of mixed source lengths (1-63 ids), greedy with eos allowed,
    batched in input order vs length-sorted: median translate seconds."""
    rng = random.Random(11)
    inp = os.path.join(work, "mixed.ids")
    with open(inp, "w") as f:
        for _ in range(lines):
            n = rng.choice([rng.randrange(1, 8), rng.randrange(8, 24), rng.randrange(24, 64)])
            f.write(" ".join(str(rng.randrange(4, vocab)) for _ in range(n)) + "\n")
    result = {}
    for sort in ("false", "true"):
        times = []
        for _ in range(repeats):
            _, err, _ = run([tfmc, "translate", model, "--ids", "-i", inp, "--max-length", "64",
                             "--sort-batches=" + sort, "--stats"])
            times.append(translate_seconds(err))
        result[sort] = sorted(times)[len(times) // 2]
    return lines, result


def cpu_summary():
    """The CPU, its vector extensions and last-level cache: what the kernel
    ratios depend on (the packed kernels run AVX-512 VNNI where it exists,
    bfloat16 layers vdpbf16ps, and weights that fit in the cache stream
    faster than memory)."""
    model, flags = "unknown CPU", set()
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    isa = "AVX-512 + VNNI" if {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= flags \
        else "AVX2 + FMA" if {"avx2", "fma"} <= flags else "no AVX2"
    # bfloat16 layers run vdpbf16ps where it exists, int8 and bfloat16 ones
    # AMX's tiles where the kernels use them (tfmc-bench-machine's line says
    # whether the process got them).
    if isa == "AVX-512 + VNNI" and "avx512_bf16" in flags:
        isa += " + BF16"
    if "amx_tile" in flags:
        forced = os.environ.get("TFMC_KERNEL_ISA")
        isa += " + AMX" if forced in (None, "", "amx") else \
            " + AMX (unused: TFMC_KERNEL_ISA=%s)" % forced
    if os.environ.get("TFMC_KERNEL_ISA") == "avx2" and "AVX-512" in isa:
        isa += " (TFMC_KERNEL_ISA=avx2: AVX2 kernels)"
    cache = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        l3 = [l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("L3 cache")]
        cache = f", L3 {l3[0]}" if l3 else ""
    except OSError:
        pass
    return f"cpu: {model}, {isa}{cache}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default="/tmp/tfmc-bench")
    p.add_argument("--batches", default="1,16,64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--src-len", type=int, default=32, help="source tokens, eos included")
    p.add_argument("--sentences", type=int, default=0,
                   help="sentences per run (default: max(4, batch) for batch 1, else batch)")
    p.add_argument("--skip-pytorch", action="store_true")
    p.add_argument("--beam", type=int, default=4, help="beam size of the beam rows")
    p.add_argument("--beam-batches", default="16,32,64",
                   help="batch sizes of the beam rows ('' to skip)")
    p.add_argument("--skip-sorted", action="store_true",
                   help="skip the sorted-vs-input-order row")
    p.add_argument("--skip-shapes", action="store_true",
                   help="skip the per-shape kernel table (tfmc-bench-linear)")
    p.add_argument("--baseline", default="",
                   help="another tfmc binary (e.g. an earlier commit's build) run next to "
                        "build/bin/tfmc in the greedy rows, alternating: the 'vs baseline' column")
    p.add_argument("--repeats", type=int, default=1,
                   help="runs of each greedy tfmc measurement (medians are reported)")
    p.add_argument("--compute-types", default="float32,float16,bfloat16,int8",
                   help="tfmc --compute-type values of the greedy rows (float32 first: "
                        "the others are reported relative to it)")
    p.add_argument("--kv-type", default="auto",
                   help="tfmc --kv-type of the greedy rows (auto: float16 keys/values "
                        "for the reduced types, float32 for float32)")
    p.add_argument("--skip-paired-limits", action="store_true",
                   help="skip the machine probe after every greedy tfmc run (the "
                        "'against the machine, paired' lines)")
    p.add_argument("--tgt-vocab", type=int, default=0,
                   help="the base model with this target vocabulary instead of 8000 "
                        "(e.g. 65001, OPUS-MT's: the output projection dominates)")
    args = p.parse_args()

    tfmc = os.path.join(ROOT, "build", "bin", "tfmc")
    machine = os.path.join(ROOT, "build", "bin", "tfmc-bench-machine")
    model_dir = os.path.join(args.work, f"base-v{args.tgt_vocab}" if args.tgt_vocab else "base")
    if not os.path.exists(os.path.join(model_dir, "model.json")):
        subprocess.run([PY, os.path.join(ROOT, "tests", "reference", "make_model.py"),
                        "--preset", "base", "--seed", "1", "--out", model_dir]
                       + (["--tgt-vocab", str(args.tgt_vocab)] if args.tgt_vocab else []),
                       check=True)
    arch = json.load(open(os.path.join(model_dir, "model.json")))["architecture"]
    vocab = 8000  # source ids
    tgt_vocab = args.tgt_vocab or vocab
    rng = random.Random(7)
    src = os.path.join(args.work, "src.ids")
    with open(src, "w") as f:
        # Enough lines for --sentences (the rows once took the file's first
        # 64 lines whatever --sentences said, and divided by its batches).
        for _ in range(max(64, args.sentences)):
            f.write(" ".join(str(rng.randrange(4, vocab)) for _ in range(args.src_len - 1)) + "\n")

    limits = {}
    for t in sorted({int(x) for x in args.threads.split(",")}):
        if os.path.exists(machine):
            limits[t] = json.loads(run([machine, "--threads", str(t)])[0])
    fpt = flops_per_token(arch, args.src_len, args.steps, tgt_vocab)
    wbytes = weight_bytes_per_step(arch, tgt_vocab)

    thread_counts = [int(x) for x in args.threads.split(",")]
    rows = []
    # (batch, ct) -> {threads: [tokens/s of each repeat]}: the thread counts'
    # runs alternate within each repeat, so their ratios pair up too.
    tps_by_repeat = {}
    # (batch, threads, ct) -> [(tokens/s, decoder step ms, the probe run
    # right after it)]: each run against the machine as it was then.
    beside_probe = {}
    for batch in [int(x) for x in args.batches.split(",")]:
        n = args.sentences or (4 if batch == 1 else batch)
        batches = -(-n // batch)  # the last one may be partial
        inp = os.path.join(args.work, f"src-{n}.ids")
        with open(src) as f, open(inp, "w") as g:
            g.writelines(f.readlines()[:n])
        torch = {}
        if not args.skip_pytorch:
            for threads in thread_counts:
                out, _, prss = run([PY, os.path.join(ROOT, "bench", "pytorch_eager.py"), "--model",
                                    model_dir, "--src", inp, "--batch-size", str(batch),
                                    "--steps", str(args.steps), "--threads", str(threads)])
                torch[threads] = (json.loads(out), prss)
        for ct in args.compute_types.split(","):
            def measure(binary, threads):
                _, err, rss = run([binary, "translate", os.path.join(model_dir, "model.json"),
                                   "--ids", "-i", inp, "--min-length", str(args.steps),
                                   "--max-length", str(args.steps), "--max-length-factor", "0",
                                   "--batch-size", str(batch), "--threads", str(threads),
                                   "--compute-type", ct, "--stats"]
                                  + (["--kv-type", args.kv_type] if args.kv_type != "auto" else []))
                return tfmc_stats(err), rss
            runs = {t: [] for t in thread_counts}
            baseline = {t: [] for t in thread_counts}
            paired = {t: [] for t in thread_counts}
            for i in range(max(1, args.repeats)):
                # The thread counts take turns (first one way, then the
                # other), and so do the two builds: on a host whose speed
                # drifts from minute to minute the median of the pairs'
                # ratios is steadier than the ratio of two medians taken
                # minutes apart.
                for threads in (thread_counts if i % 2 == 0 else thread_counts[::-1]):
                    if args.baseline and i % 2:
                        base = float(measure(args.baseline, threads)[0][5])
                        runs[threads].append(measure(tfmc, threads))
                    else:
                        runs[threads].append(measure(tfmc, threads))
                        base = (float(measure(args.baseline, threads)[0][5])
                                if args.baseline else 0)
                    if args.baseline:
                        baseline[threads].append(base)
                        paired[threads].append(float(runs[threads][-1][0][5]) / base)
                    if os.path.exists(machine) and not args.skip_paired_limits:
                        stats = runs[threads][-1][0]
                        probe = json.loads(run([machine, "--threads", str(threads)])[0])
                        beside_probe.setdefault((batch, threads, ct), []).append(
                            (float(stats[5]), 1000 * float(stats[4]) / (args.steps * batches),
                             probe))
            tps_by_repeat[(batch, ct)] = {t: [float(r[0][5]) for r in runs[t]]
                                          for t in thread_counts}
            for threads in thread_counts:
                # The run with the median tokens/s stands for all.
                ordered = sorted(runs[threads], key=lambda r: float(r[0][5]))
                (tokens, load, jit, enc, dec, tps), rss = ordered[len(ordered) // 2]
                row = dict(batch=batch, threads=threads, ct=ct, tfmc=float(tps),
                           load=float(load), jit=float(jit), enc=float(enc) / batches,
                           rss=rss, step_ms=1000 * float(dec) / (args.steps * batches))
                if baseline[threads]:
                    b = sorted(baseline[threads])
                    row["baseline"] = b[len(b) // 2]
                    p = sorted(paired[threads])
                    row["paired"] = p[len(p) // 2]
                if threads in torch:
                    pt, prss = torch[threads]
                    row.update(torch=pt["tokens_per_s"], torch_rss=prss)
                rows.append(row)
                print(f"bench: batch {batch} threads {threads} {ct}: tfmc {row['tfmc']:.1f} tok/s"
                      + (f", pytorch {row['torch']:.1f} tok/s" if "torch" in row else ""),
                      file=sys.stderr)
    # The table lists the rows by thread count first, as before.
    order = {t: i for i, t in enumerate(thread_counts)}
    rows.sort(key=lambda r: order[r["threads"]])

    print(f"\nbase model (target vocabulary {tgt_vocab}), {args.src_len}-token sources, {args.steps} generated tokens, greedy; "
          f"{fpt / 1e6:.1f} MFLOP and {wbytes / 1e6:.1f} MB of weights per generated token "
          f"(batch 1)\n")
    print(cpu_summary())
    if args.kv_type != "auto":
        print(f"keys and values: --kv-type {args.kv_type} in every greedy tfmc row "
              "(not the beam or length-sorted rows)")
    for t, lim in limits.items():
        dot = (f", vdpbf16ps {lim['bf16_dot_gflops']:.1f} GFLOP/s (one thread, registers only)"
               if "bf16_dot_gflops" in lim else "")
        if "amx_bf16_gflops" in lim:
            dot += (f", AMX tiles bfloat16 {lim['amx_bf16_gflops']:.1f} GFLOP/s and int8 "
                    f"{lim['amx_int8_gops']:.1f} GOP/s (one thread, tiles only)")
        print(f"machine, {t} thread(s): oneDNN sgemm 1024^3 {lim['sgemm_gflops']:.1f} GFLOP/s, "
              f"read {lim['read_gbs']:.1f} GB/s, copy {lim['copy_gbs']:.1f} GB/s{dot}")
    # What more threads can gain here at most: vector arithmetic, memory
    # reads and oneDNN's own sgemm, t threads against one (issue 28's
    # two-thread targets are ratios of the same kind).
    one = limits.get(1)
    for t, lim in limits.items():
        if t > 1 and one and "fma_gflops_together" in lim:
            print(f"machine, {t} threads against 1: vector FMA "
                  f"{lim['fma_gflops_together'] / lim['fma_gflops_alone']:.2f}x, "
                  f"memory read {lim['read_gbs'] / one['read_gbs']:.2f}x, "
                  f"oneDNN sgemm {lim['sgemm_gflops'] / one['sgemm_gflops']:.2f}x")
    print()
    print("float16 and bfloat16 stream half the weight bytes of float32, int8 a quarter "
          "(plus per-row scales), and greedy's output projection reads an int8 copy of a "
          "float weight (the shortlist; not bfloat16 on AMX tiles); the bound column counts "
          "those bytes. "
          "bfloat16 and int8 multiply faster than float32 (vdpbf16ps, vpdpbusd; AMX's "
          "tiles where the line above names them), so "
          "their % sgemm can pass 100%.\n")
    # bfloat16 layers multiply with vdpbf16ps where the CPU has it (not
    # under TFMC_KERNEL_ISA=avx2): their own peak is that instruction's
    # rate, t threads at most t times one thread's.
    # On AMX hosts (unless TFMC_KERNEL_ISA keeps the tiles out) bfloat16 and
    # int8 layers run on the tiles: their peaks are the tiles' rates.
    forced = os.environ.get("TFMC_KERNEL_ISA")
    tiles = forced not in ("avx2", "avx512")
    dot_peak = {t: t * lim["bf16_dot_gflops"] for t, lim in limits.items()
                if "bf16_dot_gflops" in lim and forced != "avx2"}
    tile_peak = {}
    if tiles:
        for t, lim in limits.items():
            if "amx_bf16_gflops" in lim:
                dot_peak[t] = t * lim["amx_bf16_gflops"]
                tile_peak[t] = t * lim["amx_int8_gops"]
    if args.baseline:
        print(f"vs baseline: tokens/s of build/bin/tfmc over those of {args.baseline}, "
              f"runs alternating, medians of {max(1, args.repeats)}; paired: the median "
              f"of each pair's ratio (the two builds' runs side by side)\n")
    print("| batch | threads | compute type | tfmc tok/s | vs float32 | PyTorch tok/s | ratio | "
          "tfmc GFLOP/s (% sgemm) | step ms (bound ms) | encoder ms/batch | tfmc peak RSS MB | "
          "PyTorch RSS MB | load+JIT s |" + (" vs baseline | paired |" if args.baseline else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if args.baseline else ""))
    base = {(r["batch"], r["threads"]): r["tfmc"] for r in rows if r["ct"] == "float32"}
    for r in rows:
        lim = limits.get(r["threads"], {})
        gf = r["tfmc"] * fpt / 1e9
        peak = f"{gf:.1f} ({100 * gf / lim['sgemm_gflops']:.0f}%)" if lim else f"{gf:.1f}"
        wb = weight_bytes_per_step(arch, tgt_vocab, r["ct"], bool(tile_peak))
        bound = f"{1000 * wb / (lim['read_gbs'] * 1e9):.2f}" if lim and r["batch"] == 1 else "-"
        torch_tps = f"{r['torch']:.1f}" if "torch" in r else "-"
        ratio = f"{r['tfmc'] / r['torch']:.2f}" if "torch" in r else "-"
        torch_rss = f"{r['torch_rss']:.0f}" if "torch_rss" in r else "-"
        f32 = base.get((r["batch"], r["threads"]))
        vs = f"{r['tfmc'] / f32:.2f}" if f32 else "-"
        print(f"| {r['batch']} | {r['threads']} | {r['ct']} | {r['tfmc']:.1f} | {vs} | {torch_tps} | "
              f"{ratio} | {peak} | {r['step_ms']:.2f} ({bound}) | {1000 * r['enc']:.1f} | "
              f"{r['rss']:.0f} | {torch_rss} | {r['load']:.1f} |"
              + (f" {r['tfmc'] / r['baseline']:.3f} | {r['paired']:.3f} |" if "baseline" in r else ""))


    by = {(r["batch"], r["threads"], r["ct"]): r["tfmc"] for r in rows}
    scaling = [f"batch {b} {ct} {by[(b, t, ct)] / by[(b, 1, ct)]:.2f}x"
               for (b, t, ct) in sorted(by) if t > 1 and (b, 1, ct) in by]
    if scaling:
        print("\ntfmc, more threads against 1 (tokens/s, medians): " + ", ".join(scaling))
    # The same from each repeat's runs side by side (the thread counts'
    # runs alternate): the median of the per-repeat ratios.
    pairs = []
    for (b, ct), per in sorted(tps_by_repeat.items()):
        for t, series in sorted(per.items()):
            if t > 1 and 1 in per:
                ratios = sorted(x / y for x, y in zip(series, per[1]))
                pairs.append(f"batch {b} {ct} {ratios[len(ratios) // 2]:.2f}x")
    if pairs:
        print(f"tfmc, more threads against 1, paired (median of {max(1, args.repeats)} "
              f"repeats' ratios): " + ", ".join(pairs))
    dots = [f"batch {r['batch']} threads {r['threads']}: "
            f"{100 * r['tfmc'] * fpt / 1e9 / dot_peak[r['threads']]:.0f}%"
            for r in rows if r["ct"] == "bfloat16" and r["threads"] in dot_peak]
    if dots:
        print("tfmc bfloat16 against the " + ("AMX tile" if tile_peak else "vdpbf16ps")
              + " rate (one thread's on registers alone, times the threads): "
              + ", ".join(dots))
    ceilings = [f"batch {b} threads {t}: "
                f"{100 * float32_ceiling(arch, args.src_len, args.steps, tgt_vocab, b, limits[t]['sgemm_gflops'], limits[t]['read_gbs'], 2 if args.kv_type == 'float16' else 4):.0f}%"
                for (b, t) in sorted(base) if b > 1 and limits.get(t, {}).get("sgemm_gflops")]
    if ceilings:
        print("float32 ceiling from the probe at the start (the layers' GEMMs at sgemm's "
              "rate or their weights at the read rate, whichever is slower, greedy's int8 "
              "shortlist of the output projection at the read rate, then attention's keys "
              f"and values ({'float16' if args.kv_type == 'float16' else 'float32'}) "
              "at the read rate; % of sgemm): " + ", ".join(ceilings))
    ints = [f"batch {r['batch']} threads {r['threads']}: "
            f"{100 * r['tfmc'] * fpt / 1e9 / tile_peak[r['threads']]:.0f}%"
            for r in rows if r["ct"] == "int8" and r["threads"] in tile_peak]
    if ints:
        print("tfmc int8 against the AMX tile rate (one thread's on registers alone, "
              "times the threads): " + ", ".join(ints))

    # The table's "% sgemm" and bound divide a row's median by the probe
    # taken at the start, minutes before or after most of the row's runs;
    # on a host whose speed drifts that much from minute to minute (the
    # same build read 84% and 71% an hour apart, 2026-12-05), each run is
    # set against a probe taken right after it instead, and the median of
    # those ratios given.
    if beside_probe:
        against = []
        for (b, t, ct), series in sorted(beside_probe.items()):
            shares = sorted(tps * fpt / 1e9 / pr["sgemm_gflops"] for tps, _, pr in series)
            text = f"batch {b} threads {t} {ct}: {100 * shares[len(shares) // 2]:.0f}% of sgemm"
            if b == 1:
                wb = weight_bytes_per_step(arch, tgt_vocab, ct, bool(tile_peak))
                bounds = sorted(ms / (1000 * wb / (pr["read_gbs"] * 1e9)) for _, ms, pr in series)
                text += f", step {bounds[len(bounds) // 2]:.2f}x the bound"
            against.append(text)
        print(f"\ntfmc against the machine, paired (each run against a probe "
              f"right after it; median of {max(1, args.repeats)} repeats' ratios): "
              + "; ".join(against))

    shapes_tool = os.path.join(ROOT, "build", "bin", "tfmc-bench-linear")
    if not args.skip_shapes and os.path.exists(shapes_tool):
        print("\nlinear kernels per base-model shape, 1 thread, weights streamed from memory "
              "(what the runtime's library entry points run for M rows, from 1 row where "
              "the packed kernels run, else from 8; `tfmc compile --library-min-rows`):\n")
        print(run([shapes_tool, "--rows", args.batches])[0])

    model = os.path.join(model_dir, "model.json")
    if args.beam_batches:
        batches = [int(x) for x in args.beam_batches.split(",")]
        beams = beam_rows(tfmc, model, args.work, src, args.beam, batches, args.steps)
        greedy_best = max(r["rows_per_s"] for r in beams if r["beam"] == 1)
        print(f"\nbeam search, {args.steps} tokens (eos barred), 1 thread: hypothesis rows "
              f"decoded per second (beam K at batch B decodes K x B rows a step)\n")
        print("| batch | beam | hypothesis rows/s | vs best greedy | decode s | peak RSS MB |")
        print("|---|---|---|---|---|---|")
        for r in beams:
            print(f"| {r['batch']} | {r['beam']} | {r['rows_per_s']:.1f} | "
                  f"{r['rows_per_s'] / greedy_best:.2f} | {r['decode']:.2f} | {r['rss']:.0f} |")
    if not args.skip_sorted:
        lines, t = sorted_rows(tfmc, model, args.work, vocab)
        print(f"\n{lines} lines of 1-63 ids, greedy (eos allowed, --max-length 64), batch 32, "
              f"median of 3: input order {t['false']:.2f} s, length-sorted {t['true']:.2f} s "
              f"({t['false'] / t['true']:.2f}x)")


if __name__ == "__main__":
    main()
