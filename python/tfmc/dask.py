"""Translate a corpus on a Dask cluster.

    python3 -m tfmc.dask MODEL.json INPUT OUTPUT --scheduler tcp://HOST:8786
        [--partition-lines 256] [--beam-size K] [--max-length N] [--retries 2]
        [--compute-type float32|float16|bfloat16|int8] [--kv-type auto|float32|float16]

The input is split into partitions of consecutive lines. Each worker loads
the model once (a worker plugin: compiled code comes from the compiled-model
cache), translates whole partitions, and the client writes the partitions'
results in input order. A partition is a pure function of its lines, so a
retried or re-run partition gives the same lines: the output never has a
line twice or misses one. Without --scheduler a local cluster of
--workers processes is started (for trying it out).
"""

import argparse
import math
import os
import sys

from distributed import Client, LocalCluster, WorkerPlugin, get_worker


COMPUTE_TYPES = ("", "float32", "float16", "bfloat16", "int8")
KV_TYPES = ("auto", "float32", "float16")


class TranslatorPlugin(WorkerPlugin):
    """Loads one tfmc.Translator per worker process."""

    name = "tfmc-translator"

    def __init__(self, model, threads=1, cache_dir="", compute_type="", kv_type="auto"):
        self.model = model
        self.threads = threads
        self.cache_dir = cache_dir
        self.compute_type = compute_type
        self.kv_type = kv_type

    def setup(self, worker):
        import tfmc
        worker.tfmc_translator = tfmc.Translator(self.model, threads=self.threads,
                                                 cache_dir=self.cache_dir,
                                                 compute_type=self.compute_type,
                                                 kv_type=self.kv_type)


def translate_partition(index, lines, options):
    """(index, translations) of one partition, on a worker."""
    translator = get_worker().tfmc_translator
    return index, translator.translate(lines, errors="ignore", **options)


def partitions(lines, size):
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def translate_corpus(client, model, lines, options, partition_lines=256, retries=2,
                     threads=1, cache_dir="", task=translate_partition, compute_type="",
                     kv_type="auto"):
    """The translations of `lines` (a list of str), in order. `task` is the
    per-partition function (the tests pass a flaky one). compute_type and
    kv_type are tfmc.Translator's ("" / "auto": the model file's compute
    type, float16 keys/values unless it is float32); a name tfmc does not
    know is a ValueError here, before any worker loads the model."""
    if compute_type not in COMPUTE_TYPES:
        raise ValueError(f"compute_type: expected 'float32', 'float16', 'bfloat16' or "
                         f"'int8', got '{compute_type}'")
    if kv_type not in KV_TYPES:
        raise ValueError(f"kv_type: expected 'auto', 'float32' or 'float16', got '{kv_type}'")
    client.register_worker_plugin(TranslatorPlugin(model, threads, cache_dir, compute_type,
                                                   kv_type),
                                  name=TranslatorPlugin.name)
    parts = partitions(lines, partition_lines)
    futures = [client.submit(task, i, part, options, retries=retries,
                             key=f"tfmc-partition-{i}-{len(parts)}-{id(lines)}")
               for i, part in enumerate(parts)]
    results = [None] * len(parts)
    for index, translated in client.gather(futures):
        if results[index] is not None:
            raise RuntimeError(f"partition {index} returned twice")
        if len(translated) != len(parts[index]):
            raise RuntimeError(f"partition {index}: {len(translated)} lines for "
                               f"{len(parts[index])}")
        results[index] = translated
    return [line for part in results for line in part]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tfmc.dask",
                                description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--scheduler", help="address of a running Dask scheduler")
    p.add_argument("--workers", type=int, default=2,
                   help="without --scheduler: local worker processes")
    p.add_argument("--partition-lines", type=int, default=256)
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="compute threads per worker")
    p.add_argument("--cache-dir", default="")
    p.add_argument("--compute-type", default="", choices=COMPUTE_TYPES[1:],
                   help="the weights' storage (default: the model file's, else float32)")
    p.add_argument("--kv-type", default="auto", choices=KV_TYPES,
                   help="the attention keys'/values' storage (auto: float16 unless the "
                        "compute type is float32)")
    p.add_argument("--beam-size", type=int, default=None,
                   help="default: the model file's decoding.beam_size, else 1")
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--max-length-factor", type=float, default=3.0)
    p.add_argument("--max-length-offset", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args(argv)
    # Everything a worker would refuse is refused here, before a cluster
    # starts (a worker's refusal was a traceback, retried --retries times;
    # --workers 0 waited for a worker forever).
    checks = [
        (args.partition_lines >= 1, "--partition-lines must be at least 1"),
        (args.scheduler or args.workers >= 1, "--workers must be at least 1"),
        (args.retries >= 0, "--retries must not be negative"),
        (1 <= args.threads <= 256, "--threads must be between 1 and 256"),
        (args.beam_size is None or 1 <= args.beam_size <= 256,
         "--beam-size must be between 1 and 256"),
        (args.max_length >= 1, "--max-length must be at least 1"),
        (math.isfinite(args.max_length_factor) and args.max_length_factor >= 0,
         "--max-length-factor must be a finite number, not negative"),
        (args.max_length_offset >= 0, "--max-length-offset must not be negative"),
        (args.batch_size >= 1, "--batch-size must be at least 1"),
        # With --scheduler the workers open the model, which the client
        # need not have (a submit host without the cluster's mounts).
        (args.scheduler or os.path.isfile(args.model), f"{args.model}: no such model file"),
    ]
    for ok, message in checks:
        if not ok:
            p.error(message)
    model = os.path.abspath(args.model)
    try:
        with open(args.input, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            text = f.read()
    except OSError as e:
        p.error(f"{args.input}: {e.strerror}")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    options = dict(beam_size=args.beam_size, max_length=args.max_length,
                   max_length_factor=args.max_length_factor,
                   max_length_offset=args.max_length_offset, batch_size=args.batch_size)
    if args.scheduler:
        client = Client(args.scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        out = translate_corpus(client, model, [l.rstrip("\r") for l in lines], options,
                               args.partition_lines, args.retries, args.threads,
                               args.cache_dir, compute_type=args.compute_type,
                               kv_type=args.kv_type)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    with open(args.output, "w", encoding="utf-8") as f:
        for line in out:
            f.write(line + "\n")
    print(f"tfmc.dask: {len(out)} lines in {len(partitions(lines, args.partition_lines))} "
          f"partitions", file=sys.stderr)


if __name__ == "__main__":
    main()
