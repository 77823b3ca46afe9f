#!/usr/bin/env python3
"""bench/cuda/report.py: the table and the targets of one scripts/bench-cuda.sh run.

Reads the raw JSON lines of bench/cuda/*.cu (one figure a line: bench, name, lib, size,
scope, blocks, metric, median, ...) and writes a Markdown table; prints the targets:
  - put bandwidth >= 0.9x the copy floor at 256 MiB and above, with the best block count
    (floor: the better of cudaMemcpyAsync device to device and the copy kernel's best block
    count, both counting bytes read + written, as the puts do);
  - every figure against NVSHMEM's: bandwidth at least NVSHMEM's, latency at most NVSHMEM's,
    within NOISE (3%); a figure NVSHMEM did not give (it failed, or was not built) is "n/a".

Usage: report.py RAW.jsonl [--table OUT.md] [--device TEXT]
"""

import argparse
import json
import sys
from collections import defaultdict

NOISE = 0.03
FLOOR_TARGET = 0.9
FLOOR_FROM = 256 << 20


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"report: {path}:{n}: not JSON ({e}); line skipped", file=sys.stderr)
    return rows


def fmt(v, unit):
    if v is None:
        return "n/a"
    return f"{v:.2f} {unit}" if unit == "us" else f"{v:.1f} {unit}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--table")
    ap.add_argument("--device", default="")
    args = ap.parse_args()
    rows = load(args.raw)
    if not rows:
        print(f"report: {args.raw}: no figures", file=sys.stderr)
        return 1

    # Floor: the best of memcpy and the copy kernel (over block counts), by size.
    floor = {}
    floor_how = {}
    for r in rows:
        if r["bench"] != "floor":
            continue
        s, v = r["size"], r["median"]
        if v > floor.get(s, 0):
            floor[s] = v
            floor_how[s] = r["name"] + (f" {r['blocks']} blocks" if r["blocks"] else "")

    # put_bw: the best block count per (scope, size, lib), and every point.
    best = {}
    points = defaultdict(dict)
    for r in rows:
        if r["bench"] != "put_bw":
            continue
        key = (r["scope"], r["size"], r["lib"])
        points[(r["scope"], r["blocks"], r["size"])][r["lib"]] = r["median"]
        if r["median"] > best.get(key, (0, 0))[0]:
            best[key] = (r["median"], r["blocks"])

    # Latencies and the on-stream put, by (bench, name, scope, size, metric).
    other = defaultdict(dict)
    for r in rows:
        if r["bench"] in ("pingpong", "barrier", "onstream"):
            other[(r["bench"], r["name"], r["scope"], r["size"], r["metric"])][r["lib"]] = r
    shared = any(r.get("shared_gpu") for r in rows)
    mps = any(r.get("mps") for r in rows)

    out = []
    out.append(f"Device: {args.device or rows[0].get('gpu', '?')}; ")
    out[-1] += (
        "the PEs share one GPU" if shared else "one GPU per PE"
    ) + ("; CUDA MPS on" if mps else "; no CUDA MPS (PEs time-sliced)")
    out.append("")
    out.append("Bandwidths count bytes read + written (2 x payload), GB/s = 1e9 B/s.")
    out.append("")
    out.append("## Copy floor (one process, no library)")
    out.append("")
    out.append("| size | floor | from |")
    out.append("| --- | --- | --- |")
    for s in sorted(floor):
        out.append(f"| {human(s)} | {fmt(floor[s], 'GB/s')} | {floor_how[s]} |")

    targets = []
    out.append("")
    out.append("## Kernel put bandwidth, PE 0 to PE 1, best block count")
    out.append("")
    out.append("| scope | size | shmem | blocks | nvshmem | blocks | shmem/nvshmem | shmem/floor |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    scopes = sorted({k[0] for k in best}, key=["thread", "warp", "block"].index)
    for scope in scopes:
        for s in sorted({k[1] for k in best if k[0] == scope}):
            ours = best.get((scope, s, "shmem"), (None, "-"))
            nv = best.get((scope, s, "nvshmem"), (None, "-"))
            fl = floor.get(s)
            out.append(
                f"| {scope} | {human(s)} | {fmt(ours[0], 'GB/s')} | {ours[1]} | "
                f"{fmt(nv[0], 'GB/s')} | {nv[1]} | {ratio(ours[0], nv[0])} | "
                f"{ratio(ours[0], fl)} |"
            )
            if s >= FLOOR_FROM and ours[0] is not None and fl:
                ok = ours[0] >= FLOOR_TARGET * fl
                targets.append(
                    (ok, f"put {scope} {human(s)}: {ours[0] / fl:.2f}x the floor "
                         f"({ours[1]} blocks; target >= {FLOOR_TARGET}x)")
                )
            if ours[0] is not None and nv[0] is not None:
                ok = ours[0] >= nv[0] * (1 - NOISE)
                targets.append((ok, f"put {scope} {human(s)}: {ours[0] / nv[0]:.2f}x NVSHMEM"))

    out.append("")
    out.append("## Latencies and the host's put on a stream")
    out.append("")
    out.append("| bench | figure | scope | size | metric | shmem | nvshmem | shmem/nvshmem |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(other):
        bench, name, scope, size, metric = key
        libs = other[key]
        unit = next(iter(libs.values()))["unit"]
        ours = libs.get("shmem", {}).get("median")
        nv = libs.get("nvshmem", {}).get("median")
        size_s = human(size) if size else "-"
        out.append(
            f"| {bench} | {name} | {scope} | {size_s} | {metric} | {fmt(ours, unit)} | "
            f"{fmt(nv, unit)} | {ratio(ours, nv)} |"
        )
        if ours is not None and nv is not None:
            ok = ours <= nv * (1 + NOISE) if metric == "latency" else ours >= nv * (1 - NOISE)
            targets.append((ok, f"{bench} {name} {scope} {size_s} {metric}: {ratio(ours, nv)} "
                                f"NVSHMEM's ({'lower' if metric == 'latency' else 'higher'} "
                                f"is better)"))

    out.append("")
    out.append("## Every put_bw point")
    out.append("")
    out.append("| scope | blocks | size | shmem | nvshmem |")
    out.append("| --- | --- | --- | --- | --- |")
    for (scope, blocks, s), libs in sorted(
        points.items(), key=lambda kv: (["thread", "warp", "block"].index(kv[0][0]), kv[0][1:])
    ):
        out.append(
            f"| {scope} | {blocks} | {human(s)} | {fmt(libs.get('shmem'), 'GB/s')} | "
            f"{fmt(libs.get('nvshmem'), 'GB/s')} |"
        )

    text = "\n".join(out) + "\n"
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
    met = sum(1 for ok, _ in targets if ok)
    print(f"Targets: {met} of {len(targets)} met")
    for ok, what in targets:
        print(f"  {'met   ' if ok else 'MISSED'} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
