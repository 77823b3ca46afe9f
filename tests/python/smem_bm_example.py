"""memfabric_hybrid's Big Memory Python example (its example/bm/BmPython/smem_bm_example.py), host
variant: the NPU tensor becomes a second host buffer, the rest is memfabric's call sequence.
``python smem_bm_example.py --world-size N --url tcp://127.0.0.1:PORT [--auto]``: N forked ranks
each write a pattern into the next rank's host segment (H2G, and L2G 4 KiB further), then read
their own segment back (G2H, G2L) and check the previous rank's pattern. Exit status 0 only if
every rank saw it. Needs nothing beyond the standard library, mf_ranks.py (beside it) and
memfabric_hybrid.
"""

import argparse
import ctypes
import multiprocessing

import memfabric_hybrid
from memfabric_hybrid import bm

from mf_ranks import run_ranks  # beside this file

SIZE = 4096
TIMEOUT = 60


def pattern(rank, salt):
    return bytes((rank * 31 + salt + i) % 251 for i in range(SIZE))


def worker(index, world_size, url, auto_ranking, barriers):
    memfabric_hybrid.initialize()
    config = bm.BmConfig()
    config.auto_ranking = auto_ranking
    if not auto_ranking:
        config.rank_id = index
    config.set_nic("tcp://127.0.0.1:1234")
    ret = bm.initialize(store_url=url, world_size=world_size, device_id=index, config=config)
    assert ret == 0, f"bm.initialize: {ret} {memfabric_hybrid.get_last_err_msg()}"
    rank = bm.bm_rank_id()
    if not auto_ranking:
        assert rank == index, (rank, index)

    handle = bm.create(id=0, local_dram_size=1 << 30, local_hbm_size=0,
                       data_op_type=bm.BmDataOpType.DEVICE_RDMA)
    ret = handle.join()
    assert ret == 0, f"join: {ret} {memfabric_hybrid.get_last_err_msg()}"
    barriers[0].wait(TIMEOUT)

    local = handle.peer_rank_ptr(rank, bm.BmMemType.HOST)
    remote = handle.peer_rank_ptr((rank + 1) % world_size, bm.BmMemType.HOST)
    assert local and remote, (local, remote)
    cpu = ctypes.create_string_buffer(pattern(rank, 0), SIZE)
    npu = ctypes.create_string_buffer(pattern(rank, 7), SIZE)  # host variant of the NPU tensor
    ret = handle.copy_data(ctypes.addressof(cpu), remote, SIZE, bm.BmCopyType.H2G)
    assert ret == 0, f"H2G: {ret} {memfabric_hybrid.get_last_err_msg()}"
    ret = handle.copy_data(ctypes.addressof(npu), remote + SIZE, SIZE, bm.BmCopyType.L2G)
    assert ret == 0, f"L2G: {ret} {memfabric_hybrid.get_last_err_msg()}"
    barriers[1].wait(TIMEOUT)

    prev = (rank - 1) % world_size
    out = ctypes.create_string_buffer(SIZE)
    ret = handle.copy_data(local, ctypes.addressof(out), SIZE, bm.BmCopyType.G2H)
    assert ret == 0 and out.raw == pattern(prev, 0), f"G2H: {ret}, rank {prev}'s data wrong"
    ret = handle.copy_data(local + SIZE, ctypes.addressof(out), SIZE, bm.BmCopyType.G2L)
    assert ret == 0 and out.raw == pattern(prev, 7), f"G2L: {ret}, rank {prev}'s data wrong"
    print(f"rank {rank}: rank {prev}'s data checked", flush=True)
    del handle
    barriers[2].wait(TIMEOUT)
    bm.uninitialize()
    memfabric_hybrid.uninitialize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--url", default="tcp://127.0.0.1:10005")
    parser.add_argument("--auto", action="store_true", help="auto ranking")
    args = parser.parse_args()
    barriers = [multiprocessing.Barrier(args.world_size) for _ in range(3)]
    run_ranks("smem_bm_example", worker, args.world_size, (args.url, args.auto, barriers),
              TIMEOUT * 2)


if __name__ == "__main__":
    main()
