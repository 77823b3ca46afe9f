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

import numpy as np
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
from common import fail, init, release  # noqa: E402

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

NUMPY = {torch.float32: np.float32, torch.float64: np.float64, torch.int32: np.int32,
         torch.int64: np.int64}


def check(what, code):
    if code != 0:
        fail(f"{what}: the stand-in answered {code}")


def on_gpu(values, dtype, gpu=GPU):
    """A cuda:<gpu> tensor of `values` (a numpy array) in memory of the stand-in's device."""
    host = np.ascontiguousarray(values, dtype=NUMPY[dtype])
    nbytes = host.nbytes
    at = ctypes.c_uint64()
    check("cuMemAlloc", cuda.cuMemAlloc_v2(ctypes.byref(at), nbytes))
    blocks.append(at.value)
    if host.nbytes:
        check("cuMemcpy (to the device)", cuda.cuMemcpy(at.value, host.ctypes.data, host.nbytes))
    # Views only: an op that slices or copies would start torch's CUDA.
    flat = torch.utils.dlpack.from_dlpack(shmem_c.osh_dlpack_capsule(at.value, nbytes, 2, gpu))
    t = flat.view(dtype)
    assert t.device == torch.device("cuda", gpu) and t.data_ptr() == at.value
    return t if host.ndim == 1 else t.view(host.shape)


def read(t):
    """A device tensor's elements, copied out by the stand-in."""
    host = np.empty(tuple(t.shape), dtype=NUMPY[t.dtype])
    if host.nbytes:
        check("cuMemcpy (from the device)", cuda.cuMemcpy(host.ctypes.data, t.data_ptr(),
                                                          host.nbytes))
    return host


def same(name, got, want):
    want = np.asarray(want, dtype=got.dtype)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = np.flatnonzero(got.ravel() != want.ravel())[:5].tolist()
        fail(f"{name}: differs (first indices {bad}): got {got.ravel()[:8].tolist()}, "
             f"want {want.ravel()[:8].tolist()}")


def data(r, n, op="SUM"):
    """Rank r's values: small integers, exact in every dtype (products stay in -1..1)."""
    i = np.arange(n, dtype=np.int64)
    return (i + r) % 3 - 1 if op == "PRODUCT" else (i * 7 + r * 3) % 11 - 5


def reference(n, op):
    stack = np.stack([data(r, n, op) for r in range(world)])
    return {"SUM": lambda s: s.sum(0), "PRODUCT": lambda s: s.prod(0),
            "MIN": lambda s: s.min(0), "MAX": lambda s: s.max(0),
            "BAND": np.bitwise_and.reduce, "BOR": np.bitwise_or.reduce,
            "BXOR": np.bitwise_xor.reduce}[op](stack)


OPS = {"SUM": ReduceOp.SUM, "PRODUCT": ReduceOp.PRODUCT, "MIN": ReduceOp.MIN,
       "MAX": ReduceOp.MAX, "BAND": ReduceOp.BAND, "BOR": ReduceOp.BOR, "BXOR": ReduceOp.BXOR}
# 300 Ki float32 elements are 1.2 MiB: more than one piece of the backend's reductions.
SIZES = [1, 1000, 300 << 10]
checks = 0

for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
    for op, rop in OPS.items():
        if op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point:
            continue
        for n in SIZES if op == "SUM" else SIZES[:2]:
            t = on_gpu(data(rank, n, op), dtype)
            dist.all_reduce(t, op=rop)
            same(f"all_reduce {op} {dtype} n={n}", read(t), reference(n, op))
            root = n % world
            t = on_gpu(data(rank, n, op), dtype)
            dist.reduce(t, dst=root, op=rop)
            # The root gets the reduction; the others keep their tensor as they gave it.
            same(f"reduce {op} {dtype} n={n} root={root}", read(t),
                 reference(n, op) if rank == root else data(rank, n, op))
            checks += 2

for n in SIZES:
    # An async_op's Work completes with the call (its future holds the tensor).
    t = on_gpu(data(rank, n) if rank == world - 1 else np.zeros(n), torch.float32)
    work = dist.broadcast(t, src=world - 1, async_op=True)
    work.wait()
    if work.get_future().value()[0].data_ptr() != t.data_ptr():
        fail("broadcast: the future does not hold the tensor")
    same(f"broadcast n={n}", read(t), data(world - 1, n))

    mine = on_gpu(data(rank, n), torch.int32)
    out = on_gpu(np.zeros(n * world), torch.int32)
    dist.all_gather_into_tensor(out, mine)
    same(f"all_gather_into_tensor n={n}", read(out),
         np.concatenate([data(r, n) for r in range(world)]))

    outs = [on_gpu(np.zeros(n), torch.int64) for _ in range(world)]
    dist.all_gather(outs, on_gpu(data(rank, n), torch.int64))
    for r in range(world):
        same(f"all_gather n={n} from rank {r}", read(outs[r]), data(r, n))

    full = on_gpu(data(rank, n * world), torch.float32)
    out = on_gpu(np.zeros(n), torch.float32)
    dist.reduce_scatter_tensor(out, full)
    same(f"reduce_scatter_tensor n={n}", read(out), reference(n * world, "SUM")[rank * n:
                                                                                (rank + 1) * n])

    # Rank r's block for rank j: data(100 * r + j, n).
    send = on_gpu(np.concatenate([data(100 * rank + j, n) for j in range(world)]), torch.float64)
    recv = on_gpu(np.zeros(n * world), torch.float64)
    dist.all_to_all_single(recv, send)
    same(f"all_to_all_single n={n}", read(recv),
         np.concatenate([data(100 * i + rank, n) for i in range(world)]))
    checks += 5

# Uneven splits: rank r sends r + j + 1 rows of 3 to rank j.
rows = [rank + j + 1 for j in range(world)]
got_rows = [i + rank + 1 for i in range(world)]
send = on_gpu(np.concatenate([data(10 * rank + j, 3 * rows[j]) for j in range(world)])
              .reshape(-1, 3), torch.int32)
recv = on_gpu(np.zeros((sum(got_rows), 3)), torch.int32)
dist.all_to_all_single(recv, send, output_split_sizes=got_rows, input_split_sizes=rows)
same("all_to_all_single, uneven splits", read(recv),
     np.concatenate([data(10 * i + rank, 3 * got_rows[i]) for i in range(world)]).reshape(-1, 3))

# Point to point around the ring, a message larger than a mailbox's chunk among them.
for n in (5, 100 << 10):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    out = on_gpu(data(rank, n), torch.float32)
    into = on_gpu(np.zeros(n), torch.float32)
    if world > 1:
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt),
                                       dist.P2POp(dist.irecv, into, prv)])
        for req in reqs:
            req.wait()
        same(f"send/recv n={n} from rank {prv}", read(into), data(prv, n))
checks += 3

# A tensor on the other stand-in GPU than the heap's is refused before anything moves.
if world > 1:
    other = on_gpu(np.zeros(4), torch.float32, gpu=1 - GPU)
    try:
        dist.all_reduce(other)
        fail("all_reduce of a tensor on another GPU than the heap's did not raise")
    except RuntimeError as e:
        if f"the symmetric heap is on cuda:{GPU}" not in str(e):
            fail(f"all_reduce of a tensor on another GPU: unexpected error: {e}")
    # The group goes on after the refusal.
    t = on_gpu(data(rank, 7), torch.float32)
    dist.all_reduce(t)
    same("all_reduce after a refused call", read(t), reference(7, "SUM"))
    checks += 2

dist.barrier()
dist.destroy_process_group()
for at in blocks:
    check("cuMemFree", cuda.cuMemFree_v2(at))
print(f"rank {rank} of {world}: OK ({checks} checks on cuda:{GPU}, {time.monotonic() - t0:.1f} s)",
      flush=True)
release(globals())
