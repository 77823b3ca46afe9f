"""One program mixing "shmem" with gloo, and the backend started again after
destroy_process_group in the same processes (the job stays; each group's scratch is its own):
  1. default group "shmem", a gloo group of all ranks: the same results;
  2. destroy, then default "cpu:gloo" and new_group(backend="shmem") of all ranks;
  3. destroy, then "cpu:shmem,cuda:gloo" (the CPU tensors' backend is "shmem");
  4. destroy, then "shmem" again (its gloo twin destroyed), and the program exits without
     destroy_process_group: status 0 on every rank.
Each init after the first gets a store of its own (a prefix of torchrun's): torchrun's store
outlives destroy_process_group, and the groups of a second init are named as the first one's
were, so a gloo group would find the old group's addresses there (gloo alone does the same)."""

import gc
import os

import torch
import torch.distributed as dist

import shmem_torch  # noqa: F401
from common import fail, same

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])


def init(backend, k):
    """init_process_group(backend) on a fresh prefix of torchrun's store."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=False)
    dist.init_process_group(backend, store=dist.PrefixStore(f"mix{k}", store), rank=rank,
                            world_size=world)


def check(label, shmem, gloo):
    """The same collectives over both groups: all_reduce, all_gather_into_tensor,
    reduce_scatter_tensor, broadcast, all_to_all_single, barrier."""
    for group_a, group_b in ((shmem, gloo), (gloo, shmem)):  # interleaved both ways
        for n in (1, 1000, 70000):
            x = torch.arange(n, dtype=torch.float32) * (rank + 1)
            a, b = x.clone(), x.clone()
            dist.all_reduce(a, group=group_a)
            dist.all_reduce(b, group=group_b)
            same(f"{label}: all_reduce {n}", a, b)
            out_a = torch.empty(n * world)
            out_b = torch.empty(n * world)
            dist.all_gather_into_tensor(out_a, x, group=group_a)
            dist.all_gather_into_tensor(out_b, x, group=group_b)
            same(f"{label}: all_gather_into_tensor {n}", out_a, out_b)
            big = torch.arange(n * world, dtype=torch.float32) + rank
            rs_a, rs_b = torch.empty(n), torch.empty(n)
            dist.reduce_scatter_tensor(rs_a, big, group=group_a)
            dist.reduce_scatter_tensor(rs_b, big, group=group_b)
            same(f"{label}: reduce_scatter_tensor {n}", rs_a, rs_b)
            c_a, c_b = x.clone(), x.clone()
            dist.broadcast(c_a, src=world - 1, group=group_a)
            dist.broadcast(c_b, src=world - 1, group=group_b)
            same(f"{label}: broadcast {n}", c_a, c_b)
            t_a, t_b = torch.empty(n * world), torch.empty(n * world)
            dist.all_to_all_single(t_a, big, group=group_a)
            dist.all_to_all_single(t_b, big, group=group_b)
            same(f"{label}: all_to_all_single {n}", t_a, t_b)
        dist.barrier(group=group_a)
        dist.barrier(group=group_b)


# 1. default "shmem", a gloo group of all ranks
dist.init_process_group("shmem")
assert dist.get_backend() == "shmem", dist.get_backend()
check("default shmem + gloo group", dist.group.WORLD, dist.new_group(backend="gloo"))
dist.destroy_process_group()

# 2. default gloo, a "shmem" group of all ranks
init("cpu:gloo", 2)
shmem = dist.new_group(backend="shmem")
if dist.get_backend(shmem) != "shmem":
    fail(f"new_group(backend='shmem') has backend {dist.get_backend(shmem)}")
check("default gloo + shmem group", shmem, dist.group.WORLD)
dist.destroy_process_group()

# 3. one group, "shmem" for CPU tensors and gloo for CUDA ones (none here)
init("cpu:shmem,cuda:gloo", 3)
pg = dist.group.WORLD
if pg._get_backend(torch.device("cpu")).name() != "shmem":
    fail(f"cpu:shmem,cuda:gloo: CPU tensors go to {pg._get_backend(torch.device('cpu')).name()}")
check("cpu:shmem,cuda:gloo against a gloo group", pg, dist.new_group(backend="gloo"))
dist.destroy_process_group()

# 4. "shmem" once more, then exit without destroy_process_group (the default group's): the gloo
# group ends first, as common.release explains
init("shmem", 4)
gloo = dist.new_group(backend="gloo")
check("shmem started again", dist.group.WORLD, gloo)
dist.destroy_process_group(gloo)
del gloo
gc.collect()
print(f"rank {rank} of {world}: gloo mixing and restarts OK", flush=True)
