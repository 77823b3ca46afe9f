#!/usr/bin/env python3
"""Checks every PE's output of the moe_dispatch_combine operator against its golden data.

Compares DIR/output_pe<r>.bin with DIR/golden_pe<r>.bin (T x H float32, little-endian) for
every r: a value passes when |out - golden| <= atol + rtol * |golden|. Prints one line per PE
(the largest difference, or the first token and column out of tolerance) and exits 1 when any
PE's output is missing, has the wrong size or has a value out of tolerance.
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
    parser.add_argument("--hidden", type=int, required=True, help="hidden size (values per token)")
    parser.add_argument("--dir", required=True, help="directory of the golden and output files")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance")
    args = parser.parse_args()
    failed = 0
    for r in range(args.ranks):
        try:
            golden = read_floats(os.path.join(args.dir, "golden_pe%d.bin" % r))
            out = read_floats(os.path.join(args.dir, "output_pe%d.bin" % r))
        except (OSError, ValueError) as e:
            print("PE %d: FAILED: %s" % (r, e))
            failed += 1
            continue
        if len(out) != len(golden) or len(golden) % args.hidden:
            print("PE %d: FAILED: %d values, golden has %d (tokens of %d)"
                  % (r, len(out), len(golden), args.hidden))
            failed += 1
            continue
        bad = [i for i, (o, g) in enumerate(zip(out, golden))
               if not abs(o - g) <= args.atol + args.rtol * abs(g)]
        if bad:
            i = bad[0]
            print("PE %d: FAILED: %d of %d values out of tolerance, first at token %d column %d: "
                  "%r, golden %r" % (r, len(bad), len(out), i // args.hidden, i % args.hidden,
                                     out[i], golden[i]))
            failed += 1
        else:
            worst = max((abs(o - g) for o, g in zip(out, golden)), default=0.0)
            print("PE %d: %d tokens match the golden data (largest difference %.3g; rtol %g, "
                  "atol %g)" % (r, len(out) // args.hidden, worst, args.rtol, args.atol))
    if failed:
        print("verify: FAILED on %d of %d PEs" % (failed, args.ranks))
        return 1
    print("verify: passed on %d PEs" % args.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
