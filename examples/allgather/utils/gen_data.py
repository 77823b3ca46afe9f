#!/usr/bin/env python3
"""Writes the allgather operator's inputs and golden output.

PE r's input goes to DIR/input_pe<r>.bin (COUNT float32, little-endian); the golden output
every PE must hold afterwards, all inputs in PE order, goes to DIR/golden.bin. Uses numpy when
it is installed, else plain Python.
"""
import argparse
import os
import random
import struct


def write_floats(path, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--count", type=int, required=True, help="floats per PE")
    parser.add_argument("--out", required=True, help="directory for the files")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    args = parser.parse_args()
    if args.ranks < 1 or args.count < 1:
        parser.error("--ranks and --count must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    try:
        import numpy as np

        rng = np.random.default_rng(args.seed)
        inputs = [rng.uniform(-1, 1, args.count).astype("<f4") for _ in range(args.ranks)]
        for r, x in enumerate(inputs):
            x.tofile(os.path.join(args.out, "input_pe%d.bin" % r))
        np.concatenate(inputs).tofile(os.path.join(args.out, "golden.bin"))
    except ImportError:
        rng = random.Random(args.seed)
        golden = []
        for r in range(args.ranks):
            x = [rng.uniform(-1, 1) for _ in range(args.count)]
            write_floats(os.path.join(args.out, "input_pe%d.bin" % r), x)
            golden.extend(x)
        write_floats(os.path.join(args.out, "golden.bin"), golden)


if __name__ == "__main__":
    main()
