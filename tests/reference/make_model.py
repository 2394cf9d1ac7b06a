"""Write a random model (and a random source file) for manual checks and benchmarks.

    /usr/bin/python3 tests/reference/make_model.py --preset base --seed 1 --out /tmp/base
"""

import argparse
import os
import random
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tfmc.reference import tfm as ref  # noqa: E402

PRESETS = {
    "tiny": (dict(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=64,
                  max_len=64, activation="relu", norm="post", layer_norm_eps=1e-5,
                  embedding_scale=False, positional_encoding="sinusoidal"), 37, 41),
    "base": (dict(d_model=512, num_heads=8, num_encoder_layers=6, num_decoder_layers=6, d_ff=2048,
                  max_len=256, activation="relu", norm="post", layer_norm_eps=1e-5,
                  embedding_scale=False, positional_encoding="sinusoidal"), 8000, 8000),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--lines", type=int, default=32, help="lines in DIR/src.ids")
    p.add_argument("--max-src-len", type=int, default=40, help="longest source line (ids)")
    p.add_argument("--tgt-vocab", type=int, default=0,
                   help="target vocabulary size instead of the preset's (e.g. 65001, OPUS-MT's)")
    args = p.parse_args()

    arch, src_v, tgt_v = PRESETS[args.preset]
    if args.tgt_vocab:
        if args.tgt_vocab < 4:
            p.error("--tgt-vocab must hold the four special tokens")
        tgt_v = args.tgt_vocab
    torch.manual_seed(args.seed)
    # Unit gains keep a random 12-layer model well conditioned: its float32
    # and float64 logits agree to ~1e-5, so tfmc can be checked to 1e-4.
    model = ref.random_init(ref.TranslationTransformer(arch, src_v, tgt_v).eval(), args.seed)
    ref.export(model, args.out)
    rng = random.Random(args.seed)
    longest = min(args.max_src_len, arch["max_len"] - 1)
    src = [[rng.randrange(4, src_v) for _ in range(rng.randint(1, longest))]
           for _ in range(args.lines)]
    ref.write_ids(os.path.join(args.out, "src.ids"), src)
    print(f"wrote {args.preset} model (seed {args.seed}) and {args.lines} source lines to {args.out}")


if __name__ == "__main__":
    main()
