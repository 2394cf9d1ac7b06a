"""Compares two float32 .npy files of the same shape value by value.

    python3 npy_close.py A.npy B.npy [--tolerance T]

Prints "close: N values" when every |a - b| <= T * max(1, |a|) (default
1e-4), else the first value that is not and exits 1. Reads the .npy v1.0
header itself (no NumPy needed).
"""

import argparse
import ast
import struct
import sys


def load(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    size = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + size].decode("latin-1"))
    if header["descr"] != "<f4":
        sys.exit(f"{path}: not float32")
    body = data[10 + size:]
    return header["shape"], struct.unpack(f"<{len(body) // 4}f", body)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args()
    shape_a, a = load(args.a)
    shape_b, b = load(args.b)
    if shape_a != shape_b:
        sys.exit(f"shapes differ: {shape_a} vs {shape_b}")
    for i, (x, y) in enumerate(zip(a, b)):
        if not abs(x - y) <= args.tolerance * max(1.0, abs(x)):
            print(f"value {i}: {x} vs {y}")
            sys.exit(1)
    print(f"close: {len(a)} values")


if __name__ == "__main__":
    main()
