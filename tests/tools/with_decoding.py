"""A copy of a model.json with its paths made absolute and a "decoding"
object added, for the tests of model files' decoding defaults (lit, the
Python module's and the server's tests):

    with_decoding.py MODEL.json OUT.json '{"beam_size": 4}'
"""
import json
import os
import sys


def write_with_decoding(src, out, decoding):
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


if __name__ == "__main__":
    write_with_decoding(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
