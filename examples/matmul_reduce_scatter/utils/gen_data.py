#!/usr/bin/env python3
"""Writes the matmul_reduce_scatter operator's inputs and golden output.

PE r's A (M x K) goes to DIR/a_pe<r>.bin and its B (K x N) to DIR/b_pe<r>.bin; the golden
output C = sum over r of A_r x B_r (M x N) goes to DIR/golden.bin, accumulated in double; PE r
holds its row slice of it (verify_result.py --slice-rows M). Row-major float32, little-endian
(examples/common/matmul_data.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
import matmul_data as md  # noqa: E402


def main():
    args = md.parse_args(__doc__)
    rng = md.generator(args.seed)
    c = md.zeros(args.m, args.n)
    for r in range(args.ranks):
        a = md.random_matrix(rng, args.m, args.k)
        b = md.random_matrix(rng, args.k, args.n)
        md.write(os.path.join(args.out, "a_pe%d.bin" % r), a)
        md.write(os.path.join(args.out, "b_pe%d.bin" % r), b)
        c = md.add(c, md.product(a, b, args.m, args.k, args.n))
    md.write(os.path.join(args.out, "golden.bin"), c)


if __name__ == "__main__":
    main()
