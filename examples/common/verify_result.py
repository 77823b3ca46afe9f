#!/usr/bin/env python3
"""Checks every PE's output of an operator against the golden data.

PE r's DIR/output_pe<r>.bin (float32, little-endian) is compared with DIR/golden_pe<r>.bin,
or, when there is none, with DIR/golden.bin: the whole of it, or with --slice-rows M only PE
r's row slice [r * M // R, (r + 1) * M // R) of its M rows (R PEs; a reduce-scatter). A value
passes when |out - golden| <= atol + rtol * |golden| (--rtol 0 --atol 0: bit for bit). With
--row-len L a value's place is told as (row, column) of rows of L values. Prints one line per
PE (the largest difference, or the first value out of tolerance) and exits 1 when any PE's
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


def golden_of(args, r, shared):
    """PE r's golden values and the row its first value is in (None: no row numbers)."""
    own = os.path.join(args.dir, "golden_pe%d.bin" % r)
    if os.path.exists(own):
        return read_floats(own), 0
    if shared is None:
        raise ValueError("neither %s nor golden.bin in %s" % (os.path.basename(own), args.dir))
    if not args.slice_rows:
        return shared, 0
    if len(shared) % args.slice_rows:
        raise ValueError("golden.bin: %d values is not %d rows" % (len(shared), args.slice_rows))
    n = len(shared) // args.slice_rows
    lo, hi = r * args.slice_rows // args.ranks, (r + 1) * args.slice_rows // args.ranks
    return shared[lo * n:hi * n], lo


def place(args, i, first_row):
    if not args.row_len:
        return "at %d" % i
    return "at row %d column %d" % (first_row + i // args.row_len, i % args.row_len)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--dir", required=True, help="directory of the golden and output files")
    parser.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance")
    parser.add_argument("--slice-rows", type=int, default=0,
                        help="golden.bin has this many rows; PE r checks only its row slice")
    parser.add_argument("--row-len", type=int, default=0,
                        help="values per row, to name a value by row and column")
    args = parser.parse_args()
    shared_path = os.path.join(args.dir, "golden.bin")
    shared = read_floats(shared_path) if os.path.exists(shared_path) else None
    failed = 0
    for r in range(args.ranks):
        try:
            golden, first_row = golden_of(args, r, shared)
            out = read_floats(os.path.join(args.dir, "output_pe%d.bin" % r))
        except (OSError, ValueError) as e:
            print("PE %d: FAILED: %s" % (r, e))
            failed += 1
            continue
        if len(out) != len(golden):
            print("PE %d: FAILED: %d values, golden has %d" % (r, len(out), len(golden)))
            failed += 1
            continue
        bad = [i for i, (o, g) in enumerate(zip(out, golden))
               if not abs(o - g) <= args.atol + args.rtol * abs(g)]
        if bad:
            i = bad[0]
            print("PE %d: FAILED: %d of %d values out of tolerance, first %s: %r, golden %r"
                  % (r, len(bad), len(out), place(args, i, first_row), out[i], golden[i]))
            failed += 1
        else:
            worst = max((abs(o - g) for o, g in zip(out, golden)), default=0.0)
            print("PE %d: %d values match the golden data (largest difference %.3g; rtol %g, "
                  "atol %g)" % (r, len(out), worst, args.rtol, args.atol))
    if failed:
        print("verify: FAILED on %d of %d PEs" % (failed, args.ranks))
        return 1
    print("verify: passed on %d PEs" % args.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
