"""Checks a `tfmc profile --profile-format json` file against the fused
IR of the same model (`tfmc compile --emit=fused`) and its SVG bar chart:
one op row per tfm op of the functions that ran, every row's call count
that of its function, rows adding up to the translate time, the compiled
ops covering at least MIN_COVERAGE of it, and a well-formed SVG with one
bar per row (up to 40, plus one for the rest). Prints "ok"."""
import json
import re
import sys
import xml.etree.ElementTree as ET

profile_path, fused_path, svg_path, min_coverage = sys.argv[1:5]
p = json.load(open(profile_path))

# tfm ops per function of the fused stage.
ops = {}
function = None
for line in open(fused_path):
    m = re.match(r"\s*func\.func @(\w+)", line)
    if m:
        function = m.group(1)
        ops[function] = 0
        continue
    if function and re.search(r"(= |^\s+)tfm\.[a-z_]+ ", line):
        ops[function] += 1

calls = {f["name"]: f["calls"] for f in p["functions"]}
rows = {}
for r in p["rows"]:
    if r["category"] == "op":
        rows[r["function"]] = rows.get(r["function"], 0) + 1
        assert r["calls"] == calls[r["function"]], r
        assert r["seconds"] >= 0 and r["flop"] >= 0 and r["bytes"] > 0, r
for f in calls:
    assert rows.get(f, 0) == ops[f], (f, rows.get(f), ops[f])
total = sum(r["seconds"] for r in p["rows"])
wall = p["wall_seconds"]
assert abs(total - wall) <= 1e-3 * wall + 1e-6, (total, wall)
covered = sum(r["seconds"] for r in p["rows"] if r["category"] == "op") / wall
assert covered >= float(min_coverage), covered

SVG = "{http://www.w3.org/2000/svg}"
root = ET.parse(svg_path).getroot()
assert root.tag == SVG + "svg", root.tag
bars = [g for g in root.iter(SVG + "g") if g.get("class") == "bar"]
assert len(bars) == min(len(p["rows"]), 40) + (len(p["rows"]) > 40), len(bars)
print("ok")
