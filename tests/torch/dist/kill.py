"""A rank killed mid-allreduce: the others must end with a clear error, never hang. Run by
run.sh's "kill" mode, which starts the ranks itself (torchrun would stop them first) and checks
every survivor's status and message within the watchdog."""

import os
import signal

import torch
import torch.distributed as dist

from common import init

rank, world, _ = init()
victim = world - 1
t = torch.ones(1 << 16)
for step in range(1000000):
    if rank == victim and step == 20:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(t)
    t.fill_(1)
print(f"rank {rank}: the loop ended without an error", flush=True)
