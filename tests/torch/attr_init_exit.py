"""Code written for CANN's torch binding: Manager.attr_init with the rank, the world size and
the store's address, work on the heap, then the process ends without finalize, by the end of
the interpreter (argv[1] "end") or by sys.exit(0) ("exit"), after a random pause so that the
ranks leave in any order. Every rank checks the block its left neighbour put, then prints one
line into stdout's buffer: a rank killed at its exit would lose it."""

import os
import random
import sys
import time

import torch

from shmem_torch import _library


def one(value):
    return torch.tensor([value], dtype=torch.int64)


def main():
    how = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.ops.load_library(str(_library.library_path()))
    manager = torch.classes.SymmetricMemory.Manager()
    ops = torch.classes.SymmetricMemory.Ops()
    assert manager.attr_init(rank, world, 1 << 24, os.environ["SHMEM_TEST_STORE"]) == 0
    n = 64
    target = manager.malloc([n], torch.int64)
    target.fill_(-1)
    ops.barrier()
    src = torch.arange(n, dtype=torch.int64) + 1000 * rank
    ops.put_mem(target, one(0), src, one(0), one(n), (rank + 1) % world)
    ops.barrier()
    left = (rank - 1) % world
    expect = torch.arange(n, dtype=torch.int64) + 1000 * left
    assert torch.equal(target, expect), f"rank {rank}: {target.tolist()}"
    time.sleep(random.uniform(0, 0.3))
    print(f"rank {rank} of {world}: data checked, ending by {how}")
    if how == "exit":
        sys.exit(0)


main()
