"""python_putmem.py: the cost of one call from Python, next to the same call from C.

PE 0 times, one call at a time into PE 1's symmetric heap (8 bytes unless --size):
  putmem        shmem.shmem_putmem (CANN's API: addresses as ints)
  putmem+quiet  shmem.shmem_putmem, then shmem.shmem_quiet (rma_lat.c's putmem+quiet from C)
  core.put      shmem.core.put of a NumPy array (argument checks included)
and prints one line per operation: the median over --trials of the time per call in ns. The
same call from C is rma_lat.c's `--ops putmem+quiet --sizes 8`; docs/python.md shows
both. Run it as any Python program of a job:

    build/cargo/release/shmemrun -n 2 build/venv/bin/python bench/python_putmem.py
"""

import argparse
import statistics
import time

import numpy as np

import shmem
import shmem.core as sc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8, help="bytes per call (default 8)")
    ap.add_argument("--iters", type=int, default=200000, help="calls per trial")
    ap.add_argument("--trials", type=int, default=7, help="trials; the median is shown")
    args = ap.parse_args()
    with sc.init(mem_size=16 << 20):
        if sc.n_pes() < 2:
            raise SystemExit("python_putmem.py: run it on 2 PEs (shmemrun -n 2)")
        me = sc.my_pe()
        dst = sc.array(args.size, np.uint8)
        src = np.arange(args.size, dtype=np.uint8)
        d, s, n = dst.ctypes.data, src.ctypes.data, args.size
        put, quiet, core_put = shmem.shmem_putmem, shmem.shmem_quiet, sc.put

        def loop_putmem(iters):
            for _ in range(iters):
                put(d, s, n, 1)

        def loop_putmem_quiet(iters):
            for _ in range(iters):
                put(d, s, n, 1)
                quiet()

        def loop_core_put(iters):
            for _ in range(iters):
                core_put(dst, src, 1)

        results = {}
        for name, loop in (("putmem", loop_putmem), ("putmem+quiet", loop_putmem_quiet),
                           ("core.put", loop_core_put)):
            sc.barrier()
            if me == 0:
                loop(min(args.iters, 1000))  # warm-up
                per_call = []
                for _ in range(args.trials):
                    t0 = time.perf_counter_ns()
                    loop(args.iters)
                    per_call.append((time.perf_counter_ns() - t0) / args.iters)
                results[name] = statistics.median(per_call)
            sc.barrier()
        if me == 1:
            assert (dst == src).all(), "PE 1: the bytes PE 0 put"
        if me == 0:
            for name, ns in results.items():
                print(f"python {name:13s} {n:6d} B  {ns:8.1f} ns/call")
        sc.barrier()
        sc.free(dst)


if __name__ == "__main__":
    main()
