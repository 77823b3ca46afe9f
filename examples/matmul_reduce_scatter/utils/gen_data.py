#!/usr/bin/env python3
"""Writes the matmul_reduce_scatter operator's inputs and golden output.

PE r's A (M x K) goes to DIR/a_pe<r>.bin and its B (K x N) to DIR/b_pe<r>.bin, row-major
float32, little-endian; the golden output C = sum over r of A_r x B_r (M x N) goes to
DIR/golden.bin, accumulated in double; PE r must hold its rows of it (see verify_result.py).
Uses numpy when it is installed, else plain Python (fine for the small shapes of the tests;
use numpy for large ones).
"""
import argparse
import os
import random
import struct


def write_floats(path, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def with_numpy(args):
    import numpy as np

    rng = np.random.default_rng(args.seed)
    c = np.zeros((args.m, args.n), dtype=np.float64)
    for r in range(args.ranks):
        a = rng.uniform(-1, 1, (args.m, args.k)).astype("<f4")
        b = rng.uniform(-1, 1, (args.k, args.n)).astype("<f4")
        a.tofile(os.path.join(args.out, "a_pe%d.bin" % r))
        b.tofile(os.path.join(args.out, "b_pe%d.bin" % r))
        c += a.astype(np.float64) @ b.astype(np.float64)
    c.astype("<f4").tofile(os.path.join(args.out, "golden.bin"))


def plain(args):
    rng = random.Random(args.seed)
    m, k, n = args.m, args.k, args.n
    c = [0.0] * (m * n)
    for r in range(args.ranks):
        # Rounded to float32 first, so the golden sum uses the values the program reads.
        a = struct.unpack("<%df" % (m * k), struct.pack("<%df" % (m * k),
                          *[rng.uniform(-1, 1) for _ in range(m * k)]))
        b = struct.unpack("<%df" % (k * n), struct.pack("<%df" % (k * n),
                          *[rng.uniform(-1, 1) for _ in range(k * n)]))
        write_floats(os.path.join(args.out, "a_pe%d.bin" % r), a)
        write_floats(os.path.join(args.out, "b_pe%d.bin" % r), b)
        for i in range(m):
            row = c[i * n:(i + 1) * n]
            for p in range(k):
                x = a[i * k + p]
                brow = b[p * n:(p + 1) * n]
                row = [s + x * y for s, y in zip(row, brow)]
            c[i * n:(i + 1) * n] = row
    write_floats(os.path.join(args.out, "golden.bin"), c)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--m", type=int, required=True, help="rows of A and C")
    parser.add_argument("--k", type=int, required=True, help="columns of A, rows of B")
    parser.add_argument("--n", type=int, required=True, help="columns of B and C")
    parser.add_argument("--out", required=True, help="directory for the files")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    args = parser.parse_args()
    if min(args.ranks, args.m, args.k, args.n) < 1:
        parser.error("--ranks, --m, --k and --n must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    try:
        import numpy  # noqa: F401
    except ImportError:
        plain(args)
    else:
        with_numpy(args)


if __name__ == "__main__":
    main()
