#!/usr/bin/env python3
"""Writes the kv_shuffle operator's inputs and golden outputs.

Draws the same uneven mapping as kv_shuffle.c (a 64-bit LCG from --seed: per global KV block,
its holder, then its owner as the smaller of two draws), fills every KV block with random
float32 values, and writes DIR/input_pe<r>.bin (the blocks PE r holds, in global order) and
DIR/golden_pe<r>.bin (the blocks PE r owns, in global order), little-endian. Plain Python.
"""
import argparse
import os
import random
import struct

MASK = (1 << 64) - 1


def draw_mapping(seed, total, ranks):
    state = seed & MASK

    def draw():
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK
        return (state >> 33) % ranks

    holder, owner = [], []
    for _ in range(total):
        holder.append(draw())
        x, y = draw(), draw()
        owner.append(min(x, y))
    return holder, owner


def write_floats(path, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--total", type=int, required=True, help="KV blocks in all")
    parser.add_argument("--bsize", type=int, required=True, help="floats per KV block")
    parser.add_argument("--seed", type=int, default=1, help="seed of the mapping")
    parser.add_argument("--out", required=True, help="directory for the files")
    args = parser.parse_args()
    if args.ranks < 1 or args.total < 1 or args.bsize < 1 or args.seed < 1:
        parser.error("--ranks, --total, --bsize and --seed must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    holder, owner = draw_mapping(args.seed, args.total, args.ranks)
    rng = random.Random(args.seed)
    blocks = [[rng.uniform(-1, 1) for _ in range(args.bsize)] for _ in range(args.total)]
    for r in range(args.ranks):
        held = [v for j in range(args.total) if holder[j] == r for v in blocks[j]]
        owned = [v for j in range(args.total) if owner[j] == r for v in blocks[j]]
        write_floats(os.path.join(args.out, "input_pe%d.bin" % r), held)
        write_floats(os.path.join(args.out, "golden_pe%d.bin" % r), owned)
        print("PE %d: holds %d, owns %d of %d KV blocks"
              % (r, holder.count(r), owner.count(r), args.total))


if __name__ == "__main__":
    main()
