"""Writes a copy of a model.json with its paths made absolute and a
"decoding" object added: with-decoding.py MODEL.json OUT.json '{"beam_size": 4}'"""
import json
import os
import sys

src, out, decoding = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
with open(src, encoding="utf-8") as f:
    model = json.load(f)
base = os.path.dirname(os.path.abspath(src))
for side in ("source", "target"):
    for key in ("vocab", "model"):
        if key in model.get(side, {}):
            model[side][key] = os.path.join(base, model[side][key])
model["weights"] = os.path.join(base, model["weights"])
model["decoding"] = decoding
with open(out, "w", encoding="utf-8") as f:
    json.dump(model, f, ensure_ascii=False, indent=1)
