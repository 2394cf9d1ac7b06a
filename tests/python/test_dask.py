"""tfmc.dask on a LocalCluster of 2 worker processes: the output equals
`tfmc translate`'s byte for byte, also when partitions fail and are retried.
"""

import os
import subprocess
import tempfile

import cloudpickle
import pytest
from distributed import Client, LocalCluster

import tfmc.dask as tdask

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "examples", "zh-en", "model.json")
SENTENCES = os.path.join(ROOT, "tests", "lit", "tfmc", "Inputs", "zh-en", "sentences.zh")
TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
CACHE = os.environ.get("TFMC_CACHE_DIR", "")


def cli_translation(path, *options):
    return subprocess.run([TFMC, "translate", MODEL, "-i", path, *options], check=True,
                          capture_output=True).stdout


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_command_output_equals_cli(tmp_path):
    out = tmp_path / "out.en"
    tdask.main([MODEL, SENTENCES, str(out), "--workers", "2", "--partition-lines", "5",
                "--cache-dir", CACHE])
    assert out.read_bytes() == cli_translation(SENTENCES)


@pytest.mark.parametrize("option, message", [
    (["--workers", "0"], "--workers must be at least 1"),
    (["--retries", "-1"], "--retries must not be negative"),
    (["--beam-size", "0"], "--beam-size must be between 1 and 256"),
    (["--threads", "0"], "--threads must be between 1 and 256"),
    (["--max-length-factor", "nan"], "--max-length-factor must be a finite number"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
])
def test_bad_options_are_refused_before_a_cluster_starts(tmp_path, capsys, option, message):
    # --workers 0 waited for a worker forever; the others were each a
    # worker's traceback, retried --retries times.
    with pytest.raises(SystemExit) as e:
        tdask.main([MODEL, SENTENCES, str(tmp_path / "out.en")] + option)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_compute_and_kv_types_reach_the_workers(client):
    # int8 weights with float32 keys/values: the workers' scores are those
    # of a local Translator loaded the same way, and not float32's (the
    # texts of these sentences are the same in every compute type).
    import tfmc
    lines = open(SENTENCES, encoding="utf-8").read().split("\n")[:12]
    options = {"return_scores": True}
    got = tdask.translate_corpus(client, MODEL, lines, options, partition_lines=5,
                                 cache_dir=CACHE, compute_type="int8", kv_type="float32")
    want = tfmc.Translator(MODEL, compute_type="int8", kv_type="float32",
                           cache_dir=CACHE).translate(lines, errors="ignore", **options)
    plain = tfmc.Translator(MODEL, cache_dir=CACHE).translate(lines, errors="ignore",
                                                              **options)
    assert got == want
    assert [h[0][1] for h in want] != [h[0][1] for h in plain]


def test_unknown_types_are_refused_before_the_workers_load(client):
    with pytest.raises(ValueError, match="compute_type: expected"):
        tdask.translate_corpus(client, MODEL, ["谢谢。"], {}, compute_type="int4")
    with pytest.raises(ValueError, match="kv_type: expected"):
        tdask.translate_corpus(client, MODEL, ["谢谢。"], {}, kv_type="bfloat16")


# A task that fails the first attempt of every partition (marker files in a
# shared directory): retries must give each line exactly once.
def flaky_partition(index, lines, options, marker_dir):
    marker = os.path.join(marker_dir, f"{index}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError(f"partition {index}: injected failure")
    return tdask.translate_partition(index, lines, options)


def test_retried_partitions_neither_duplicate_nor_drop(client, tmp_path):
    cloudpickle.register_pickle_by_value(__import__(__name__))
    lines = open(SENTENCES, encoding="utf-8").read().split("\n")[:-1]
    markers = tmp_path / "markers"
    markers.mkdir()
    task = lambda i, part, options: flaky_partition(i, part, options, str(markers))  # noqa: E731
    out = tdask.translate_corpus(client, MODEL, lines, {}, partition_lines=7, retries=1,
                                 cache_dir=CACHE, task=task)
    assert len(os.listdir(markers)) == 6  # every partition failed once
    text = "".join(line + "\n" for line in out).encode()
    assert text == cli_translation(SENTENCES)


def test_without_retries_a_failure_is_reported(client, tmp_path):
    cloudpickle.register_pickle_by_value(__import__(__name__))
    lines = ["谢谢。"] * 3
    markers = tmp_path / "markers"
    markers.mkdir()
    task = lambda i, part, options: flaky_partition(i, part, options, str(markers))  # noqa: E731
    with pytest.raises(RuntimeError, match="injected failure"):
        tdask.translate_corpus(client, MODEL, lines, {}, partition_lines=2, retries=0,
                               cache_dir=CACHE, task=task)
