"""The ranks of memfabric's Python examples (smem_bm_example.py, smem_shm_example.py), run as
memfabric's examples run them: one forked ``multiprocessing.Process`` per rank. ``run_ranks``
exits the launching process with 1 when a rank failed or outlived the timeout (it is killed)."""

import multiprocessing
import sys


def run_ranks(name, worker, world_size, args, timeout):
    """Runs ``worker(rank, world_size, *args)`` in `world_size` processes and waits for them."""
    procs = [multiprocessing.Process(target=worker, args=(i, world_size, *args))
             for i in range(world_size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    failed = [i for i, p in enumerate(procs) if p.exitcode != 0]
    for p in procs:
        if p.exitcode is None:
            p.kill()
    if failed:
        print(f"{name}: processes {failed} failed", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: {world_size} ranks ok")
