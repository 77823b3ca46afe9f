"""DDP training of a small model over "shmem" gives the same weights as over gloo (same seed,
same data), with gradient bucketing and the reducer's futures; then exits without
destroy_process_group, which must still end every rank with status 0."""

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


mine = train(None)
ref = train(gloo)
flat = same_weights("DDP", mine, ref)
print(f"rank {rank} of {world}: DDP OK ({flat.numel()} parameters)", flush=True)
# The gloo reference group goes first: gloo's worker threads drop their last work (and the Python
# state it holds) on their own, and one doing so while the interpreter shuts down is ended by
# Python mid-destructor, which aborts the process ("terminate called without an active
# exception" from ProcessGroupGloo::runLoop). That is torch's gloo at exit, not this backend.
dist.destroy_process_group(gloo)
# No destroy_process_group for "shmem": the exit must still be clean on every rank.
