#!/usr/bin/python3
"""Write the hostile-input corpus (docs/hostile-input.md).

    make_corpus.py [OUT_DIR] [-k PATTERN]...

Writes one directory per case (OUT_DIR/<case>/) holding its files, plus
OUT_DIR/manifest.json listing every case's command (argv with placeholders)
and expected outcome. Deterministic: the same sources give the same bytes.
Without OUT_DIR a fresh temporary directory is used (its path is printed).
"""

import argparse
import fnmatch
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostile  # noqa: E402


def load_cases():
    import cases
    names = set()
    for c in cases.CASES:
        if c.name in names:
            raise SystemExit(f"make_corpus: duplicate case name {c.name}")
        names.add(c.name)
    return cases.CASES


def selected(name, patterns):
    if not patterns:
        return True
    return any(p in name or fnmatch.fnmatchcase(name, p) for p in patterns)


def build(out_dir, patterns=()):
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    all_cases = load_cases()
    chosen = [c for c in all_cases if selected(c.name, patterns)]
    # Cases compared with another one need that one too.
    wanted = {c.name for c in chosen}
    for c in list(chosen):
        ref = c.expect.get("same_stdout_as")
        if ref and ref not in wanted:
            wanted.add(ref)
    chosen = [c for c in all_cases if c.name in wanted]

    hostile.shared_files(out)
    manifest = []
    for c in chosen:
        d = out / c.name
        d.mkdir(parents=True, exist_ok=True)
        ctx = hostile.Ctx(d, out)
        for step in c.setup:
            step(ctx)
        manifest.append(c.manifest())
    (out / "manifest.json").write_text(json.dumps({"cases": manifest}, indent=1) + "\n")
    return out, manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", help="output directory (default: a new temp dir)")
    ap.add_argument("-k", action="append", default=[], metavar="PATTERN",
                    help="only cases whose name contains PATTERN (or matches it as a glob)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="tfmc-hostile-")
    out, manifest = build(out, args.k)
    print(f"{len(manifest)} cases written to {out}")


if __name__ == "__main__":
    main()
