"""DDP training of a small model over "shmem" gives the same weights as over gloo (same seed,
same data), with gradient bucketing and the reducer's futures; then exits without
destroy_process_group, which must still end every rank with status 0."""

import gc

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init, same_weights

rank, world, gloo = init()


def train(group):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1 + rank)
    for _ in range(8):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randn(16, 4, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


# gloo first, and its group destroyed and dropped before the exit (common.release says why).
ref = train(gloo)
dist.destroy_process_group(gloo)
del gloo
gc.collect()
mine = train(None)
flat = same_weights("DDP", mine, ref)
print(f"rank {rank} of {world}: DDP OK ({flat.numel()} parameters)", flush=True)
# no destroy_process_group of the default group: the exit must still be clean on every rank
