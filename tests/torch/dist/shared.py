"""The backend shares the process's one SHMEM job: the program starts the library first (the
shmem_torch handler, the launcher's way), then torch.distributed over "shmem" runs on the same
PEs, and both are used in turn."""

import torch
import torch.distributed as dist
from shmem_torch import TorchSymmetricMemoryHandler as H

from common import fail

me, world = H.rank(), H.world_size()
x = H.empty([8], torch.float32)  # starts the job
x.fill_(me + 1)
H.all_reduce(x)
dist.init_process_group("shmem")
if (dist.get_rank(), dist.get_world_size()) != (me, world):
    fail(f"torch's rank/size {dist.get_rank()}/{dist.get_world_size()} differ from {me}/{world}")
t = torch.full([1000], float(me + 1))
dist.all_reduce(t)
want = world * (world + 1) / 2
if not (torch.all(t == want) and torch.all(x == want)):
    fail(f"shared job: got {t[0].item()} and {x[0].item()}, want {want}")
dist.destroy_process_group()
H.barrier()
H.free(x)
H.finalize()
print(f"rank {me} of {world}: shared job OK", flush=True)
