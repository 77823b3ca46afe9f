#!/usr/bin/env python3
"""Writes the moe_dispatch_combine operator's inputs and golden outputs.

PE r's tokens (T x H) go to DIR/x_pe<r>.bin, their expert ids (T x k int32) to
DIR/ids_pe<r>.bin and gate weights (T x k) to DIR/gates_pe<r>.bin; PE q's experts (the E / R
experts q * E / R .., each H x H, expert_e(x) = x W_e) go to DIR/weights_pe<q>.bin, and PE r's
golden output out[t] = sum_j gate[t][j] * x[t] W_{id[t][j]} (T x H) to DIR/golden_pe<r>.bin,
computed in double. Float32 and int32, little-endian, row-major.

The routing is drawn as moe_dispatch_combine.c draws it: a 64-bit LCG per PE, k distinct
experts per token with weight E - e among those left, k integer weights in [1, 1000]
normalised to sum 1; PE 0 avoids the last PE's experts when k leaves room, so that PE
receives nothing from it. Uses numpy for the values and the golden output when it is installed,
else plain Python (fine for the small shapes of the tests).
"""
import argparse
import math
import os
import random
import struct

MASK = (1 << 64) - 1


def draw_routing(seed, pe, ranks, tokens, experts, topk):
    """PE pe's expert ids and gate weights (float32 values), as lists of T lists of k."""
    state = (seed + pe * 0x9E3779B97F4A7C15) & MASK

    def draw():
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) & MASK
        return state >> 33

    per_pe = experts // ranks
    avoid = ranks - 1 if pe == 0 and ranks > 1 and topk <= experts - per_pe else -1
    ids, gates = [], []
    for _ in range(tokens):
        taken = [e // per_pe == avoid for e in range(experts)]
        left = sum(experts - e for e in range(experts) if not taken[e])
        row = []
        for _ in range(topk):
            r = draw() % left
            e = 0
            while taken[e] or r >= experts - e:
                if not taken[e]:
                    r -= experts - e
                e += 1
            row.append(e)
            taken[e] = True
            left -= experts - e
        raw = [1 + draw() % 1000 for _ in range(topk)]
        total = sum(raw)
        gates.append([to_f32(v / total) for v in raw])
        ids.append(row)
    return ids, gates


def to_f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def write(path, fmt, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def with_numpy(args, routing):
    import numpy as np

    t, h, e_all = args.tokens, args.hidden, args.experts
    per_pe = e_all // args.ranks
    scale = 1.0 / math.sqrt(h)
    w = np.stack([(np.random.default_rng([args.seed, 1, e]).uniform(-1, 1, (h, h)) * scale)
                  .astype("<f4") for e in range(e_all)])
    for q in range(args.ranks):
        w[q * per_pe:(q + 1) * per_pe].tofile(os.path.join(args.out, "weights_pe%d.bin" % q))
    w64 = w.astype(np.float64)
    for r, (ids, gates) in enumerate(routing):
        x = np.random.default_rng([args.seed, 0, r]).uniform(-1, 1, (t, h)).astype("<f4")
        ids = np.array(ids, dtype="<i4").reshape(t, args.topk)
        gates = np.array(gates, dtype="<f4").reshape(t, args.topk)
        x.tofile(os.path.join(args.out, "x_pe%d.bin" % r))
        ids.tofile(os.path.join(args.out, "ids_pe%d.bin" % r))
        gates.tofile(os.path.join(args.out, "gates_pe%d.bin" % r))
        out = np.zeros((t, h), dtype=np.float64)
        x64 = x.astype(np.float64)
        for e in range(e_all):
            tok, j = np.nonzero(ids == e)  # a token names an expert at most once
            out[tok] += gates[tok, j].astype(np.float64)[:, None] * (x64[tok] @ w64[e])
        out.astype("<f4").tofile(os.path.join(args.out, "golden_pe%d.bin" % r))


def plain(args, routing):
    t, h, e_all = args.tokens, args.hidden, args.experts
    per_pe = e_all // args.ranks
    scale = 1.0 / math.sqrt(h)
    w = []
    for e in range(e_all):
        rng = random.Random("%d/w/%d" % (args.seed, e))
        w.append([to_f32(rng.uniform(-1, 1) * scale) for _ in range(h * h)])
    for q in range(args.ranks):
        write(os.path.join(args.out, "weights_pe%d.bin" % q), "f",
              [v for e in range(q * per_pe, (q + 1) * per_pe) for v in w[e]])
    for r, (ids, gates) in enumerate(routing):
        rng = random.Random("%d/x/%d" % (args.seed, r))
        x = [to_f32(rng.uniform(-1, 1)) for _ in range(t * h)]
        write(os.path.join(args.out, "x_pe%d.bin" % r), "f", x)
        write(os.path.join(args.out, "ids_pe%d.bin" % r), "i", [e for row in ids for e in row])
        write(os.path.join(args.out, "gates_pe%d.bin" % r), "f", [g for row in gates for g in row])
        out = []
        for i in range(t):
            xi = x[i * h:(i + 1) * h]
            acc = [0.0] * h
            for e, g in zip(ids[i], gates[i]):
                we = w[e]
                for p, xv in enumerate(xi):
                    c = g * xv
                    wrow = we[p * h:(p + 1) * h]
                    acc = [a + c * v for a, v in zip(acc, wrow)]
            out.extend(acc)
        write(os.path.join(args.out, "golden_pe%d.bin" % r), "f", out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ranks", type=int, required=True, help="number of PEs")
    parser.add_argument("--tokens", type=int, required=True, help="tokens per PE")
    parser.add_argument("--hidden", type=int, required=True, help="hidden size")
    parser.add_argument("--experts", type=int, required=True, help="experts in all")
    parser.add_argument("--topk", type=int, required=True, help="experts per token")
    parser.add_argument("--out", required=True, help="directory for the files")
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    args = parser.parse_args()
    if min(args.ranks, args.tokens, args.hidden, args.experts, args.topk, args.seed) < 1:
        parser.error("--ranks, --tokens, --hidden, --experts, --topk and --seed must be at "
                     "least 1")
    if args.experts % args.ranks:
        parser.error("--experts=%d is not a multiple of --ranks=%d" % (args.experts, args.ranks))
    if args.topk > args.experts:
        parser.error("--topk=%d is more than the %d experts" % (args.topk, args.experts))
    os.makedirs(args.out, exist_ok=True)
    routing = [draw_routing(args.seed, r, args.ranks, args.tokens, args.experts, args.topk)
               for r in range(args.ranks)]
    per_pe = args.experts // args.ranks
    for r, (ids, _) in enumerate(routing):
        sent = [0] * args.ranks
        for row in ids:
            for e in row:
                sent[e // per_pe] += 1
        print("PE %d: sends %s rows to PEs 0..%d" % (r, sent, args.ranks - 1))
    try:
        import numpy  # noqa: F401
    except ImportError:
        plain(args, routing)
    else:
        with_numpy(args, routing)


if __name__ == "__main__":
    main()
