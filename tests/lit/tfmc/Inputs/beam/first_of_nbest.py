"""Checks a beam run that asked for the best hypothesis only against one
that asked for all K: the same best lines, and fewer decoder rows.

    first_of_nbest.py FULL FULL.stats BEST BEST.stats

FULL/BEST: `i ||| text ||| score` lines; *.stats: tfmc's stderr with the
`--stats` summary ("... for N decoder rows ...").
"""
import re
import sys


def rows(path):
    found = re.findall(r"for (\d+) decoder rows", open(path, encoding="utf-8").read())
    if len(found) != 1:
        sys.exit(f"{path}: expected one '--stats' summary, found {len(found)}")
    return int(found[0])


def first_per_input(path):
    first = {}
    for line in open(path, encoding="utf-8"):
        index = line.split(" ||| ", 1)[0]
        first.setdefault(index, line)
    return list(first.values())


full, full_stats, best, best_stats = sys.argv[1:]
want = first_per_input(full)
got = open(best, encoding="utf-8").readlines()
if got != want:
    sys.exit(f"the best hypotheses differ:\n{''.join(want)}\nvs\n{''.join(got)}")
if not rows(best_stats) < rows(full_stats):
    sys.exit(f"no row stopped early: {rows(best_stats)} vs {rows(full_stats)} decoder rows")
print(f"{len(got)} lines identical; decoder rows {rows(best_stats)} < {rows(full_stats)}")
