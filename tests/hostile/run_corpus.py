#!/usr/bin/python3
"""Generate the hostile-input corpus and check tfmc / tfm-opt against it.

    run_corpus.py --tfmc build/bin/tfmc --tfm-opt build/bin/tfm-opt
                  [--keep DIR] [-k PATTERN]... [--jobs N] [--timeout S] [-v]

Prints one line per failing case and, last, `N passed, M failed`; exits 1
when a case failed. Cases marked xfail in cases.py that fail are counted
apart (known bugs); one that passes is reported as a failure (XPASS) so
that its marker gets removed. See docs/hostile-input.md.
"""

import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402

CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:", "terminate called",
                 "AddressSanitizer", "Segmentation fault", "Assertion `",
                 "LLVM ERROR:", "UNREACHABLE executed")
INPUT_ERROR = re.compile(rb"^error: input line (\d+)\b")
INPUT_WARNING = re.compile(rb"^warning: input line (\d+)\b")
NBEST_INDEX = re.compile(rb"^(\d+) \|\|\| ")


class Result:
    def __init__(self, case):
        self.case = case
        self.rc = None
        self.stdout = b""
        self.stderr = b""
        self.timed_out = False
        self.seconds = 0.0
        self.problems = []
        self.setup_problem = None


def tool(path):
    p = Path(path)
    if not p.is_absolute() and not p.exists() and (REPO / p).exists():
        p = REPO / p
    p = p.resolve()
    if not p.exists():
        raise SystemExit(f"run_corpus: {path}: no such file")
    return str(p)


def run(argv, cwd, stdin_path, timeout, env):
    """Run argv in its own process group; returns (rc, out, err, timed_out, s)."""
    start = time.monotonic()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            timed_out = True
    finally:
        if stdin_path:
            stdin.close()
    return proc.returncode, out, err, timed_out, time.monotonic() - start


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def lines_of(data):
    """'\n'-terminated lines; a final unterminated piece counts as a line."""
    if not data:
        return []
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return parts


def stderr_lines(err):
    return [l.rstrip(b"\r") for l in lines_of(err)]


def short(b, n=160):
    s = b.decode("utf-8", "backslashreplace")
    return s if len(s) <= n else s[:n] + "..."


def check(expect, r, argv, results, problems):
    """Append a description of every broken expectation to `problems`."""
    rc = r.rc
    out, err = r.stdout, r.stderr
    elines = stderr_lines(err)
    errors = [l for l in elines if l.startswith(b"error:")]

    want = expect.get("exit")
    if want == 0 and rc != 0:
        problems.append(f"exit status {rc}, expected 0")
    elif want == "nonzero" and rc == 0:
        problems.append("exit status 0, expected non-zero")

    if expect.get("one_error"):
        if len(errors) != 1:
            problems.append(f"{len(errors)} stderr lines start with 'error:', expected exactly 1")
        others = [l for l in elines if l and not l.startswith((b"error:", b"warning:"))]
        if others:
            problems.append(f"stderr has {len(others)} line(s) that are neither error: nor "
                            f"warning:, first: {short(others[0])!r}")
    subs = expect.get("error_has", [])
    if subs:
        if not errors:
            problems.append(f"no 'error:' line (wanted one naming {subs})")
        else:
            missing = [s for s in subs if s.encode() not in errors[0]]
            if missing:
                problems.append(f"error line lacks {missing}: {short(errors[0], 300)!r}")
    for s in expect.get("stderr_has", []):
        if s.encode() not in err:
            problems.append(f"stderr lacks {s!r}")
    for s in expect.get("stderr_lacks", []):
        if s.encode() in err:
            problems.append(f"stderr contains {s!r}")

    olines = lines_of(out)
    if "stdout_lines" in expect:
        n = expect["stdout_lines"]
        if len(olines) != n:
            problems.append(f"{len(olines)} stdout lines, expected {n}")
        elif out and not out.endswith(b"\n"):
            problems.append("the last stdout line has no line end")
    for i in expect.get("empty_lines", []):
        if i <= len(olines) and olines[i - 1] != b"":
            problems.append(f"stdout line {i} should be empty, is {short(olines[i - 1], 60)!r}")
    for i in expect.get("nonempty_lines", []):
        if i <= len(olines) and olines[i - 1] == b"":
            problems.append(f"stdout line {i} should not be empty")
    for s in expect.get("stdout_has", []):
        if s.encode() not in out:
            problems.append(f"stdout lacks {s!r}")
    for s in expect.get("stdout_lacks", []):
        if s.encode() in out:
            problems.append(f"stdout contains {s!r}")

    input_errors, input_warnings, unreadable = [], [], []
    for l in elines:
        m = INPUT_ERROR.match(l)
        if m:
            input_errors.append(int(m.group(1)))
        m = INPUT_WARNING.match(l)
        if m:
            input_warnings.append(int(m.group(1)))
            if b"invalid UTF-8" in l:
                unreadable.append(int(m.group(1)))
    if "input_errors" in expect and len(input_errors) != expect["input_errors"]:
        problems.append(f"{len(input_errors)} 'error: input line N' lines, "
                        f"expected {expect['input_errors']}")
    if "input_warnings" in expect and len(input_warnings) != expect["input_warnings"]:
        problems.append(f"{len(input_warnings)} 'warning: input line N' lines, "
                        f"expected {expect['input_warnings']}")
    nbest = any(a in ("--n-best", "--scores") or a.startswith(("--n-best=", "--scores="))
                for a in argv)
    indices = sorted({int(m.group(1)) for m in map(NBEST_INDEX.match, olines) if m})
    if "nbest_indices" in expect and indices != expect["nbest_indices"]:
        problems.append(f"output line indices {indices}, expected {expect['nbest_indices']}")
    if expect.get("consistent") and rc is not None and 0 <= rc < 128:
        for n in sorted(set(input_errors) | set(unreadable)):
            what = "an error" if n in input_errors else "unreadable text"
            if nbest:
                if n - 1 in indices:
                    problems.append(f"input line {n} has {what} but output lines with index {n - 1}")
            elif n > len(olines):
                problems.append(f"input line {n} has {what} but no output line")
            elif olines[n - 1] != b"":
                problems.append(f"input line {n} has {what} but output line {n} is not empty")
        strict = "--strict" in argv
        if input_errors:
            want_rc, why = 1, "'error: input line N' lines"
        elif strict and input_warnings:
            want_rc, why = 1, "--strict and 'warning: input line N' lines"
        else:
            want_rc, why = 0, ("no 'error: input line N'" +
                               (" and no input warning with --strict" if strict else ""))
        if rc != want_rc:
            problems.append(f"exit status {rc} with {why}, expected {want_rc}")

    ref = expect.get("same_stdout_as")
    if ref:
        other = results.get(ref)
        if other is None or other.rc is None:
            problems.append(f"reference case {ref} did not run")
        elif other.stdout != out:
            problems.append(f"stdout differs from case {ref}'s")

    if rc not in (None,) and rc != 0 and "if_error" in expect:
        check(expect["if_error"], r, argv, results, problems)
    if rc == 0 and "if_ok" in expect:
        check(expect["if_ok"], r, argv, results, problems)


def evaluate(r, results, subst):
    c = r.case
    if r.setup_problem:
        return [r.setup_problem]
    problems = []
    if r.timed_out:
        return [f"timeout after {r.seconds:.0f} s (a hang)"]
    if r.rc < 0:
        problems.append(f"killed by {signal_name(r.rc)} (a crash)")
    elif r.rc >= 128:
        problems.append(f"exit status {r.rc} (>= 128: a crash)")
    for m in CRASH_MARKERS:
        if m.encode() in r.stderr:
            problems.append(f"crash report on stderr ({m!r})")
            break
    if problems:
        return problems
    argv = [subst(a) for a in c["argv"]]
    if c["argv"][0] == "{tfmc}" and r.rc != 0:
        elines = stderr_lines(r.stderr)
        # The one documented exception: --strict turns input warnings into
        # exit status 1 at the end, without an error line.
        strict_only = "--strict" in argv and any(INPUT_WARNING.match(l) for l in elines)
        if not strict_only and not any(l.startswith(b"error:") for l in elines):
            problems.append(f"exit status {r.rc} but no stderr line starts with 'error:'")
    check(c["expect"], r, argv, results, problems)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tfmc", required=True)
    ap.add_argument("--tfm-opt", required=True)
    ap.add_argument("--keep", metavar="DIR",
                    help="write the corpus, each case's stdout/stderr and the cache into DIR "
                         "and keep them (default: a temporary directory, removed)")
    ap.add_argument("-k", action="append", default=[], metavar="PATTERN",
                    help="only cases whose name contains PATTERN or matches it as a glob")
    ap.add_argument("--jobs", "-j", type=int, default=min(4, os.cpu_count() or 2))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per command (default 60)")
    ap.add_argument("--memory-limit-gib", type=float, default=4.0,
                    help="address-space limit for every command (default 4 GiB; 0: none)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also list passing and expected-failing cases with their times")
    args = ap.parse_args()

    tfmc, tfm_opt = tool(args.tfmc), tool(args.tfm_opt)
    started = time.monotonic()
    if args.keep:
        root = Path(args.keep).resolve()
        if root.exists() and any(root.iterdir()):
            # Only ever replace an earlier corpus, never an arbitrary directory.
            if not (root / "manifest.json").is_file():
                raise SystemExit(f"run_corpus: --keep {root}: not empty and not a corpus "
                                 "(no manifest.json); choose another directory")
            shutil.rmtree(root)
        cleanup = False
    else:
        root = Path(tempfile.mkdtemp(prefix="tfmc-hostile-"))
        cleanup = True
    try:
        return run_all(args, root, tfmc, tfm_opt, started)
    finally:
        if cleanup:
            shutil.rmtree(root, ignore_errors=True)


def run_all(args, root, tfmc, tfm_opt, started):
    corpus, manifest = make_corpus.build(root, args.k)
    cache = corpus / "_cache"
    cache.mkdir(exist_ok=True)
    env = dict(os.environ)
    env["TFMC_CACHE_DIR"] = str(cache)
    env["XDG_CACHE_HOME"] = str(corpus / "_xdg")
    env.pop("TFMC_THREADS", None)

    # Children inherit these: no core files, and a runaway allocation fails
    # (a crash, reported) instead of swapping the machine.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Sanitizer builds (scripts/test.sh --sanitize sets their options)
    # reserve terabytes of address space for shadow memory: no limit there.
    sanitized = any(os.environ.get(v) for v in ("ASAN_OPTIONS", "TSAN_OPTIONS"))
    if args.memory_limit_gib > 0 and not sanitized:
        limit = int(args.memory_limit_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # They also run the code several times slower: a case that takes 20 s
    # (a 256 KB line of ~10,000 sentences) would pass for a hang at 60 s.
    if sanitized:
        args.timeout *= 4

    def subst_for(case_dir):
        values = {"{tfmc}": tfmc, "{tfm_opt}": tfm_opt, "{python}": sys.executable,
                  "{cache}": str(cache), "{corpus}": str(corpus), "{case}": str(case_dir)}

        def subst(a):
            for k, v in values.items():
                a = a.replace(k, v)
            return a
        return subst

    def one(c):
        r = Result(c)
        d = corpus / c["name"]
        subst = subst_for(d)
        for pre in c.get("pre", []):
            rc, out, err, to, _ = run([subst(a) for a in pre], d, None, args.timeout, env)
            if rc != 0 or to:
                r.setup_problem = (f"setup command {' '.join(pre)} failed "
                                   f"(exit {rc}{', timeout' if to else ''}): {short(err)}")
                return r
        stdin = d / c["stdin"] if c.get("stdin") else None
        r.rc, r.stdout, r.stderr, r.timed_out, r.seconds = run(
            [subst(a) for a in c["argv"]], d, stdin, args.timeout, env)
        if args.keep:
            (d / "_stdout").write_bytes(r.stdout)
            (d / "_stderr").write_bytes(r.stderr)
            (d / "_exit").write_text(f"{r.rc}{' (timeout)' if r.timed_out else ''}\n")
        return r

    # Reference cases (same_stdout_as targets) are ordinary cases; all are
    # compared once everything has run.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = {r.case["name"]: r for r in pool.map(one, manifest)}

    passed = failed = xfailed = 0
    for c in manifest:
        r = results[c["name"]]
        problems = evaluate(r, results, subst_for(corpus / c["name"]))
        detail = ""
        if problems and r.stderr:
            detail = f" [stderr: {short(stderr_lines(r.stderr)[0] if stderr_lines(r.stderr) else b'')}]"
        if c.get("xfail"):
            if problems:
                xfailed += 1
                if args.verbose:
                    print(f"xfail {c['name']}: {'; '.join(problems)} (known: {c['xfail']})")
            else:
                failed += 1
                print(f"FAIL {c['name']}: XPASS: it passes now; remove its xfail marker "
                      f"in tests/hostile/cases.py")
        elif problems:
            failed += 1
            print(f"FAIL {c['name']}: {'; '.join(problems)}{detail}")
        else:
            passed += 1
            if args.verbose:
                print(f"ok   {c['name']} ({r.seconds:.2f} s)")
    elapsed = time.monotonic() - started
    print(f"{len(manifest)} cases in {elapsed:.1f} s; {xfailed} expected failures (xfail)"
          + (f"; corpus kept in {corpus}" if args.keep else ""))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
