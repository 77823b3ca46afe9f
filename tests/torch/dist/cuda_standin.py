"""The backend's CUDA tensors, with the symmetric heap in GPU memory, over the CUDA driver's
stand-in (tests/cuda): no GPU here. ctest's torch.dist.cuda_standin.np<N> runs this program with
SHMEM_DEVICE=cuda, two stand-in devices (rank r's heap on cuda:r%2) and CUDA_STANDIN_STRICT=1, so
a CPU load or store of device memory is a crash.

Its cuda tensors are the stand-in's device memory (cuMemAlloc), made tensors through DLPack, and
the bytes go in and out with the driver's own copies: torch itself runs nothing on them (it finds
no GPU here). So the calls checked are those whose path runs no torch kernel on the device:
all_reduce and reduce (SUM, PRODUCT, MIN, MAX and the bitwise ops; float32, float64, int32,
int64; sizes that go through the scratch in one piece and in several), broadcast,
all_gather_into_tensor, all_gather, reduce_scatter_tensor, all_to_all_single (even and uneven
splits), send and recv, and the refusal of a tensor on another GPU than the heap's. Every result
is checked against one computed here from every rank's data. The backend on a real GPU, where
torch's kernels run too (AVG, float16, non-contiguous tensors, DDP), is ctest's torch.gpu.*
(label gpu)."""

import ctypes
import os
import time

import torch

# A CUDA tensor made through DLPack asks torch to start CUDA, which finds no GPU here: the start
# is skipped (nothing here runs a torch op on the device).
torch.cuda._lazy_init = lambda: None
# torch.distributed's broadcast asks a CUDA tensor's device for its compute capability (a choice
# for float8 on NCCL): the stand-in's answer, without asking torch's CUDA.
torch.cuda.get_device_capability = lambda device=None: (9, 0)

import torch.distributed as dist  # noqa: E402
from torch.distributed import ReduceOp  # noqa: E402

import shmem._shmem as shmem_c  # noqa: E402  (the shmem wheel's extension: DLPack capsules)
from common import data, fail, init, reference, release, same  # noqa: E402

rank, world, _gloo = init()
assert dist.get_backend() == "shmem", dist.get_backend()
# SHMEM_DEVICE=cuda at import: registered for CUDA tensors too.
if dist.Backend.backend_capability["shmem"] != ["cpu", "cuda"]:
    fail(f"registered for {dist.Backend.backend_capability['shmem']}, not ['cpu', 'cuda']")
t0 = time.monotonic()

# The stand-in, as the library loaded it (the same path: the same library in this process).
cuda = ctypes.CDLL(os.environ["SHMEM_CUDA_LIBRARY"])
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
cuda.cuMemcpy.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t]
GPU = rank % 2  # the heap's GPU (local rank modulo the stand-in's two devices)
blocks = []  # every block cuMemAlloc gave, freed at the end

def check(what, code):
    if code != 0:
        fail(f"{what}: the stand-in answered {code}")


def on_gpu(values, gpu=GPU):
    """A cuda:<gpu> tensor holding `values` (a CPU tensor) in the stand-in device's memory."""
    host = values.contiguous()
    at = ctypes.c_uint64()
    check("cuMemAlloc", cuda.cuMemAlloc_v2(ctypes.byref(at), host.nbytes))
    blocks.append(at.value)
    check("cuMemcpy (to the device)", cuda.cuMemcpy(at.value, host.data_ptr(), host.nbytes))
    # Views only: an op that slices or copies would start torch's CUDA.
    flat = torch.utils.dlpack.from_dlpack(shmem_c.osh_dlpack_capsule(at.value, host.nbytes, 2,
                                                                     gpu))
    t = flat.view(host.dtype)
    assert t.device == torch.device("cuda", gpu) and t.data_ptr() == at.value
    return t if host.dim() == 1 else t.view(host.shape)


def read(t):
    """A device tensor's elements, copied out by the stand-in into a CPU tensor."""
    host = torch.empty(tuple(t.shape), dtype=t.dtype)
    check("cuMemcpy (from the device)", cuda.cuMemcpy(host.data_ptr(), t.data_ptr(), host.nbytes))
    return host


OPS = {"SUM": ReduceOp.SUM, "PRODUCT": ReduceOp.PRODUCT, "MIN": ReduceOp.MIN,
       "MAX": ReduceOp.MAX, "BAND": ReduceOp.BAND, "BOR": ReduceOp.BOR, "BXOR": ReduceOp.BXOR}
# 300 Ki float32 elements are 1.2 MiB: more than one piece of the backend's reductions.
SIZES = [1, 1000, 300 << 10]
checks = 0
F32, F64, I32, I64 = torch.float32, torch.float64, torch.int32, torch.int64

for dtype in (F32, F64, I32, I64):
    for op, rop in OPS.items():
        if op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point:
            continue
        for n in SIZES if op == "SUM" else SIZES[:2]:
            t = on_gpu(data(rank, n, dtype, op))
            dist.all_reduce(t, op=rop)
            same(f"all_reduce {op} {dtype} n={n}", read(t), reference(n, dtype, op))
            root = n % world
            t = on_gpu(data(rank, n, dtype, op))
            dist.reduce(t, dst=root, op=rop)
            # The root gets the reduction; the others keep their tensor as they gave it.
            same(f"reduce {op} {dtype} n={n} root={root}", read(t),
                 reference(n, dtype, op) if rank == root else data(rank, n, dtype, op))
            checks += 2

for n in SIZES:
    # An async_op's Work completes with the call (its future holds the tensor).
    t = on_gpu(data(rank, n, F32) if rank == world - 1 else torch.zeros(n))
    work = dist.broadcast(t, src=world - 1, async_op=True)
    work.wait()
    if work.get_future().value()[0].data_ptr() != t.data_ptr():
        fail("broadcast: the future does not hold the tensor")
    same(f"broadcast n={n}", read(t), data(world - 1, n, F32))

    mine = on_gpu(data(rank, n, I32))
    out = on_gpu(torch.zeros(n * world, dtype=I32))
    dist.all_gather_into_tensor(out, mine)
    same(f"all_gather_into_tensor n={n}", read(out),
         torch.cat([data(r, n, I32) for r in range(world)]))

    outs = [on_gpu(torch.zeros(n, dtype=I64)) for _ in range(world)]
    dist.all_gather(outs, on_gpu(data(rank, n, I64)))
    for r in range(world):
        same(f"all_gather n={n} from rank {r}", read(outs[r]), data(r, n, I64))

    full = on_gpu(data(rank, n * world, F32))
    out = on_gpu(torch.zeros(n))
    dist.reduce_scatter_tensor(out, full)
    same(f"reduce_scatter_tensor n={n}", read(out),
         reference(n * world, F32, "SUM")[rank * n:(rank + 1) * n])

    # Rank r's block for rank j: data(100 * r + j, n).
    send = on_gpu(torch.cat([data(100 * rank + j, n, F64) for j in range(world)]))
    recv = on_gpu(torch.zeros(n * world, dtype=F64))
    dist.all_to_all_single(recv, send)
    same(f"all_to_all_single n={n}", read(recv),
         torch.cat([data(100 * i + rank, n, F64) for i in range(world)]))
    checks += 5

# Uneven splits: rank r sends r + j + 1 rows of 3 to rank j.
rows = [rank + j + 1 for j in range(world)]
got_rows = [i + rank + 1 for i in range(world)]
send = on_gpu(torch.cat([data(10 * rank + j, 3 * rows[j], I32) for j in range(world)]).view(-1, 3))
recv = on_gpu(torch.zeros(sum(got_rows), 3, dtype=I32))
dist.all_to_all_single(recv, send, output_split_sizes=got_rows, input_split_sizes=rows)
same("all_to_all_single, uneven splits", read(recv),
     torch.cat([data(10 * i + rank, 3 * got_rows[i], I32) for i in range(world)]).view(-1, 3))

# Point to point around the ring, a message larger than a mailbox's chunk among them.
for n in (5, 100 << 10):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    out = on_gpu(data(rank, n, F32))
    into = on_gpu(torch.zeros(n))
    if world > 1:
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt),
                                       dist.P2POp(dist.irecv, into, prv)])
        for req in reqs:
            req.wait()
        same(f"send/recv n={n} from rank {prv}", read(into), data(prv, n, F32))
checks += 3

# A tensor on the other stand-in GPU than the heap's is refused before anything moves.
if world > 1:
    other = on_gpu(torch.zeros(4), gpu=1 - GPU)
    try:
        dist.all_reduce(other)
        fail("all_reduce of a tensor on another GPU than the heap's did not raise")
    except RuntimeError as e:
        if f"the symmetric heap is on cuda:{GPU}" not in str(e):
            fail(f"all_reduce of a tensor on another GPU: unexpected error: {e}")
    # The group goes on after the refusal.
    t = on_gpu(data(rank, 7, F32))
    dist.all_reduce(t)
    same("all_reduce after a refused call", read(t), reference(7, F32, "SUM"))
    checks += 2

dist.barrier()
dist.destroy_process_group()
for at in blocks:
    check("cuMemFree", cuda.cuMemFree_v2(at))
print(f"rank {rank} of {world}: OK ({checks} checks on cuda:{GPU}, {time.monotonic() - t0:.1f} s)",
      flush=True)
release(globals())
