"""A copy of a model whose output projection's weights are scaled by 1e38:
finite weights (so loading accepts them) whose logits overflow float32, so
scores come out NaN. For the tests of the NaN-score warning (the Python
module's and the server's)."""
import json
import os
import shutil
import struct

import numpy as np


def write_overflowing(fixture, directory, tensor="linear.weight"):
    """Copies the model directory `fixture` (float32 weights) into `directory`
    with `tensor` scaled; returns the copy's model.json."""
    for name in os.listdir(fixture):
        if name != "model.safetensors":
            shutil.copy(os.path.join(fixture, name), directory)
    with open(os.path.join(fixture, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = bytearray(f.read())
    assert header[tensor]["dtype"] == "F32"
    begin, end = header[tensor]["data_offsets"]
    weight = np.frombuffer(bytes(data[begin:end]), dtype=np.float32).astype(np.float64)
    data[begin:end] = np.clip(weight * 1e38, -3.4e38, 3.4e38).astype(np.float32).tobytes()
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= size
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", size))
        f.write(text.ljust(size))
        f.write(data)
    return os.path.join(directory, "model.json")
