"""What the matmul operators' gen_data.py share: their options, seeded float32 matrices, the
products in double, and the files.

A matrix is a numpy array when numpy is installed, else a flat row-major list of floats
(fine for the small shapes of the tests; use numpy for large ones). Every value is rounded to
float32 when drawn, so the golden products use exactly what the programs read. Files are
row-major float32, little-endian.
"""
import argparse
import os
import random
import struct

try:
    import numpy as np
except ImportError:
    np = None


def parse_args(doc):
    """The options every matmul gen_data.py takes: --ranks --m --k --n --out [--seed]."""
    parser = argparse.ArgumentParser(description=doc)
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
    return args


def generator(seed):
    return np.random.default_rng(seed) if np else random.Random(seed)


def random_matrix(rng, rows, cols):
    """rows x cols values drawn uniformly from [-1, 1), rounded to float32."""
    if np:
        return rng.uniform(-1, 1, (rows, cols)).astype("<f4")
    values = [rng.uniform(-1, 1) for _ in range(rows * cols)]
    return list(struct.unpack("<%df" % len(values), struct.pack("<%df" % len(values), *values)))


def zeros(rows, cols):
    return np.zeros((rows, cols), dtype=np.float64) if np else [0.0] * (rows * cols)


def row_slice(mat, lo, hi, cols):
    """Rows [lo, hi) of a matrix of `cols` columns."""
    return mat[lo:hi] if np else mat[lo * cols:hi * cols]


def product(a, b, m, k, n):
    """A (m x k) x B (k x n), accumulated in double."""
    if np:
        return a.astype(np.float64) @ b.astype(np.float64)
    c = []
    for i in range(m):
        row = [0.0] * n
        for p in range(k):
            x = a[i * k + p]
            row = [s + x * y for s, y in zip(row, b[p * n:(p + 1) * n])]
        c.extend(row)
    return c


def add(c, d):
    return c + d if np else [x + y for x, y in zip(c, d)]


def write(path, mat):
    """Writes a matrix as float32."""
    if np:
        np.asarray(mat).astype("<f4").tofile(path)
    else:
        with open(path, "wb") as f:
            f.write(struct.pack("<%df" % len(mat), *mat))
