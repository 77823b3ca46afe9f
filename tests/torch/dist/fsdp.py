"""FSDP on CPU over "shmem" gives the same parameters as over gloo (same seed, same data, in the
same job): FSDP2 (fully_shard) on a one-dimensional "cpu" mesh, per layer and at the root, in
float32 and with bfloat16 parameters reduced in float32; at 3 ranks the shards are uneven
(padded). FSDP1 (FullyShardedDataParallel) refuses a machine without an accelerator whatever
the backend: the test checks that it raises the same error over both, so docs/pytorch.md's
quote stays true (and compares the weights instead if torch ever runs it on CPU)."""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from common import fail, init, release, same_weights

rank, world, gloo = init()


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 67), torch.nn.ReLU(),
                               torch.nn.Linear(67, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))


def steps(m, params):
    opt = torch.optim.SGD(params, lr=0.05)
    gen = torch.Generator().manual_seed(1 + rank)
    for _ in range(6):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randn(16, 4, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x).float(), y).backward()
        opt.step()


def fsdp2(group, mp):
    m = model()
    mesh = DeviceMesh.from_group(group, "cpu")
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if mp else MixedPrecisionPolicy()
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(m, mesh=mesh, mp_policy=policy)
    steps(m, m.parameters())
    return [p.full_tensor().detach().clone() for p in m.parameters()]


def fsdp1(group):
    m = FSDP(model(), process_group=group, device_id=None, use_orig_params=True)
    steps(m, m.parameters())
    with FSDP.summon_full_params(m):
        return [p.detach().clone() for p in m.parameters()]


for mp in (False, True):
    same_weights(f"FSDP2{' bf16' if mp else ''}", fsdp2(dist.group.WORLD, mp), fsdp2(gloo, mp))


def attempt(group):
    try:
        return fsdp1(group), None
    except RuntimeError as exc:
        return None, str(exc)


mine, err_mine = attempt(dist.group.WORLD)
ref, err_ref = attempt(gloo)
if err_ref is not None:
    if err_mine != err_ref:
        fail(f"FSDP1: gloo raised {err_ref!r} but shmem {err_mine!r}")
    fsdp1_said = f"refused on CPU by both: {err_ref}"
else:
    if err_mine is not None:
        fail(f"FSDP1: gloo ran but shmem raised {err_mine!r}")
    same_weights("FSDP1", mine, ref)
    fsdp1_said = "OK"
print(f"rank {rank} of {world}: FSDP2 OK (float32, bf16 params); FSDP1 {fsdp1_said}", flush=True)
dist.destroy_process_group()
release(globals())
