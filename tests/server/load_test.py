"""`tfmc serve` under load on loopback, run by ctest:

    /usr/bin/python3 tests/server/load_test.py --tfmc build/bin/tfmc

16 concurrent clients x 25 requests of 1-4 sentences each; every answer
must equal `tfmc translate`'s translation of the same sentences. Prints
throughput and p50/p99 latency. Then the error answers: 400 (malformed
JSON, bad fields), 413 (too many sentences, too large a body, also sent
chunked; more sentences than the queue holds), 503 (a full queue), the
warnings list (no hypothesis, NaN scores), /health behind a dozen idle
connections, and a clean exit on SIGTERM. Last, the compiled-model cache:
what `tfmc serve --cache-only` stores is what serve loads, and serve's
--kv-type float16 is an entry of its own. Traffic
goes to 127.0.0.1 only; every loop is bounded.
"""

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from overflowing import write_overflowing  # noqa: E402
from with_decoding import write_with_decoding  # noqa: E402
MODEL = os.path.join(ROOT, "examples", "zh-en", "model.json")
FIXTURE = os.path.join(ROOT, "tests", "e2e", "fixtures", "pre-relu-scale")
SENTENCES = os.path.join(ROOT, "tests", "lit", "tfmc", "Inputs", "zh-en", "sentences.zh")


def start(tfmc, *extra, model=MODEL):
    proc = subprocess.Popen([tfmc, "serve", model, "--port", "0", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"on http://127\.0\.0\.1:(\d+)", line or "")
        if m:
            proc.serving_line = line
            return proc, int(m.group(1))
        if proc.poll() is not None:
            sys.exit(f"load_test: tfmc serve exited: {line}{proc.stderr.read()}")
    sys.exit("load_test: tfmc serve did not start within 120 s")


def post(port, body, raw=None, timeout=60, content_type="application/json"):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=data,
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def read_until_closed(s, timeout):
    """What a raw socket receives until the server closes it (or `timeout`
    seconds pass without a byte); closes it."""
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return got


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit("load_test: tfmc serve did not stop on SIGTERM")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=25)
    args = p.parse_args()

    sentences = open(SENTENCES, encoding="utf-8").read().split("\n")[:-1]
    cli = subprocess.run([args.tfmc, "translate", MODEL, "--max-length", "128", "-i", SENTENCES],
                         capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    expected = dict(zip(sentences, cli))

    proc, port = start(args.tfmc, "--max-batch", "32")
    # The line names what the server computes with.
    assert re.search(r":\d+ \(float32 weights, float32 keys/values, "
                     r"(library kernels|compiled loops), \d+ threads?\)$", proc.serving_line), proc.serving_line
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
        assert json.loads(r.read()) == {"status": "ok"}

    failures, latencies = [], []
    lock = threading.Lock()

    def client(c):
        rng = random.Random(c)
        for _ in range(args.requests):
            batch = [rng.choice(sentences) for _ in range(rng.randint(1, 4))]
            t0 = time.perf_counter()
            status, body = post(port, {"text": batch, "max_length": 128})
            dt = time.perf_counter() - t0
            with lock:
                latencies.append(dt)
                if status != 200 or body.get("translations") != [expected[s] for s in batch]:
                    failures.append((status, batch, body))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    wall = time.perf_counter() - t0
    n = args.clients * args.requests
    latencies.sort()
    print(f"load_test: {n} requests from {args.clients} clients in {wall:.2f} s: "
          f"{n / wall:.1f} requests/s, p50 {1000 * latencies[len(latencies) // 2]:.0f} ms, "
          f"p99 {1000 * latencies[int(len(latencies) * 0.99) - 1]:.0f} ms")
    if failures or len(latencies) != n:
        sys.exit(f"load_test: {len(failures)} wrong answers, e.g. {failures[:2]}")

    # Error answers.
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/translate", timeout=30)
        assert False, "GET /v1/translate answered 200"
    except urllib.error.HTTPError as e:
        assert e.code == 405 and e.headers["Allow"] == "POST", (e.code, e.headers)
        assert "takes POST" in json.loads(e.read())["error"]
    assert post(port, None, raw=b'{"text": [')[0] == 400
    assert post(port, None, raw=b'[1, 2]')[0] == 400
    status, body = post(port, {"text": "one string"})
    assert status == 400 and "text" in body["error"], body
    status, body = post(port, {"text": ["a"], "beam_size": 0})
    assert status == 400 and "beam_size" in body["error"], body
    for field, value in [("min_length", -1), ("length_penalty", -0.5),
                         ("max_length_factor", -1), ("max_length_offset", -3),
                         ("no_repeat_ngram_size", -1), ("repetition_penalty", 0)]:
        status, body = post(port, {"text": ["a"], field: value})
        assert status == 400 and f"field '{field}'" in body["error"], (field, status, body)
    status, body = post(port, {"text": ["a"], "min_length": 10, "max_length": 5})
    assert status == 400 and "field 'min_length'" in body["error"], (status, body)
    status, body = post(port, {"text": ["a"], "min_length": 1000, "max_length": 1024})
    assert status == 400 and "the model's max_len" in body["error"], (status, body)
    status, body = post(port, {"text": ["a"], "bogus": 1})
    assert status == 400 and "bogus" in body["error"], body
    status, body = post(port, {"text": ["谢谢。"] * 300})
    assert status == 413 and "too many sentences" in body["error"], body
    # Split into sentences, one text of 300 counts as 300.
    status, body = post(port, {"text": ["谢谢。" * 300], "split_sentences": "on"})
    assert status == 413 and "300 once the texts are split" in body["error"], body
    status, body = post(port, {"text": ["谢谢。" * 3], "split_sentences": "on"})
    assert status == 200 and len(body["translations"]) == 1, body
    status, body = post(port, None, raw=json.dumps({"text": ["x" * (2 << 20)]}).encode())
    assert status == 413, (status, body)
    status, body = post(port, None, raw=b'{"text": ["a"], "text": ["b", "c"]}')
    assert status == 400 and "'text' given twice" in body["error"], (status, body)
    status, body = post(port, None, raw=b'{"text": ["\xff"]}')
    assert status == 400 and "not valid JSON" in body["error"], (status, body)
    # A body sent as a form (what `curl -d` and urllib send by default) is
    # read up to --max-request-bytes like any other, not cut at 8 KiB.
    form = json.dumps({"text": ["谢谢你的帮助" * 10] * 100}).encode()
    assert len(form) > 8192
    status, body = post(port, None, raw=form,
                        content_type="application/x-www-form-urlencoded")
    assert status == 200 and len(body["translations"]) == 100, (status, body)
    status, body = post(port, {"text": ["谢谢。", "", "我们明天去公园吧。"], "beam_size": 2, "n_best": 2})
    assert status == 200 and len(body["translations"]) == 3 and body["translations"][1] == [], body
    assert stop(proc) == 0

    # A model file with "decoding" defaults: requests without beam_size /
    # length_penalty are decoded as the file says, either field overrides.
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model.json")
        write_with_decoding(MODEL, model, {"beam_size": 3, "length_penalty": 0.5})
        beam = subprocess.run([args.tfmc, "translate", MODEL, "--beam-size", "3", "--length-penalty",
                               "0.5", "--n-best", "2", "-i", SENTENCES],
                              capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
        proc, port = start(args.tfmc, model=model)
        status, body = post(port, {"text": sentences, "n_best": 2})
        assert status == 200, body
        got = [f"{i} ||| {h['text']} ||| {h['score']:.6f}"
               for i, hyps in enumerate(body["translations"]) for h in hyps]
        assert got == beam, (got[:3], beam[:3])
        greedy = subprocess.run([args.tfmc, "translate", MODEL, "--beam-size", "1",
                                 "--max-length", "128", "-i", SENTENCES],
                                capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
        status, body = post(port, {"text": sentences, "beam_size": 1, "length_penalty": 1.0})
        assert status == 200 and body["translations"] == greedy, body
        assert stop(proc) == 0

    # Warnings: a beam left without a hypothesis (41 target tokens, none
    # repeatable, eos banned for 60), and NaN scores (said once for a line
    # split into three sentences).
    proc, port = start(args.tfmc, model=os.path.join(FIXTURE, "model.json"))
    status, body = post(port, {"text": ["ab", "", "cd"], "beam_size": 2, "no_repeat_ngram_size": 1,
                               "min_length": 60, "max_length": 64, "max_length_factor": 0})
    assert status == 200 and body["translations"] == ["", "", ""], body
    assert [(w["index"], w["warning"][:14]) for w in body["warnings"]] == \
        [(0, "no translation"), (2, "no translation")], body
    status, body = post(port, {"text": ["ab", "cd"]})
    assert status == 200 and "warnings" not in body, body
    assert stop(proc) == 0
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start(args.tfmc, model=write_overflowing(FIXTURE, tmp))
        status, body = post(port, {"text": ["ab。cd。ef。", "gh"], "beam_size": 2,
                                   "split_sentences": "on"})
        assert status == 200 and len(body["translations"]) == 2, body
        assert [w["index"] for w in body["warnings"]] == [0, 1], body
        for w in body["warnings"]:
            assert w["warning"].startswith("the model's outputs are not numbers"), body
            assert w["warning"].count("not numbers") == 1, body
        assert stop(proc) == 0

    # A queue that holds nothing is refused at start; a request larger than
    # the queue can ever hold is a 413, not a 503 to retry forever; a full
    # queue (one long request being translated, one waiting) answers 503.
    refused = subprocess.run([args.tfmc, "serve", MODEL, "--port", "0", "--max-queue", "0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and refused.stderr.startswith("error: ") \
        and "--max-queue" in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    # The batcher waits the whole window for a second sentence that the
    # queue of one can never hold: the first request stays queued for 5 s,
    # and one sent meanwhile finds the queue full, whatever the host's speed.
    proc, port = start(args.tfmc, "--max-queue", "1", "--max-batch", "2", "--batch-window-ms", "5000")
    status, body = post(port, {"text": ["谢谢。", "谢谢。"]})
    assert status == 413 and "--max-queue" in body["error"], (status, body)
    answers = []
    queued = threading.Thread(target=lambda: answers.append(post(port, {"text": ["谢谢。"]}, timeout=60)))
    queued.start()
    time.sleep(1)
    status, body = post(port, {"text": ["谢谢。"]})
    assert status == 503 and "queue is full" in body["error"], (status, body)
    queued.join(timeout=60)
    assert [a[0] for a in answers] == [200], answers
    assert stop(proc) == 0

    # A chunked body (no Content-Length) is held to --max-request-bytes too.
    proc, port = start(args.tfmc, "--max-request-bytes", "65536")
    def chunked(total):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        piece = b"a" * 4096
        chunks = [b'{"text": ["'] + [piece] * (total // len(piece)) + [b'"]}']
        conn.request("POST", "/v1/translate", body=iter(chunks), encode_chunked=True,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        out = r.status, json.loads(r.read())
        conn.close()
        return out
    status, body = chunked(2 << 20)
    assert status == 413 and "too large" in body["error"], (status, body)
    status, body = chunked(8192)
    assert status == 200 and len(body["translations"]) == 1, (status, body)
    # Refused bodies are read to their end: a request hidden in the part
    # past the limit (or in a refused multipart form) is never answered.
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    for head, body_bytes in [
            (b"Transfer-Encoding: chunked\r\nContent-Type: application/json",
             b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [b"a" * 70000, smuggled, b"b" * 100]) + b"0\r\n\r\n"),
            (b"Content-Type: multipart/form-data; boundary=XX",
             b'--XX\r\nContent-Disposition: form-data; name="a"\r\n\r\n' + smuggled + b"\r\n--XX--\r\n")]:
        if b"multipart" in head:
            head += b"\r\nContent-Length: %d" % len(body_bytes)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n\r\n" + body_bytes)
        time.sleep(1)
        got = read_until_closed(s, 2)
        assert got.count(b"HTTP/1.1 ") == 1 and (b" 413 " in got or b" 415 " in got), got[:300]
        assert b'"status":"ok"' not in got, got[:300]

    # A body whose length is ambiguous (two Content-Lengths, or one beside
    # Transfer-Encoding) is refused and its connection ended: the request
    # behind it (as a proxy taking the other length would send it) is never
    # read. httplib took the first length and answered both (2026-12-07).
    inner = b'{"text": ["zzz"]}'
    hidden = (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(inner) + inner)
    for lengths in [b"Content-Length: 0\r\nContent-Length: %d" % len(hidden),
                    b"Content-Length: 3\r\nContent-Length: %d" % (len(hidden) + 3),
                    b"Content-Length: %d\r\nTransfer-Encoding: chunked" % len(hidden),
                    b"Content-Length: 0, %d" % len(hidden),
                    b"Content-Length : %d\r\nContent-Length: 0" % len(hidden),
                    b"Content-Length: 0\r\nTransfer-Encoding : chunked",
                    b"Transfer-Encoding: gzip"]:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + lengths + b"\r\n\r\n")
        time.sleep(0.2)
        try:
            s.sendall((b"[1]" if b"Length: 3" in lengths else b"") + hidden)
        except OSError:
            pass  # the server may have closed already
        got = read_until_closed(s, 3)
        assert got.count(b"HTTP/1.1 ") == 1 and b" 400 " in got, (lengths, got[:400])
        assert b"zzz" not in got and b" 200 " not in got, (lengths, got[:400])
        assert got.count(b"Connection:") == 1 and b"Keep-Alive" not in got, (lengths, got[:400])
    # OPTIONS is told the endpoint takes POST (405), as GET, PUT, ... are.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("OPTIONS", "/v1/translate")
    r = conn.getresponse()
    assert r.status == 405 and r.getheader("Allow") == "POST", (r.status, r.read())
    r.read()
    for method in ("OPTIONS", "POST", "DELETE"):
        conn.request(method, "/health")
        r = conn.getresponse()
        assert r.status == 405 and r.getheader("Allow") == "GET", (method, r.status, r.read())
        r.read()
    # A kept-alive connection still serves request after request.
    conn.request("POST", "/v1/translate", body=json.dumps({"text": ["谢谢。"]}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, r.read()
    r.read()
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200
    conn.close()

    # Idle connections (open, their request headers unfinished) hold a
    # thread each: a dozen of them must not stall /health (httplib's own
    # pool of 8 threads did, for seconds).
    idle = []
    for _ in range(12):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        c.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        idle.append(c)
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
        assert json.loads(r.read()) == {"status": "ok"}
    waited = time.perf_counter() - t0
    assert waited < 2, f"/health took {waited:.1f} s behind 12 idle connections"
    for c in idle:
        c.close()
    assert stop(proc) == 0
    print("load_test: error answers and shutdown ok")

    # tfmc-serve (which `tfmc serve` runs) keys its own entries (the file
    # holding its compiler is part of the key): `serve --cache-only` fills
    # what serve loads (for a container image, say).
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([args.tfmc, "serve", MODEL, "--cache-only", "--cache-dir", cache],
                             check=True, capture_output=True, text=True).stdout
        assert out.startswith("cached: " + cache), out
        entries = lambda: sorted(f for f in os.listdir(cache) if f.endswith(".tfmo"))  # noqa: E731
        filled = entries()
        assert len(filled) == 1, filled
        proc, port = start(args.tfmc, "--cache-dir", cache)
        assert stop(proc) == 0
        assert entries() == filled, ("serve compiled again", entries())
        proc, port = start(args.tfmc, "--cache-dir", cache, "--kv-type", "float16")
        assert "float32 weights, float16 keys/values" in proc.serving_line, proc.serving_line
        status, body = post(port, {"text": ["谢谢。"]})
        assert status == 200 and len(body["translations"]) == 1, (status, body)
        assert stop(proc) == 0
        assert len(entries()) == 2, entries()
        # SIGTERM the moment serve says it listens (before httplib's loop
        # ran, stop() was lost once): it stops every time.
        for _ in range(5):
            proc, port = start(args.tfmc, "--cache-dir", cache)
            assert stop(proc) == 0
    print("load_test: serve --cache-only fills what serve loads ok")

    # A stop ends the batch window: a request waiting in a 10 s window is
    # answered at once and the server exits (it waited out the window, and
    # an unbounded --batch-window-ms let requests hang for days).
    proc, port = start(args.tfmc, "--batch-window-ms", "10000")
    answer = {}
    waiting = threading.Thread(target=lambda: answer.update(
        zip(("status", "body"), post(port, {"text": ["谢谢。"]}))))
    waiting.start()
    time.sleep(1.0)
    began = time.time()
    assert stop(proc) == 0
    waiting.join(timeout=30)
    took = time.time() - began
    assert answer.get("status") == 200 and len(answer["body"]["translations"]) == 1, answer
    assert took < 5, f"serve took {took:.1f} s to stop with a request in its batch window"
    refused = subprocess.run([args.tfmc, "serve", MODEL, "--batch-window-ms", "10001"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and refused.stderr.startswith(
        "error: --batch-window-ms must be between 0 and 10000"), refused.stderr
    print(f"load_test: a stop answers the batch window at once ok ({took:.2f} s)")


if __name__ == "__main__":
    main()
