"""all_reduce, all_gather_into_tensor and all_to_all_single on CPU tensors: shmem_torch on
symmetric tensors against torch.distributed with gloo, in the same run, plus the same
reduction called through libshmem's C ABI (shmem_float_sum_reduce, by ctypes) to show what the
Python layer costs.

Run under torchrun (gloo meets through torchrun's variables, shmem through the launcher path):
    SYMMETRIC_MEMORY_HEAP_SIZE=$((1 << 30)) torchrun --standalone --nproc-per-node 2 \\
        bench/torch_collectives.py [--sizes 4096,...] [--json out.jsonl] [--min-time 0.2]
Sizes are bytes of float32 per rank: the all_reduce tensor, the all_gather input, the
all_to_all tensor. Rank 0 prints one markdown row per op and size: median microseconds of each
implementation and the speedup over gloo. Every result is checked against the expected one.

    python bench/torch_collectives.py --plot-from out.jsonl --plot out.png
prints the table of the JSON records (several runs appended to one file: the median of the
runs) and draws them (one panel per rank count) with matplotlib, without starting a job.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import time

DEFAULT_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def timed(fn, min_time: float, sync) -> float:
    """Median seconds of one call of `fn`: one warm-up, then repeats for about `min_time`
    (3 to 200 calls). Every rank runs the same number of calls (rank 0's count is broadcast
    by `sync`)."""
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    reps = sync(max(3, min(200, int(min_time / max(once, 1e-6)))))
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def rounds_median(records: list[dict]) -> list[dict]:
    """One record per op, size and rank count: each figure the median over the rounds (runs)
    that measured it, with the number of rounds."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["op"], r["bytes"], r["ranks"]), []).append(r)
    merged = []
    for (op, size, ranks), rs in groups.items():
        m = {"op": op, "bytes": size, "ranks": ranks, "rounds": len(rs)}
        for key in rs[0]:
            if key.endswith("_s"):
                m[key] = statistics.median(r[key] for r in rs)
        merged.append(m)
    return sorted(merged, key=lambda r: (r["ranks"], r["bytes"], r["op"]))


def print_table(records: list[dict]) -> None:
    """The markdown table: one row per op, size and rank count."""
    print("| op | bytes per rank | ranks | shmem us | gloo us | gloo / shmem | C us | shmem / C |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in records:
        c = r.get("C_s")
        c_cols = f"{c * 1e6:.1f} | {r['shmem_s'] / c:.2f}" if c else "- | -"
        print(f"| {r['op']} | {r['bytes']} | {r['ranks']} | {r['shmem_s'] * 1e6:.1f} | "
              f"{r['gloo_s'] * 1e6:.1f} | {r['gloo_s'] / r['shmem_s']:.1f}x | {c_cols} |")


def plot(records_path: str, png: str) -> None:
    """One panel per rank count: median microseconds by size, shmem solid, gloo dashed, the
    C call dotted, one colour per op."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(records_path, encoding="utf-8") as f:
        records = rounds_median([json.loads(line) for line in f if line.strip()])
    print_table(records)
    ranks = sorted({r["ranks"] for r in records})
    fig, axes = plt.subplots(1, len(ranks), figsize=(6 * len(ranks), 4.5), squeeze=False)
    colours = {"all_reduce": "C0", "all_gather_into_tensor": "C1", "all_to_all_single": "C2"}
    for ax, n in zip(axes[0], ranks):
        for op, colour in colours.items():
            rows = sorted((r for r in records if r["ranks"] == n and r["op"] == op),
                          key=lambda r: r["bytes"])
            if not rows:
                continue
            x = [r["bytes"] for r in rows]
            for key, style in (("shmem_s", "-"), ("gloo_s", "--"), ("C_s", ":")):
                if key in rows[0]:
                    ax.plot(x, [r[key] * 1e6 for r in rows], style, color=colour,
                            marker="o", markersize=3, label=f"{op} {key[:-2]}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("µs (median)")
        ax.set_title(f"{n} ranks: shmem_torch (solid), gloo (dashed), C (dotted)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--json", default="")
    parser.add_argument("--plot-from", default="", help="JSON records to draw (no job)")
    parser.add_argument("--plot", default="torch_collectives.png",
                        help="the PNG --plot-from writes")
    args = parser.parse_args()
    if args.plot_from:
        plot(args.plot_from, args.plot)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    # Imported here so that --plot-from runs where torch is not installed.
    import torch
    import torch.distributed as dist

    from shmem_torch import TorchSymmetricMemoryHandler as H

    dist.init_process_group("gloo")
    rank, world = H.rank(), H.world_size()
    assert (rank, world) == (dist.get_rank(), dist.get_world_size())
    lib = ctypes.CDLL("libshmem.so.0", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    c_reduce = lib.shmem_float_sum_reduce
    c_reduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    c_reduce.restype = ctypes.c_int
    # SHMEM_TEAM_WORLD is the address of this exported object (<shmem/constants.h>).
    team_world = ctypes.addressof(ctypes.c_char.in_dll(lib, "shmem_internal_team_world"))

    def sync(count: int) -> int:
        t = torch.tensor([count])
        dist.broadcast(t, 0)
        return int(t.item())

    # Both libraries' first calls set up connections, fault pages in and wake the scheduler's
    # estimates: a few hundred small calls first, so the first row measures what the others do.
    warm = H.empty([1024], torch.float32)
    warm_plain = torch.zeros(1024)
    for _ in range(200):
        H.all_reduce(warm)
        dist.all_reduce(warm_plain)
    H.barrier()
    H.free(warm)

    rows = []
    for size in sizes:
        n = size // 4
        # all_reduce (sum, float32): checked once on real values, then timed on zeros (which
        # stay zero), so no copy is part of the figure.
        sym = H.empty([n], torch.float32)
        plain = torch.empty(n)
        total = world * (world + 1) / 2
        sym.fill_(rank + 1)
        plain.fill_(rank + 1)
        H.all_reduce(sym)
        dist.all_reduce(plain)
        assert torch.all(sym == total) and torch.all(plain == total), "all_reduce: wrong"
        sym.fill_(rank + 1)
        assert c_reduce(team_world, sym.data_ptr(), sym.data_ptr(), n) == 0
        assert torch.all(sym == total), "all_reduce from C: wrong"
        sym.zero_()
        plain.zero_()

        def c_ar():
            c_reduce(team_world, sym.data_ptr(), sym.data_ptr(), n)

        results = {
            "shmem": timed(lambda: H.all_reduce(sym), args.min_time, sync),
            "gloo": timed(lambda: dist.all_reduce(plain), args.min_time, sync),
            "C": timed(c_ar, args.min_time, sync),
        }
        assert torch.all(sym == 0) and torch.all(plain == 0), "all_reduce of zeros: wrong"
        rows.append(("all_reduce", size, results))
        H.barrier()
        H.free(sym)

        # all_gather_into_tensor: n floats per rank in, world * n out.
        src = H.empty([n], torch.float32)
        dst = H.empty([world * n], torch.float32)
        src.fill_(rank)
        psrc, pdst = torch.full((n,), float(rank)), torch.empty(world * n)
        expect = torch.arange(world, dtype=torch.float32).repeat_interleave(n)
        results = {
            "shmem": timed(lambda: H.all_gather_into_tensor(dst, src), args.min_time, sync),
            "gloo": timed(lambda: dist.all_gather_into_tensor(pdst, psrc), args.min_time, sync),
        }
        assert torch.equal(dst, expect) and torch.equal(pdst, expect), "all_gather: wrong"
        rows.append(("all_gather_into_tensor", size, results))
        H.barrier()
        H.free(dst)
        H.free(src)

        # all_to_all_single: n floats, world equal blocks.
        n_a2a = n - n % world
        src = H.empty([n_a2a], torch.float32)
        dst = H.empty([n_a2a], torch.float32)
        src.copy_(torch.arange(n_a2a, dtype=torch.float32) + rank * n_a2a)
        psrc, pdst = src.clone(), torch.empty(n_a2a)
        results = {
            "shmem": timed(lambda: H.all_to_all_single(dst, src), args.min_time, sync),
            "gloo": timed(lambda: dist.all_to_all_single(pdst, psrc), args.min_time, sync),
        }
        assert torch.equal(dst, pdst), "all_to_all_single: shmem and gloo differ"
        rows.append(("all_to_all_single", size, results))
        H.barrier()
        H.free(dst)
        H.free(src)

    if rank == 0:
        records = [{"op": op, "bytes": size, "ranks": world,
                    **{k + "_s": v for k, v in r.items()}} for op, size, r in rows]
        print()
        print_table(records)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as out:
                for record in records:
                    out.write(json.dumps(record) + "\n")
    H.finalize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
