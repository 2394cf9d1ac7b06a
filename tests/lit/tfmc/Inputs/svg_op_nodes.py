"""Parses an SVG written by `tfmc compile --emit=graph` and prints how many
of its nodes are tfm ops (Graphviz titles each node group with its id,
f<function>_op<index>); fails if the file is not well-formed SVG."""
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == SVG + "svg", root.tag
ops = 0
for g in root.iter(SVG + "g"):
    if g.get("class") == "node":
        title = g.find(SVG + "title")
        if title is not None and re.fullmatch(r"f\d+_op\d+", title.text or ""):
            ops += 1
print(ops)
