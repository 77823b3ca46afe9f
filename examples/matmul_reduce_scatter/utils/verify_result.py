#!/usr/bin/env python3
"""Checks every PE's output of the matmul_reduce_scatter operator against the golden data.

PE r owns rows [r * M // R, (r + 1) * M // R) of C (R PEs): DIR/output_pe<r>.bin must match
those rows of DIR/golden.bin (M x N float32, little-endian). A value passes when
|out - golden| <= atol + rtol * |golden|. Prints one line per PE and exits 1 when any PE's
output is missing, has the wrong size or has a value out of tolerance.
"""
import argparse
import os
import struct
import sys


def read_floats(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) % 4:
        raise ValueError("%s: %d bytes is not a whole number of float32" % (path, len(raw)))
    return struct.unpack("<%df" % (len(raw) // 4), raw)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--m", type=int, required=True, help="rows of C")
    parser.add_argument("--n", type=int, required=True, help="columns of C")
    parser.add_argument("--dir", required=True, help="directory of golden.bin and the outputs")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance")
    args = parser.parse_args()
    golden = read_floats(os.path.join(args.dir, "golden.bin"))
    if len(golden) != args.m * args.n:
        print("verify: FAILED: golden.bin has %d values, not M x N = %d"
              % (len(golden), args.m * args.n))
        return 1
    failed = 0
    for r in range(args.ranks):
        lo, hi = r * args.m // args.ranks, (r + 1) * args.m // args.ranks
        want = golden[lo * args.n:hi * args.n]
        try:
            out = read_floats(os.path.join(args.dir, "output_pe%d.bin" % r))
        except (OSError, ValueError) as e:
            print("PE %d: FAILED: %s" % (r, e))
            failed += 1
            continue
        if len(out) != len(want):
            print("PE %d: FAILED: %d values, its rows %d..%d have %d"
                  % (r, len(out), lo, hi, len(want)))
            failed += 1
            continue
        bad = [i for i, (o, g) in enumerate(zip(out, want))
               if not abs(o - g) <= args.atol + args.rtol * abs(g)]
        if bad:
            i = bad[0]
            print("PE %d: FAILED: %d of %d values out of tolerance, first at row %d col %d: %r, "
                  "golden %r" % (r, len(bad), len(out), lo + i // args.n, i % args.n, out[i],
                                 want[i]))
            failed += 1
        else:
            print("PE %d: rows %d..%d (%d values) match the golden data (rtol %g, atol %g)"
                  % (r, lo, hi, len(out), args.rtol, args.atol))
    if failed:
        print("verify: FAILED on %d of %d PEs" % (failed, args.ranks))
        return 1
    print("verify: passed on %d PEs" % args.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
