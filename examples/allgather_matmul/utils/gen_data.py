#!/usr/bin/env python3
"""Writes the allgather_matmul operator's inputs and golden outputs.

A (M x K) is split by rows over R PEs: PE r's rows [r * M // R, (r + 1) * M // R) go to
DIR/a_pe<r>.bin, and its own B (K x N) to DIR/b_pe<r>.bin. PE r's golden output C_r = A x B_r
(M x N) goes to DIR/golden_pe<r>.bin, accumulated in double. Row-major float32, little-endian
(examples/common/matmul_data.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
import matmul_data as md  # noqa: E402


def main():
    args = md.parse_args(__doc__)
    rng = md.generator(args.seed)
    a = md.random_matrix(rng, args.m, args.k)
    for r in range(args.ranks):
        lo, hi = args.m * r // args.ranks, args.m * (r + 1) // args.ranks
        md.write(os.path.join(args.out, "a_pe%d.bin" % r), md.row_slice(a, lo, hi, args.k))
    for r in range(args.ranks):
        b = md.random_matrix(rng, args.k, args.n)
        md.write(os.path.join(args.out, "b_pe%d.bin" % r), b)
        md.write(os.path.join(args.out, "golden_pe%d.bin" % r),
                 md.product(a, b, args.m, args.k, args.n))


if __name__ == "__main__":
    main()
