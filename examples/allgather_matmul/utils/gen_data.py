#!/usr/bin/env python3
"""Writes the allgather_matmul operator's inputs and golden outputs.

A (M x K) is split by rows over R PEs: PE r's rows [r * M // R, (r + 1) * M // R) go to
DIR/a_pe<r>.bin, and its own B (K x N) to DIR/b_pe<r>.bin, row-major float32, little-endian.
PE r's golden output C_r = A x B_r (M x N) goes to DIR/golden_pe<r>.bin, accumulated in
double. Uses numpy when it is installed, else plain Python (fine for the small shapes of the
tests; use numpy for large ones).
"""
import argparse
import os
import random
import struct


def write_floats(path, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def slice_lo(m, ranks, r):
    return m * r // ranks


def with_numpy(args):
    import numpy as np

    rng = np.random.default_rng(args.seed)
    a = rng.uniform(-1, 1, (args.m, args.k)).astype("<f4")
    for r in range(args.ranks):
        a[slice_lo(args.m, args.ranks, r):slice_lo(args.m, args.ranks, r + 1)].tofile(
            os.path.join(args.out, "a_pe%d.bin" % r))
    a64 = a.astype(np.float64)
    for r in range(args.ranks):
        b = rng.uniform(-1, 1, (args.k, args.n)).astype("<f4")
        b.tofile(os.path.join(args.out, "b_pe%d.bin" % r))
        (a64 @ b.astype(np.float64)).astype("<f4").tofile(
            os.path.join(args.out, "golden_pe%d.bin" % r))


def as_float32(values):
    """The values rounded to float32, so the golden output uses what the program reads."""
    return struct.unpack("<%df" % len(values), struct.pack("<%df" % len(values), *values))


def plain(args):
    rng = random.Random(args.seed)
    m, k, n = args.m, args.k, args.n
    a = as_float32([rng.uniform(-1, 1) for _ in range(m * k)])
    for r in range(args.ranks):
        lo, hi = slice_lo(m, args.ranks, r), slice_lo(m, args.ranks, r + 1)
        write_floats(os.path.join(args.out, "a_pe%d.bin" % r), a[lo * k:hi * k])
    for r in range(args.ranks):
        b = as_float32([rng.uniform(-1, 1) for _ in range(k * n)])
        write_floats(os.path.join(args.out, "b_pe%d.bin" % r), b)
        c = []
        for i in range(m):
            row = [0.0] * n
            for p in range(k):
                x = a[i * k + p]
                row = [s + x * y for s, y in zip(row, b[p * n:(p + 1) * n])]
            c.extend(row)
        write_floats(os.path.join(args.out, "golden_pe%d.bin" % r), c)


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
