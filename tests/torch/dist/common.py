"""Start-up shared by the torch.distributed backend's test programs: the default group is
"shmem", started from torch's rendezvous (torchrun's env://; under shmemrun the one line
docs/pytorch.md gives, with SHMEM_DIST_TEST_PORT naming the port; under Open MPI's mpirun its
line for mpirun, with MASTER_ADDR and MASTER_PORT passed by run.sh), and a gloo group of the same
ranks for reference results."""

import functools
import gc
import os
import sys

import torch
import torch.distributed as dist

import shmem_torch  # noqa: F401  (registers "shmem")


def init():
    if "SHMEM_RUN_RANK" in os.environ and "RANK" not in os.environ:
        port = os.environ["SHMEM_DIST_TEST_PORT"]
        dist.init_process_group(
            "shmem",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=int(os.environ["SHMEM_RUN_RANK"]),
            world_size=int(os.environ["SHMEM_RUN_SIZE"]),
        )
    elif "OMPI_COMM_WORLD_RANK" in os.environ and "RANK" not in os.environ:
        dist.init_process_group(
            "shmem",
            init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
            rank=int(os.environ["OMPI_COMM_WORLD_RANK"]),
            world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]),
        )
    else:
        dist.init_process_group("shmem")
    gloo = dist.new_group(backend="gloo")
    return dist.get_rank(), dist.get_world_size(), gloo


def release(program):
    """The last line of a program that used gloo groups and destroyed its groups: drops what
    the program holds (`program`, its globals) and collects, so that the gloo groups end here,
    each joining its worker threads while the interpreter runs (torch releases the interpreter
    lock while a group ends). Left to Python's shutdown, a gloo worker that still holds a
    finished work, whose tensors hold Python objects, needs the interpreter after it stopped
    serving threads, and the process aborts ("terminate called without an active exception"
    from ProcessGroupGloo::runLoop): torch's gloo at exit, whatever the default backend
    (docs/pytorch.md, "Mixing with gloo")."""
    program.clear()
    gc.collect()


def fail(msg):
    print(f"rank {dist.get_rank()}: FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def same_weights(name, mine, ref):
    """Trained parameters `mine` as gloo's `ref`, and alike on every rank (returns them flat)."""
    for k, (a, b) in enumerate(zip(mine, ref)):
        if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
            fail(f"{name}: parameter {k}: max difference {(a - b).abs().max().item()}")
    flat = torch.cat([p.flatten() for p in mine])
    first = flat.clone()
    dist.broadcast(first, src=0)
    if not torch.equal(first, flat):
        fail(f"{name}: ranks disagree on the weights")
    return flat


def same(name, got, want, exact=True):
    if got.dtype != want.dtype or got.shape != want.shape:
        fail(f"{name}: got {got.dtype} {tuple(got.shape)}, want {want.dtype} {tuple(want.shape)}")
    if exact:
        ok = torch.equal(got, want)
    else:
        ok = torch.allclose(got.double(), want.double(), rtol=1e-2, atol=1e-2)
    if not ok:
        diff = (got != want).nonzero()[:5].flatten().tolist()
        fail(f"{name}: differs (first indices {diff}): got {got.flatten()[:8].tolist()}, "
             f"want {want.flatten()[:8].tolist()}")


def data(r, n, dtype, op="SUM"):
    """Rank r's tensor: small integers, exact in every dtype and op (products stay in -1..1)."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool:
        return (i + r) % 3 == 0
    if op == "PRODUCT":
        v = (i + r) % 3 - (0 if dtype == torch.uint8 else 1)
    elif dtype == torch.uint8:
        v = (i * 7 + r * 3) % 11
    else:
        v = (i * 7 + r * 3) % 11 - 5
    return v.to(dtype)


def reference(n, dtype, op):
    """`op` (a ReduceOp's name; AVG the mean) over every rank's data(r, n, dtype, op), computed
    in int64 or float64 and given in `dtype` (bool's SUM is OR, its PRODUCT AND)."""
    world = dist.get_world_size()
    stack = torch.stack([data(r, n, dtype, op).to(torch.int64 if not dtype.is_floating_point
                                                    else torch.float64) for r in range(world)])
    if op in ("SUM", "AVG"):
        out = stack.sum(0)
        if dtype == torch.bool:
            out = out != 0
        if op == "AVG":
            out = out / world
    elif op == "PRODUCT":
        out = stack.prod(0)
        if dtype == torch.bool:
            out = out != 0
    elif op == "MIN":
        out = stack.amin(0)
    elif op == "MAX":
        out = stack.amax(0)
    else:
        f = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[op]
        out = functools.reduce(f, list(stack))
    return out.to(dtype)
