#!/usr/bin/env python3
"""Checks every PE's output of an operator against the golden data.

Compares DIR/output_pe<r>.bin with DIR/golden.bin (float32, little-endian) for every r, or
with DIR/golden_pe<r>.bin when there is no golden.bin (a golden output per PE): a value
passes when |out - golden| <= atol + rtol * |golden|. Prints one line per PE and exits 1 when
any PE's output is missing, has the wrong size or has a value out of tolerance.
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
    parser.add_argument("--dir", required=True, help="directory of golden.bin and the outputs")
    parser.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance")
    args = parser.parse_args()
    shared = os.path.join(args.dir, "golden.bin")
    per_pe = not os.path.exists(shared)
    golden = None if per_pe else read_floats(shared)
    failed = 0
    for r in range(args.ranks):
        path = os.path.join(args.dir, "output_pe%d.bin" % r)
        try:
            out = read_floats(path)
            if per_pe:
                golden = read_floats(os.path.join(args.dir, "golden_pe%d.bin" % r))
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
            print("PE %d: FAILED: %d of %d values out of tolerance, first at %d: %r, golden %r"
                  % (r, len(bad), len(out), i, out[i], golden[i]))
            failed += 1
        else:
            print("PE %d: %d values match the golden data (rtol %g, atol %g)"
                  % (r, len(out), args.rtol, args.atol))
    if failed:
        print("verify: FAILED on %d of %d PEs" % (failed, args.ranks))
        return 1
    print("verify: passed on %d PEs" % args.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
