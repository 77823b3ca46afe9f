"""Every collective of the "shmem" backend against gloo's result on the same data in the same
job (and, for reductions, against a reference computed from every rank's data, which every rank
can make): dtypes, sizes up to a few Mi elements, uneven all-to-all splits, every ReduceOp (AVG
against SUM scaled), async_op with get_future, point to point, and the errors it raises."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from common import data, fail, init, reference, release, same

rank, world, gloo = init()
assert dist.get_backend() == "shmem", dist.get_backend()
# Registered for CPU tensors, and CUDA ones where the heap is on the GPU (SHMEM_DEVICE=cuda).
devices = ["cpu", "cuda"] if os.environ.get("SHMEM_DEVICE") == "cuda" else ["cpu"]
if dist.Backend.backend_capability["shmem"] != devices:
    fail(f"registered for {dist.Backend.backend_capability['shmem']}, not {devices}")
t0 = time.monotonic()

OPS = {
    "SUM": ReduceOp.SUM, "AVG": ReduceOp.AVG, "PRODUCT": ReduceOp.PRODUCT, "MIN": ReduceOp.MIN,
    "MAX": ReduceOp.MAX, "BAND": ReduceOp.BAND, "BOR": ReduceOp.BOR, "BXOR": ReduceOp.BXOR,
}
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def gloo_ok(fn):
    """Runs fn(gloo); False where gloo refuses the dtype or op (before any communication)."""
    try:
        fn(gloo)
        return True
    except (RuntimeError, ValueError):
        return False


checked = 0
gloo_checked = 0


def check_allreduce(n, dtype, opname):
    global checked, gloo_checked
    t = data(rank, n, dtype, opname)
    dist.all_reduce(t, op=OPS[opname])
    want = reference(n, dtype, opname)
    exact = opname != "AVG"
    same(f"all_reduce {opname} {dtype} n={n}", t, want, exact)
    g = data(rank, n, dtype, opname)
    gop = ReduceOp.SUM if opname == "AVG" else OPS[opname]
    if gloo_ok(lambda grp: dist.all_reduce(g, op=gop, group=grp)):
        if opname == "AVG":
            g = (g.double() / world).to(dtype)
        same(f"all_reduce {opname} {dtype} n={n} vs gloo", t, g, exact)
        gloo_checked += 1
    checked += 1


# all_reduce: every dtype and every op torch defines for it.
for dtype in FLOATS + INTS + [torch.bool]:
    for opname in OPS:
        bitwise = opname in ("BAND", "BOR", "BXOR")
        if (bitwise and dtype.is_floating_point) or (opname == "AVG" and not dtype.is_floating_point):
            continue
        check_allreduce(37, dtype, opname)
# sizes
for n in (0, 1, 1000, 65537):
    check_allreduce(n, torch.float32, "SUM")
check_allreduce(3 << 20, torch.float32, "SUM")
check_allreduce(1 << 20, torch.int64, "MAX")
# large tensors are reduced in pieces: sizes that end part way through one, each element size
for dtype, opname in ((torch.float32, "SUM"), (torch.float64, "MAX"), (torch.float16, "SUM"),
                      (torch.bfloat16, "AVG"), (torch.int8, "BXOR"), (torch.int16, "MIN"),
                      (torch.int64, "PRODUCT"), (torch.uint8, "BOR"), (torch.bool, "SUM")):
    check_allreduce((5 << 19) // torch.empty(0, dtype=dtype).element_size() + 37, dtype, opname)
big = data(rank, (5 << 17) + 37, torch.float32)
dist.reduce(big, dst=world - 1)
if rank == world - 1:
    same("reduce of a large tensor", big, reference((5 << 17) + 37, torch.float32, "SUM"))

# errors: AVG on integers, bitwise on floats; never a silent wrong answer.
for bad, op, what in ((torch.zeros(3, dtype=torch.int32), ReduceOp.AVG, "AVG"),
                      (torch.zeros(3), ReduceOp.BAND, "BAND")):
    try:
        dist.all_reduce(bad, op=op)
    except RuntimeError as exc:
        if "shmem backend" not in str(exc) or what not in str(exc):
            fail(f"all_reduce {what}: unclear error {exc}")
    else:
        fail(f"all_reduce {what} on {bad.dtype} did not raise")
# PREMUL_SUM: the factor, then SUM (subgroups.py checks it against gloo's SUM scaled)
t = torch.ones(3)
dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
same("all_reduce PREMUL_SUM", t, torch.full((3,), 2.0 * world))

# complex SUM
z = torch.complex(data(rank, 9, torch.float32), data(rank + 1, 9, torch.float32))
zg = z.clone()
dist.all_reduce(z)
dist.all_reduce(zg, group=gloo)
same("all_reduce complex64", z, zg)

# async_op and get_future
t = data(rank, 1000, torch.float32)
work = dist.all_reduce(t, async_op=True)
fut = work.get_future()
got = fut.wait()
work.wait()
if not work.is_completed():
    fail("all_reduce async: work not completed after wait")
same("all_reduce async", t, reference(1000, torch.float32, "SUM"))
same("all_reduce async future value", got[0], t)
chained = fut.then(lambda f: f.value()[0] * 2).wait()
same("all_reduce future.then", chained, t * 2)

# all_reduce_coalesced (the deprecated API torch still routes to the backend)
if hasattr(dist, "all_reduce_coalesced"):
    ts = [data(rank, 5, torch.float32), data(rank, 7, torch.float32)]
    dist.all_reduce_coalesced(ts)
    same("all_reduce_coalesced[0]", ts[0], reference(5, torch.float32, "SUM"))
    same("all_reduce_coalesced[1]", ts[1], reference(7, torch.float32, "SUM"))


def both(name, fn, exact=True):
    """fn(group) returns the outputs to compare; run on shmem and gloo."""
    global gloo_checked
    got = fn(None)
    want = fn(gloo)
    for k, (a, b) in enumerate(zip(got, want)):
        same(f"{name}[{k}] vs gloo", a, b, exact)
    gloo_checked += 1


for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8):
    for n in (1, 1000, 1 << 18):
        def bcast(g, root=world - 1):
            t = data(rank, n, dtype)
            dist.broadcast(t, src=root, group=g)
            return [t]
        both(f"broadcast {dtype} {n}", bcast)

        def allgather(g):
            out = [torch.empty(n, dtype=dtype) for _ in range(world)]
            dist.all_gather(out, data(rank, n, dtype), group=g)
            return out
        both(f"all_gather {dtype} {n}", allgather)

        def allgather_base(g):
            out = torch.empty(world * n, dtype=dtype)
            dist.all_gather_into_tensor(out, data(rank, n, dtype), group=g)
            return [out]
        both(f"all_gather_into_tensor {dtype} {n}", allgather_base)

        def gather(g, root=0):
            out = [torch.empty(n, dtype=dtype) for _ in range(world)] if rank == root else None
            dist.gather(data(rank, n, dtype), out, dst=root, group=g)
            return out or []
        both(f"gather {dtype} {n}", gather)

        def scatter(g, root=world - 1):
            ins = [data(r, n, dtype) for r in range(world)] if rank == root else None
            out = torch.empty(n, dtype=dtype)
            dist.scatter(out, ins, src=root, group=g)
            return [out]
        both(f"scatter {dtype} {n}", scatter)

        def a2a_single(g):
            out = torch.empty(world * n, dtype=dtype)
            dist.all_to_all_single(out, data(rank, world * n, dtype), group=g)
            return [out]
        both(f"all_to_all_single {dtype} {n}", a2a_single)

        def a2a(g):
            ins = [data(rank * world + j, n, dtype) for j in range(world)]
            outs = [torch.empty(n, dtype=dtype) for _ in range(world)]
            dist.all_to_all(outs, ins, group=g)
            return outs
        both(f"all_to_all {dtype} {n}", a2a)
        # tensors of different sizes (gloo takes equal ones only): against what was sent
        outs = [torch.empty(n + rank, dtype=dtype) for _ in range(world)]
        dist.all_to_all(outs, [data(rank * world + j, n + j, dtype) for j in range(world)])
        for i in range(world):
            same(f"all_to_all uneven {dtype} {n} from {i}", outs[i],
                 data(i * world + rank, n + rank, dtype))

    for opname in ("SUM", "MAX", "PRODUCT"):
        n = 513

        def reduce(g, root=world // 2):
            t = data(rank, n, dtype, opname)
            dist.reduce(t, dst=root, op=OPS[opname], group=g)
            return [t] if rank == root else []
        both(f"reduce {opname} {dtype}", reduce)

        def rs(g):
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out, [data(rank * world + j, n, dtype, opname)
                                      for j in range(world)], op=OPS[opname], group=g)
            return [out]
        if gloo_ok(rs):
            both(f"reduce_scatter {opname} {dtype}", rs)
        else:
            rs(None)

        def rs_base(g):
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, data(rank, world * n, dtype, opname),
                                       op=OPS[opname], group=g)
            return [out]
        if gloo_ok(rs_base):
            both(f"reduce_scatter_tensor {opname} {dtype}", rs_base)
        else:
            # gloo lacks it on the CPU for some dtypes: against a reduce.
            full = data(rank, world * n, dtype, opname)
            dist.all_reduce(full, op=OPS[opname], group=gloo)
            same(f"reduce_scatter_tensor {opname} {dtype}", rs_base(None)[0],
                 full[rank * n:(rank + 1) * n])

# reduce_scatter_tensor with AVG against gloo's SUM scaled
out = torch.empty(100)
dist.reduce_scatter_tensor(out, data(rank, world * 100, torch.float32), op=ReduceOp.AVG)
full = data(rank, world * 100, torch.float32)
dist.all_reduce(full, group=gloo)
same("reduce_scatter_tensor AVG", out, full[rank * 100:(rank + 1) * 100] / world, exact=False)


# uneven all_to_all_single: rank i sends (i + j) % 3 * k rows of width 3 to rank j
def splits(i, j):
    return ((i + j) % 3) * (1 + i)


for width in (3, 4096):
    def a2a_uneven(g):
        ins = [splits(rank, j) for j in range(world)]
        outs = [splits(i, rank) for i in range(world)]
        inp = data(rank, sum(ins) * width, torch.float32).view(-1, width)
        out = torch.empty(sum(outs), width)
        dist.all_to_all_single(out, inp, output_split_sizes=outs, input_split_sizes=ins, group=g)
        return [out]
    both(f"all_to_all_single uneven width {width}", a2a_uneven)

# a mismatch in splits: every rank raises the same clear error
if world > 1:
    try:
        ins = [1] * world
        outs = [1] * world
        outs[0] = 2 if rank == 0 else 1
        dist.all_to_all_single(torch.empty(sum(outs)), torch.zeros(sum(ins)),
                               output_split_sizes=outs, input_split_sizes=ins)
    except RuntimeError as exc:
        if "shmem backend" not in str(exc) or "expects" not in str(exc):
            fail(f"all_to_all_single mismatch: unclear error {exc}")
    else:
        fail("all_to_all_single with mismatched splits did not raise")

# exchanges back to back, no barrier between (each one's puts must never land on data a rank
# is still reading from the one before), sizes growing and shrinking (the staging area grows
# mid-sequence): equal-split all_to_all_single, gather, scatter and uneven all_to_all_single in
# turn, each against what was sent
for step, n in enumerate((10, 1 << 17, 3, 1 << 19, 7, 1 << 17)):
    out = torch.empty(world * n)
    dist.all_to_all_single(out, data(rank * 7 + step, world * n, torch.float32))
    for i in range(world):
        same(f"all_to_all_single back to back {step} from {i}", out[i * n:(i + 1) * n],
             data(i * 7 + step, world * n, torch.float32)[rank * n:(rank + 1) * n])
    root = step % world
    got = [torch.empty(n) for _ in range(world)] if rank == root else None
    dist.gather(data(rank + step, n, torch.float32), got, dst=root)
    for i in range(world if rank == root else 0):
        same(f"gather back to back {step} from {i}", got[i], data(i + step, n, torch.float32))
    one = torch.empty(n)
    dist.scatter(one, [data(j * 3 + step, n, torch.float32) for j in range(world)]
                 if rank == root else None, src=root)
    same(f"scatter back to back {step}", one, data(rank * 3 + step, n, torch.float32))
    ins = [splits(rank, j) * (step + 1) for j in range(world)]
    outs = [splits(i, rank) * (step + 1) for i in range(world)]
    out = torch.empty(sum(outs))
    dist.all_to_all_single(out, data(rank + step, sum(ins), torch.float32),
                           output_split_sizes=outs, input_split_sizes=ins)
    at = 0
    for i in range(world):
        sent = [splits(i, j) * (step + 1) for j in range(world)]
        start = sum(sent[:rank])
        same(f"all_to_all_single uneven back to back {step} from {i}", out[at:at + outs[i]],
             data(i + step, sum(sent), torch.float32)[start:start + outs[i]])
        at += outs[i]

# equal splits: the output must be as large as the input (checked on each rank)
try:
    dist.all_to_all_single(torch.empty(2 * world), torch.zeros(world))
except (RuntimeError, ValueError) as exc:
    if "as large as the input" not in str(exc) and "shmem backend" in str(exc):
        fail(f"all_to_all_single of unequal sizes: unclear error {exc}")
else:
    fail("all_to_all_single without splits and of unequal sizes did not raise")

# all_gather_coalesced (deprecated API)
if hasattr(dist, "all_gather_coalesced"):
    def agc(g):
        outs = [[torch.empty(4), torch.empty(2)] for _ in range(world)]
        dist.all_gather_coalesced(outs, [data(rank, 4, torch.float32),
                                         data(rank, 2, torch.float32)], group=g)
        return [t for ts in outs for t in ts]
    both("all_gather_coalesced", agc)

# large collectives (blocks of 256 KiB and more: single copy between the ranks of this node,
# unless SHMEM_TORCH_DIRECT=0), each against what was sent or a reference
for dtype, opname in ((torch.float32, "SUM"), (torch.float64, "MAX"), (torch.float16, "SUM"),
                      (torch.bfloat16, "AVG"), (torch.int8, "BXOR"), (torch.int16, "MIN"),
                      (torch.int32, "BAND"), (torch.int64, "PRODUCT"), (torch.uint8, "BOR"),
                      (torch.bool, "SUM")):
    n = (5 << 17) // torch.empty(0, dtype=dtype).element_size() + 37
    out = torch.empty(n, dtype=dtype)
    dist.reduce_scatter_tensor(out, data(rank, world * n, dtype, opname), op=OPS[opname])
    same(f"reduce_scatter_tensor large {opname} {dtype}", out,
         reference(world * n, dtype, opname)[rank * n:(rank + 1) * n], opname != "AVG")
n = (1 << 18) + 5
out = torch.empty(n, dtype=torch.int32)
dist.reduce_scatter(out, [data(rank * world + j, n, torch.int32) for j in range(world)])
want = sum(data(i * world + rank, n, torch.int32) for i in range(world))
same("reduce_scatter large", out, want)
# all_reduce of a non-contiguous tensor and of a tensor smaller than a slice per rank
t = data(rank, 1 << 20, torch.float32).view(1024, 1024).t()
dist.all_reduce(t)
same("all_reduce large strided", t, reference(1 << 20, torch.float32, "SUM").view(1024, 1024).t())
# uneven all_to_all_single of large rows (blocks up to 2 MiB, some empty)
ins = [splits(rank, j) for j in range(world)]
outs = [splits(i, rank) for i in range(world)]
width = 1 << 16
out = torch.empty(sum(outs), width)
dist.all_to_all_single(out, data(rank, sum(ins) * width, torch.float32).view(-1, width),
                       output_split_sizes=outs, input_split_sizes=ins)
at = 0
for i in range(world):
    sent = [splits(i, j) for j in range(world)]
    start = sum(sent[:rank]) * width
    same(f"all_to_all_single uneven large from {i}", out[at:at + outs[i]].flatten(),
         data(i, sum(sent) * width, torch.float32)[start:start + outs[i] * width])
    at += outs[i]
# all_to_all of large tensors of different sizes, some strided
n = 1 << 17
outs = [torch.empty(n + rank, dtype=torch.float64) for _ in range(world)]
outs[-1] = torch.empty(n + rank, 2, dtype=torch.float64)[:, 1]
ins = [data(rank * world + j, n + j, torch.float64) for j in range(world)]
ins[0] = data(rank * world, 2 * (n + 0), torch.float64)[::2]
dist.all_to_all(outs, ins)
for i in range(world):
    want = data(i * world + rank, n + rank, torch.float64) if rank > 0 else \
        data(i * world, 2 * n, torch.float64)[::2]
    same(f"all_to_all large from {i}", outs[i], want)
# all_gather_into_tensor in place (the input a slice of the output, as FSDP gives it), and into
# a strided output
n = (1 << 18) + 3
full = torch.empty(world * n)
full[rank * n:(rank + 1) * n] = data(rank, n, torch.float32)
dist.all_gather_into_tensor(full, full[rank * n:(rank + 1) * n])
for i in range(world):
    same(f"all_gather_into_tensor in place from {i}", full[i * n:(i + 1) * n],
         data(i, n, torch.float32))
wide = torch.empty(world * n, 2)[:, 0]
dist.all_gather_into_tensor(wide, data(rank, n, torch.float32))
same("all_gather_into_tensor strided", wide, torch.cat([data(i, n, torch.float32)
                                                        for i in range(world)]))
# in place where the input overlaps other ranks' blocks of the output: every rank falls back
# to the staged path alike
if world > 1:
    full = torch.zeros(world * n + 1)
    src = data(rank, n, torch.float32)
    inp = full[1:n + 1]
    inp.copy_(src)
    dist.all_gather_into_tensor(full[:world * n], inp)
    for i in range(world):
        same(f"all_gather_into_tensor overlapping from {i}", full[i * n:(i + 1) * n],
             data(i, n, torch.float32))

dist.barrier()
work = dist.barrier(async_op=True)
work.wait()

# point to point: a ring both ways (isend/irecv in either order), blocking send/recv,
# recv from any source, batch_isend_irecv
if world > 1:
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    got = torch.empty(1000)
    r = dist.irecv(got, src=prv)
    s = dist.isend(data(rank, 1000, torch.float32), dst=nxt)
    s.wait()
    r.wait()
    same("isend/irecv ring", got, data(prv, 1000, torch.float32))
    # (its own tag: an any-source recv may match any message sent to this rank with its tag,
    # and the last rank's batch_isend_irecv below sends to rank 0 with the default tag)
    if rank == 0:
        seen = set()
        for _ in range(world - 1):
            t = torch.empty(3, dtype=torch.int64)
            src = dist.recv(t, tag=9)
            same(f"recv any source from {src}", t, data(src, 3, torch.int64))
            seen.add(src)
        if seen != set(range(1, world)):
            fail(f"recv from any source: got senders {sorted(seen)}")
    else:
        dist.send(data(rank, 3, torch.int64), dst=0, tag=9)
    big = torch.empty(1 << 16, dtype=torch.float64)
    ops = [dist.P2POp(dist.irecv, big, prv),
           dist.P2POp(dist.isend, data(rank, 1 << 16, torch.float64), nxt)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same("batch_isend_irecv", big, data(prv, 1 << 16, torch.float64))
    # tags received out of the order sent
    a = dist.isend(data(rank, 5, torch.float32), dst=nxt, tag=1)
    b = dist.isend(data(rank + 1, 7, torch.float32), dst=nxt, tag=2)
    t2, t1 = torch.empty(7), torch.empty(5)
    dist.recv(t2, src=prv, tag=2)
    dist.recv(t1, src=prv, tag=1)
    a.wait()
    b.wait()
    same("recv by tag [2]", t2, data(prv + 1, 7, torch.float32))
    same("recv by tag [1]", t1, data(prv, 5, torch.float32))
    # a message of many chunks, a strided one, and an empty one
    large = torch.empty(1 << 20)
    r = dist.irecv(large, src=prv)
    dist.send(data(rank, 1 << 20, torch.float32), dst=nxt)
    r.wait()
    same("send/recv of 4 MiB", large, data(prv, 1 << 20, torch.float32))
    strided = torch.empty(6, 4)[:, 1]
    r = dist.irecv(strided, src=prv)
    dist.send(data(rank, 12, torch.float32).view(6, 2)[:, 0], dst=nxt)
    r.wait()
    same("send/recv strided", strided, data(prv, 12, torch.float32).view(6, 2)[:, 0])
    r = dist.irecv(torch.empty(0), src=prv)
    dist.send(torch.empty(0), dst=nxt)
    r.wait()
    # every rank sends twice (blocking) before it receives
    for k in range(2):
        dist.send(data(rank + k, 4, torch.float32), dst=nxt, tag=3)
    for k in range(2):
        t = torch.empty(4)
        dist.recv(t, src=prv, tag=3)
        same(f"sends before recvs [{k}]", t, data(prv + k, 4, torch.float32))
    # the receiving tensor's size must match
    s = dist.isend(torch.zeros(3), dst=nxt, tag=4)
    try:
        dist.recv(torch.empty(2), src=prv, tag=4)
    except RuntimeError as exc:
        if "sent 12 bytes" not in str(exc):
            fail(f"recv of the wrong size: unclear error {exc}")
    else:
        fail("recv of the wrong size did not fail")
    s.wait()

# a second group of every rank, with its own timeout: its collectives work, and a recv that
# nobody answers fails within that timeout, naming what it waited for
short = dist.new_group(backend="shmem", timeout=timedelta(seconds=2))
t = data(rank, 10, torch.float32)
dist.all_reduce(t, group=short)
same("all_reduce on a second group", t, reference(10, torch.float32, "SUM"))
if world > 1:
    waited = time.monotonic()
    try:
        dist.recv(torch.empty(1), src=(rank + 1) % world, group=short, tag=7)
    except RuntimeError as exc:
        if "did not come within" not in str(exc) or time.monotonic() - waited > 30:
            fail(f"recv timeout: unclear error or too late: {exc}")
    else:
        fail("a recv nobody answers did not fail")
    # a message of several chunks that nobody receives: its send fails within the timeout
    if rank == 0:
        waited = time.monotonic()
        try:
            dist.isend(torch.zeros(1 << 18), dst=1, group=short, tag=8).wait()
        except RuntimeError as exc:
            if "within the group's timeout" not in str(exc) or time.monotonic() - waited > 30:
                fail(f"send timeout: unclear error or too late: {exc}")
        else:
            fail("a send nobody receives did not fail")

dist.barrier()
elapsed = time.monotonic() - t0
dist.destroy_process_group()
print(f"rank {rank} of {world}: OK ({checked} all_reduce checks, {gloo_checked} against gloo, "
      f"{elapsed:.1f} s)", flush=True)
release(globals())
