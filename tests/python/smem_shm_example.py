"""memfabric_hybrid's Share Memory example (its example/shm/ShiftPutGet) in Python, host variant:
the kernel's store into the next rank's slot becomes a CPU store into ``gva + next * size``.
``python smem_shm_example.py --world-size N --url tcp://127.0.0.1:PORT``: N forked ranks (rank 0
serves the store), each checks the previous rank's number in its own slot, the rank-ordered
all_gather, and the reach of its neighbour. Exit status 0 only if every rank saw them. Needs
nothing beyond the standard library, mf_ranks.py (beside it) and memfabric_hybrid.
"""

import argparse
import ctypes
import struct

import memfabric_hybrid
from memfabric_hybrid import shm

from mf_ranks import run_ranks  # beside this file

SIZE = 64 << 20
TIMEOUT = 60


def worker(rank, world_size, url):
    memfabric_hybrid.initialize()
    memfabric_hybrid.set_log_level(3)
    config = shm.ShmConfig()
    ret = shm.initialize(url, world_size, rank, rank, config)
    assert ret == 0, f"shm.initialize: {ret} {memfabric_hybrid.get_last_err_msg()}"
    handle = shm.create(0, world_size, rank, SIZE, shm.ShmDataOpType.MTE, 0)
    assert (handle.local_rank, handle.rank_size) == (rank, world_size)
    assert handle.query_support_data_operation() == shm.ShmDataOpType.MTE.value
    handle.set_context(b"1234567890123456")

    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    ctypes.c_uint64.from_address(handle.gva + nxt * SIZE).value = 1000 + rank
    ret = handle.barrier()
    assert ret == 0, f"barrier: {ret} {memfabric_hybrid.get_last_err_msg()}"
    got = ctypes.c_uint64.from_address(handle.gva + rank * SIZE).value
    assert got == 1000 + prev, f"rank {rank}: slot holds {got}, not rank {prev}'s number"

    gathered = handle.all_gather(struct.pack("<Q", 7 * rank))
    assert gathered == b"".join(struct.pack("<Q", 7 * r) for r in range(world_size)), gathered
    assert handle.topology_can_reach(nxt, 0) == 0, memfabric_hybrid.get_last_err_msg()
    print(f"rank {rank}: rank {prev}'s number and the all_gather checked", flush=True)
    assert handle.barrier() == 0
    assert handle.destroy() == 0
    shm.uninitialize()
    memfabric_hybrid.uninitialize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--url", default="tcp://127.0.0.1:10006")
    args = parser.parse_args()
    run_ranks("smem_shm_example", worker, args.world_size, (args.url,), TIMEOUT * 2)


if __name__ == "__main__":
    main()
