"""Groups of some ranks with the "shmem" backend, each against a gloo group of the same ranks on
the same data: new_group of disjoint, overlapping and strided sets (used in turn from one
thread, gloo's groups between them), sets that are no arithmetic progression ([0, 1, 3], and
split_group's [3, 0, 2] in that order, at 4 ranks), split_group (ranks in any order), a
DeviceMesh 2 x 2 (at 4 ranks), PREMUL_SUM with a number
and a tensor factor against gloo's SUM scaled, and collectives larger than a group's scratch
(SHMEM_TORCH_GROUP_SCRATCH is small here, so they go in pieces). A rank outside a group gets
torch's non-member and never calls anything on it."""

import os

os.environ.setdefault("SHMEM_TORCH_GROUP_SCRATCH", "256K")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed import ReduceOp  # noqa: E402

from common import fail, init, release, same  # noqa: E402

rank, world, gloo_world = init()


def data(r, n, dtype=torch.float32, salt=0):
    i = torch.arange(n, dtype=torch.int64)
    return ((i * 7 + r * 3 + salt) % 11 - 5).to(dtype)


def exercise(name, ranks, group, twin, salt):
    """Collectives on `group` (global ranks `ranks`, this rank among them) against `twin`
    (gloo, the same ranks)."""
    g = len(ranks)
    me = dist.get_rank(group)
    if me != ranks.index(rank) or dist.get_world_size(group) != g:
        fail(f"{name}: group rank {me} of {dist.get_world_size(group)}, want "
             f"{ranks.index(rank)} of {g}")
    for n, dtype, op in ((37, torch.float32, ReduceOp.SUM), (100003, torch.float32, ReduceOp.SUM),
                         (70001, torch.int64, ReduceOp.MAX), (9, torch.float64, ReduceOp.MIN),
                         (5, torch.bfloat16, ReduceOp.SUM)):
        a = data(rank, n, dtype, salt)
        b = a.clone()
        dist.all_reduce(a, op=op, group=group)
        dist.all_reduce(b, op=op, group=twin)
        same(f"{name}: all_reduce {n} {dtype} {op}", a, b)
    # reduce to the group's last rank
    a = data(rank, 50001, torch.float32, salt)
    b = a.clone()
    dist.reduce(a, dst=ranks[-1], group=group)
    dist.reduce(b, dst=ranks[-1], group=twin)
    if rank == ranks[-1]:
        same(f"{name}: reduce", a, b)
    # broadcast from the group's last rank, large
    a = data(rank, 120001, torch.float32, salt)
    b = a.clone()
    dist.broadcast(a, src=ranks[-1], group=group)
    dist.broadcast(b, src=ranks[-1], group=twin)
    same(f"{name}: broadcast", a, b)
    # all_gather_into_tensor, all_gather, reduce_scatter_tensor: small and large
    for n in (3, 40001):
        x = data(rank, n, torch.float32, salt)
        out = torch.empty(n * g)
        ref = torch.empty(n * g)
        dist.all_gather_into_tensor(out, x, group=group)
        dist.all_gather_into_tensor(ref, x, group=twin)
        same(f"{name}: all_gather_into_tensor {n}", out, ref)
        outs = [torch.empty(n) for _ in range(g)]
        dist.all_gather(outs, x, group=group)
        same(f"{name}: all_gather {n}", torch.cat(outs), ref)
        y = data(rank, n * g, torch.float32, salt)
        out = torch.empty(n)
        ref = torch.empty(n)
        dist.reduce_scatter_tensor(out, y, group=group)
        dist.reduce_scatter_tensor(ref, y, group=twin)
        same(f"{name}: reduce_scatter_tensor {n}", out, ref)
    # all_to_all_single, even and uneven, one large enough to go in rounds
    for rows in (2, 30001):
        x = data(rank, rows * g, torch.float32, salt)
        out = torch.empty(rows * g)
        ref = torch.empty(rows * g)
        dist.all_to_all_single(out, x, group=group)
        dist.all_to_all_single(ref, x, group=twin)
        same(f"{name}: all_to_all_single {rows}", out, ref)
    send = [(me + j) % 3 + 1 for j in range(g)]          # rows to group rank j
    recv = [(j + me) % 3 + 1 for j in range(g)]          # rows from group rank j
    x = data(rank, sum(send), torch.float32, salt)
    out = torch.empty(sum(recv))
    ref = torch.empty(sum(recv))
    dist.all_to_all_single(out, x, recv, send, group=group)
    dist.all_to_all_single(ref, x, recv, send, group=twin)
    same(f"{name}: all_to_all_single uneven", out, ref)
    # gather and scatter at the group's first rank
    x = data(rank, 7, torch.float32, salt)
    lst = [torch.empty(7) for _ in range(g)] if rank == ranks[0] else None
    dist.gather(x, lst, dst=ranks[0], group=group)
    if rank == ranks[0]:
        same(f"{name}: gather", torch.stack(lst),
             torch.stack([data(r, 7, torch.float32, salt) for r in ranks]))
    out = torch.empty(5)
    src = [data(r, 5, torch.float32, salt) for r in ranks] if rank == ranks[0] else None
    dist.scatter(out, src, src=ranks[0], group=group)
    same(f"{name}: scatter", out, data(rank, 5, torch.float32, salt))
    # point to point along the group (torch translates group ranks to global ones), async, a
    # message of several of the group's mailbox chunks
    nxt, prv = ranks[(me + 1) % g], ranks[(me - 1) % g]
    if g > 1:
        s = dist.isend(data(rank, 50001, torch.float32, salt), dst=nxt, group=group, tag=3)
        r = torch.empty(50001)
        dist.recv(r, src=prv, group=group, tag=3)
        s.wait()
        same(f"{name}: send/recv", r, data(prv, 50001, torch.float32, salt))
    # PREMUL_SUM: a number and a one-element tensor, against gloo's SUM scaled
    for factor in (2.5, torch.tensor([0.5], dtype=torch.float64)):
        a = data(rank, 1003, torch.float32, salt)
        b = a.clone()
        dist.all_reduce(a, op=dist._make_nccl_premul_sum(factor), group=group)
        dist.all_reduce(b, group=twin)
        same(f"{name}: all_reduce PREMUL_SUM {factor}", a, b * float(factor), exact=False)
    w = dist.all_reduce(torch.ones(3), group=group, async_op=True)
    w.get_future().wait()
    dist.barrier(group=group)


def member_of(ranks, group):
    if rank in ranks:
        if group == dist.GroupMember.NON_GROUP_MEMBER:
            fail(f"group {ranks}: this rank is a member but got no group")
        return True
    if group != dist.GroupMember.NON_GROUP_MEMBER:
        fail(f"group {ranks}: this rank is not a member but got a group")
    return False


def pair(ranks):
    """new_group with "shmem" and its gloo twin: every rank calls both, in the same order."""
    return dist.new_group(ranks, backend="shmem"), dist.new_group(ranks, backend="gloo")


# PREMUL_SUM on the group of all ranks: all_reduce, reduce and reduce_scatter_tensor
for factor in (3.0, torch.tensor([0.25])):
    a = data(rank, 65, torch.float32)
    b = a.clone()
    dist.all_reduce(a, op=dist._make_nccl_premul_sum(factor))
    dist.all_reduce(b, group=gloo_world)
    same(f"world PREMUL_SUM {factor}", a, b * float(factor), exact=False)
    a = data(rank, 65, torch.float64)
    b = a.clone()
    dist.reduce(a, dst=0, op=dist._make_nccl_premul_sum(factor))
    dist.reduce(b, dst=0, group=gloo_world)
    if rank == 0:
        same(f"world reduce PREMUL_SUM {factor}", a, b * float(factor), exact=False)
    y = data(rank, 4 * world, torch.float32)
    out, ref = torch.empty(4), torch.empty(4)
    dist.reduce_scatter_tensor(out, y, op=dist._make_nccl_premul_sum(factor))
    dist.reduce_scatter_tensor(ref, y, group=gloo_world)
    same(f"world reduce_scatter PREMUL_SUM {factor}", out, ref * float(factor), exact=False)
try:
    dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist._make_nccl_premul_sum(2.0))
except RuntimeError as exc:
    if "PREMUL_SUM" not in str(exc):
        fail(f"PREMUL_SUM on int32: unclear error {exc}")
else:
    fail("PREMUL_SUM on int32 did not raise")

if world >= 2:
    # disjoint pairs, made by every rank, used at once by their members
    pairs = [list(range(i, min(i + 2, world))) for i in range(0, world, 2)]
    made = [pair(p) for p in pairs]
    for p, (g, t) in zip(pairs, made):
        if member_of(p, g):
            exercise(f"pair {p}", p, g, t, 1)
    # strided: the even and the odd ranks
    strided = [list(range(0, world, 2)), list(range(1, world, 2))]
    smade = [pair(p) for p in strided]
    for p, (g, t) in zip(strided, smade):
        if member_of(p, g):
            exercise(f"strided {p}", p, g, t, 2)
    # overlapping, used in turn: all ranks but the last, then all but the first, then the first
    # again, the world's collectives and the pairs' between them
    if world >= 3:
        a_ranks, b_ranks = list(range(world - 1)), list(range(1, world))
        ga, ta = pair(a_ranks)
        gb, tb = pair(b_ranks)
        in_a, in_b = member_of(a_ranks, ga), member_of(b_ranks, gb)
        if in_a:
            exercise(f"overlapping {a_ranks}", a_ranks, ga, ta, 3)
        if in_b:
            exercise(f"overlapping {b_ranks}", b_ranks, gb, tb, 4)
        x = data(rank, 11)
        dist.all_reduce(x)
        y = data(rank, 11)
        dist.all_reduce(y, group=gloo_world)
        same("world between groups", x, y)
        for p, (g, t) in zip(pairs, made):
            if rank in p:
                exercise(f"pair {p} again", p, g, t, 5)
        if in_a:
            exercise(f"overlapping {a_ranks} again", a_ranks, ga, ta, 6)
    # a set that is no arithmetic progression: every collective against gloo (the broadcast
    # from global rank 3, group rank 2), used in turn with the pairs; rank 2 is not a member,
    # gets torch's non-member and never calls anything on it
    if world >= 4:
        odd_set = [0, 1, 3]
        go, to = pair(odd_set)
        if member_of(odd_set, go):
            exercise(f"list {odd_set}", odd_set, go, to, 8)
        for p, (g, t) in zip(pairs, made):
            if rank in p:
                exercise(f"pair {p} after {odd_set}", p, g, t, 9)
        if rank in odd_set:
            exercise(f"list {odd_set} again", odd_set, go, to, 10)
        # made by its members only (local synchronisation): the others do not wait for them
        gl = dist.new_group(odd_set, backend="shmem", use_local_synchronization=True)
        if member_of(odd_set, gl):
            x = data(rank, 29)
            dist.all_reduce(x, group=gl)
            same(f"list {odd_set} (local): all_reduce", x, sum(data(r, 29) for r in odd_set))
    # split_group: the even and odd ranks, and every rank from the last down (stride -1)
    sp = dist.split_group(split_ranks=strided)
    mine = strided[rank % 2]
    exercise(f"split {mine}", mine, sp, smade[rank % 2][1], 7)
    down = list(range(world - 1, -1, -1))
    sd = dist.split_group(split_ranks=[down])
    if dist.get_rank(sd) != world - 1 - rank:
        fail(f"split {down}: group rank {dist.get_rank(sd)}, want {world - 1 - rank}")
    x = data(rank, 13)
    dist.all_reduce(x, group=sd)
    y = data(rank, 13)
    dist.all_reduce(y, group=gloo_world)
    same(f"split {down}: all_reduce", x, y)
    x = torch.full((3,), float(rank))
    dist.broadcast(x, src=world - 1, group=sd)  # group rank 0
    same(f"split {down}: broadcast from its rank 0", x, torch.full((3,), float(world - 1)))
    # split_group of a list in no order and no progression: group rank i is global rank
    # listed[i]; rank 1 alone in the other
    if world == 4:
        listed = [3, 0, 2]
        sl = dist.split_group(split_ranks=[listed, [1]])
        if rank in listed:
            if dist.get_rank(sl) != listed.index(rank):
                fail(f"split {listed}: group rank {dist.get_rank(sl)}, want {listed.index(rank)}")
            x = data(rank, 1001)
            dist.all_reduce(x, group=sl)
            same(f"split {listed}: all_reduce", x, sum(data(r, 1001) for r in listed))
            x = data(rank, 7)
            dist.broadcast(x, src=2, group=sl)  # group rank 2
            same(f"split {listed}: broadcast", x, data(2, 7))
            out = torch.empty(3 * 4)
            dist.all_gather_into_tensor(out, data(rank, 4), group=sl)
            same(f"split {listed}: all_gather", out, torch.cat([data(r, 4) for r in listed]))

if world == 4:
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    coord = mesh.get_coordinate()
    for dim, name in enumerate(("dp", "tp")):
        g = mesh.get_group(name)
        if dist.get_backend(g) != "shmem":
            fail(f"mesh {name}: backend {dist.get_backend(g)}")
        peers = dist.get_process_group_ranks(g)
        x = data(rank, 17)
        dist.all_reduce(x, group=g)
        want = sum(data(r, 17) for r in peers)
        same(f"mesh {name} {peers}: all_reduce", x, want)
        out = torch.empty(2 * 5)
        dist.all_gather_into_tensor(out, data(rank, 5), group=g)
        same(f"mesh {name}: all_gather", out, torch.cat([data(r, 5) for r in peers]))
    if coord is None:
        fail("mesh: no coordinate")

dist.barrier()
dist.destroy_process_group()
if rank == 0:
    print(f"subgroups: {world} ranks ok", flush=True)
release(globals())
