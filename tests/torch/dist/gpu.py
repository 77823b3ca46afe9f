"""The backend on CUDA tensors on an NVIDIA GPU (SHMEM_DEVICE=cuda, the heap in GPU memory, torch's
kernels running): every collective and point-to-point call on cuda tensors against gloo's result
on the same data as CPU tensors in the same job, with what the stand-in cannot run (AVG, float16
and bfloat16, bool, complex, PREMUL_SUM, non-contiguous tensors, outputs made by torch's kernels
just before the call), CPU tensors beside them, and DDP training on the GPU giving gloo's weights
on the CPU. Each rank takes GPU (local rank modulo the GPUs), as torchrun's programs do.

ctest's torch.dist.gpu.np<N> (label gpu) and tests/torch/gpu.sh run it on a GPU machine; without
a GPU run.sh prints "SKIPPED: no GPU (...)". SHMEM_DIST_TEST_DEVICE=cpu runs the same checks on
CPU tensors (the program's own check, with no GPU)."""

import os
import time

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from common import data, fail, init, reference, release, same

if os.environ.get("SHMEM_DIST_TEST_DEVICE") == "cpu":
    dev = torch.device("cpu")
else:
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
rank, world, gloo = init()
t0 = time.monotonic()
checks = 0

OPS = {"SUM": ReduceOp.SUM, "AVG": ReduceOp.AVG, "PRODUCT": ReduceOp.PRODUCT,
       "MIN": ReduceOp.MIN, "MAX": ReduceOp.MAX, "BAND": ReduceOp.BAND, "BOR": ReduceOp.BOR,
       "BXOR": ReduceOp.BXOR}


def check(name, got, want, exact=True):
    """`got` (on the device) as `want` (on the CPU)."""
    global checks
    if got.device != dev:
        fail(f"{name}: the result is on {got.device}, not {dev}")
    same(name, got.cpu(), want, exact)
    checks += 1


def gloo_reduce(t, op):
    """gloo's all_reduce of a CPU tensor with `op` (AVG as SUM, then divided)."""
    out = t.clone()
    dist.all_reduce(out, op=ReduceOp.SUM if op == "AVG" else OPS[op], group=gloo)
    return (out.double() / world).to(t.dtype) if op == "AVG" else out


# all_reduce: the dtypes and ops torch's CPU backends take; sizes in one piece and in several.
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
              torch.int32, torch.int64, torch.uint8, torch.bool):
    for op in OPS:
        if (op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point) or \
                (op == "AVG" and not dtype.is_floating_point):
            continue
        if dtype == torch.bool and op not in ("SUM", "PRODUCT", "MIN", "MAX"):
            continue
        for n in (37, 300 << 10) if op in ("SUM", "AVG") else (37,):
            t = data(rank, n, dtype, op).to(dev)
            dist.all_reduce(t, op=OPS[op])
            check(f"all_reduce {op} {dtype} n={n}", t, reference(n, dtype, op),
                  exact=op != "AVG")

# A tensor a kernel fills just before the call (torch's current stream), consumed by a kernel
# just after it: the backend waits for the one and is done before the other.
t = torch.full((1 << 20,), float(rank + 1), device=dev) * 2
dist.all_reduce(t)
check("all_reduce after and before kernels", t * 3,
      torch.full((1 << 20,), 6.0 * sum(r + 1 for r in range(world))))
# Not contiguous; complex; PREMUL_SUM; CPU tensors beside the GPU heap.
m = data(rank, 64 * 48, torch.float32).view(64, 48).to(dev).t()
dist.all_reduce(m)
check("all_reduce of a transposed tensor", m,
      gloo_reduce(data(rank, 64 * 48, torch.float32).view(64, 48), "SUM").t())
z = torch.complex(data(rank, 9, torch.float32), data(rank + 1, 9, torch.float32))
zg = z.clone()
dist.all_reduce(zg, group=gloo)
z = z.to(dev)
dist.all_reduce(z)
check("all_reduce complex64", z, zg)
t = torch.ones(3, device=dev)
dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
check("all_reduce PREMUL_SUM", t, torch.full((3,), 2.0 * world))
c = data(rank, 1000, torch.float32)
dist.all_reduce(c)
same("all_reduce of a CPU tensor beside the GPU heap", c, gloo_reduce(data(rank, 1000,
                                                                            torch.float32), "SUM"))
# async_op: the work's future holds the device tensor.
t = data(rank, 1000, torch.float32).to(dev)
work = dist.all_reduce(t, async_op=True)
got = work.get_future().wait()
check("all_reduce async future", got[0], gloo_reduce(data(rank, 1000, torch.float32), "SUM"))


def both(name, fn, exact=True):
    """fn(group, device) returns the outputs: on the device over "shmem", on the CPU over gloo."""
    got = fn(None, dev)
    want = fn(gloo, torch.device("cpu"))
    for k, (a, b) in enumerate(zip(got, want)):
        check(f"{name}[{k}]", a, b, exact)


for dtype in (torch.float32, torch.bfloat16, torch.int64):
    for n in (1, 1000, 1 << 18):
        def bcast(g, d, root=world - 1):
            t = data(rank, n, dtype).to(d)
            dist.broadcast(t, src=root, group=g)
            return [t]
        both(f"broadcast {dtype} {n}", bcast)

        def allgather(g, d):
            out = [torch.empty(n, dtype=dtype, device=d) for _ in range(world)]
            dist.all_gather(out, data(rank, n, dtype).to(d), group=g)
            return out
        both(f"all_gather {dtype} {n}", allgather)

        def allgather_base(g, d):
            out = torch.empty(world * n, dtype=dtype, device=d)
            dist.all_gather_into_tensor(out, data(rank, n, dtype).to(d), group=g)
            return [out]
        both(f"all_gather_into_tensor {dtype} {n}", allgather_base)

        def gather(g, d, root=0):
            out = [torch.empty(n, dtype=dtype, device=d) for _ in range(world)] \
                if rank == root else None
            dist.gather(data(rank, n, dtype).to(d), out, dst=root, group=g)
            return out or []
        both(f"gather {dtype} {n}", gather)

        def scatter(g, d, root=world - 1):
            ins = [data(r, n, dtype).to(d) for r in range(world)] if rank == root else None
            out = torch.empty(n, dtype=dtype, device=d)
            dist.scatter(out, ins, src=root, group=g)
            return [out]
        both(f"scatter {dtype} {n}", scatter)

        def a2a_single(g, d):
            out = torch.empty(world * n, dtype=dtype, device=d)
            dist.all_to_all_single(out, data(rank, world * n, dtype).to(d), group=g)
            return [out]
        both(f"all_to_all_single {dtype} {n}", a2a_single)

        def a2a(g, d):
            outs = [torch.empty(n, dtype=dtype, device=d) for _ in range(world)]
            dist.all_to_all(outs, [data(rank * world + j, n, dtype).to(d) for j in range(world)],
                            group=g)
            return outs
        both(f"all_to_all {dtype} {n}", a2a)

for op in ("SUM", "MAX"):
    def reduce(g, d, root=world // 2):
        t = data(rank, 513, torch.float32, op).to(d)
        dist.reduce(t, dst=root, op=OPS[op], group=g)
        return [t] if rank == root else []
    both(f"reduce {op}", reduce)

    def rs_base(g, d):
        out = torch.empty(513, device=d)
        dist.reduce_scatter_tensor(out, data(rank, world * 513, torch.float32, op).to(d),
                                   op=OPS[op], group=g)
        return [out]
    both(f"reduce_scatter_tensor {op}", rs_base)

    def rs(g, d):
        out = torch.empty(513, device=d)
        dist.reduce_scatter(out, [data(rank * world + j, 513, torch.float32, op).to(d)
                                  for j in range(world)], op=OPS[op], group=g)
        return [out]
    both(f"reduce_scatter {op}", rs)
# reduce_scatter_tensor with AVG in bfloat16: against gloo's SUM of the float32 values, scaled.
out = torch.empty(100, dtype=torch.bfloat16, device=dev)
dist.reduce_scatter_tensor(out, data(rank, world * 100, torch.bfloat16).to(dev), op=ReduceOp.AVG)
full = gloo_reduce(data(rank, world * 100, torch.float32), "SUM")
check("reduce_scatter_tensor AVG bfloat16", out,
      (full[rank * 100:(rank + 1) * 100] / world).to(torch.bfloat16), exact=False)


# Uneven all_to_all_single: rank i sends ((i + j) % 3) * (1 + i) rows of 5 to rank j.
def a2a_uneven(g, d):
    ins = [((rank + j) % 3) * (1 + rank) for j in range(world)]
    outs = [((i + rank) % 3) * (1 + i) for i in range(world)]
    out = torch.empty(sum(outs), 5, device=d)
    dist.all_to_all_single(out, data(rank, sum(ins) * 5, torch.float32).view(-1, 5).to(d),
                           output_split_sizes=outs, input_split_sizes=ins, group=g)
    return [out]


both("all_to_all_single uneven", a2a_uneven)

# Point to point around the ring: a message larger than a mailbox chunk, and recv from any source.
if world > 1:
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    for n in (5, 300 << 10):
        into = torch.empty(n, device=dev)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, data(rank, n, torch.float32).to(dev),
                                                  nxt),
                                       dist.P2POp(dist.irecv, into, prv)])
        for req in reqs:
            req.wait()
        check(f"send/recv n={n} from rank {prv}", into, data(prv, n, torch.float32))
    if rank == 0:
        for _ in range(world - 1):
            into = torch.empty(7, device=dev)
            src = dist.recv(into)
            check(f"recv from any source (rank {src})", into, data(src, 7, torch.float32))
    else:
        dist.send(data(rank, 7, torch.float32).to(dev), dst=0)


# DDP on the device over "shmem" against DDP on the CPU over gloo, the same seed and data.
def train(group, d):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4)).to(d)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group,
                                                    bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1 + rank)
    for _ in range(6):
        x = torch.randn(16, 32, generator=gen).to(d)
        y = torch.randn(16, 4, generator=gen).to(d)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


ref = train(gloo, torch.device("cpu"))
mine = train(None, dev)
for k, (a, b) in enumerate(zip(mine, ref)):
    if not torch.allclose(a, b, rtol=1e-4, atol=1e-5):
        fail(f"DDP on {dev}: parameter {k}: max difference {(a - b).abs().max().item()}")
checks += 1

dist.destroy_process_group()
print(f"rank {rank} of {world}: OK ({checks} checks on {dev}, {time.monotonic() - t0:.1f} s)",
      flush=True)
release(globals())
