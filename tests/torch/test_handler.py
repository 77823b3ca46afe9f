"""TorchSymmetricMemoryHandler: CANN's handler call patterns, its collectives at uneven sizes
(every rank gets every block), the fused operators against plain torch, and the
torch.distributed-style collectives on symmetric tensors."""

import pytest
import torch

from conftest import one
from shmem_torch import TorchSymmetricMemoryHandler as H
from shmem_torch import _library


def test_empty_takes_an_int_or_a_shape():
    a = H.empty(4, torch.int32)
    b = H.empty((2, 3), torch.bfloat16)
    assert a.shape == (4,) and b.shape == (2, 3) and b.dtype == torch.bfloat16
    H.free(b)
    H.free(a)


def test_one_sided_calls_as_cann_code_writes_them(rank, world):
    target = H.empty([world * 2], torch.float32)
    signal = H.empty([world], torch.int32)
    target.zero_()
    signal.zero_()
    H.barrier()
    src = torch.tensor([rank + 0.5, rank + 0.25])
    for pe in range(world):
        H.shmem_put_with_signal(target, one(2 * rank), src, one(0), one(2), signal, one(rank),
                                one(1, torch.int32), 0, pe)
    for pe in range(world):
        H.shmem_wait_for_signal(target, signal, one(pe), one(1, torch.int32), 0)
        assert target[2 * pe:2 * pe + 2].tolist() == [pe + 0.5, pe + 0.25]
    H.barrier()
    # shmem_put + shmem_signal_op ADD, then shmem_get of the right neighbour's copy.
    right = (rank + 1) % world
    H.shmem_put(target, one(0), torch.tensor([100.0 + rank]), one(0), one(1), right)
    H.shmem_signal_op(signal, one(0), one(10, torch.int32), 1, right)
    H.shmem_wait_for_signal(target, signal, one(0), one(11, torch.int32), 0)
    assert target[0].item() == 100.0 + (rank - 1) % world
    H.barrier()
    got = torch.zeros(1)
    H.shmem_get(got, one(0), target, one(0), one(1), right)
    assert got.item() == 100.0 + rank
    H.barrier()
    H.free(signal)
    H.free(target)


@pytest.mark.parametrize("call", ["shmem_put", "shmem_get"])
def test_target_rank_out_of_range_is_a_value_error(call, world):
    t = H.empty([2], torch.int32)
    with pytest.raises(ValueError, match=f"{call}: target_rank {world} is outside"):
        getattr(H, call)(t, one(0), t, one(0), one(1), world)
    H.free(t)


@pytest.mark.parametrize("bad", [1.0, True, "1", None])
def test_a_rank_that_is_not_an_int_is_a_type_error_naming_it(bad, rank, world):
    # Refused by the handler itself, before a float passes the range check or a bool is taken
    # for rank 1, as any argument it checks: TypeError or ValueError, never the classes' error.
    t = H.empty([2], torch.int32)
    t.fill_(-1)
    H.barrier()
    right = (rank + 1) % world
    for call in ("shmem_put", "shmem_get"):
        with pytest.raises(TypeError, match=rf"^{call}: target_rank {bad!r} is not an int$"):
            getattr(H, call)(t, one(0), torch.tensor([7, 7], dtype=torch.int32), one(0),
                             one(2), bad)
    with pytest.raises(TypeError, match=rf"^shmem_signal_op: target_rank {bad!r} is not an int$"):
        H.shmem_signal_op(t, one(0), one(1, torch.int32), 0, bad)
    with pytest.raises(TypeError, match=rf"^get_buffer: rank {bad!r} is not an int$"):
        H.rendezvous(t).get_buffer(bad, [2], torch.int32)
    with pytest.raises(TypeError, match=rf"^set_signal_pad_size: size {bad!r} is not an int$"):
        H.set_signal_pad_size(bad)
    # An integer of another kind is a rank: the same put lands on the right neighbour.
    H.shmem_put(t, one(0), torch.tensor([rank, rank], dtype=torch.int32), one(0), one(2),
                torch.tensor(right))
    H.barrier()
    assert t.tolist() == [(rank - 1) % world] * 2, "the left neighbour's put"
    H.barrier()
    H.free(t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_allgather_gives_every_rank_every_block_at_uneven_sizes(rank, world, dtype):
    sizes = [r + 1 for r in range(world)]
    out = H.empty([sum(sizes)], dtype)
    out.fill_(-1)
    for _ in range(3):  # the signal pad is reused call after call
        H.shmem_allgather(out, torch.full((sizes[rank],), rank * 10, dtype=dtype))
        expect = torch.cat([torch.full((s,), r * 10, dtype=dtype) for r, s in enumerate(sizes)])
        assert torch.equal(out, expect)
    H.barrier()
    H.free(out)


def test_allgather_refuses_an_output_of_the_wrong_size(world):
    out = H.empty([world + 1], torch.int32)
    with pytest.raises(ValueError, match=f"output_tensor has {world + 1} elements"):
        H.shmem_allgather(out, torch.zeros(1, dtype=torch.int32))
    H.free(out)


def test_alltoall_with_uneven_sizes_per_pair(rank, world):
    # Rank s sends rank d a block of (s + d + 1) elements, all of value 100 s + d.
    def count(s, d):
        return s + d + 1

    sends = [torch.full((count(rank, d),), 100 * rank + d, dtype=torch.int32)
             for d in range(world)]
    receive_list = torch.tensor([count(s, rank) for s in range(world)], dtype=torch.int64)
    # Symmetric allocations are the same size everywhere: the largest receiver's, plus 3.
    biggest = sum(count(s, world - 1) for s in range(world))
    heap = H.empty([biggest + 3], torch.int32)
    recv = heap[: int(receive_list.sum()) + 3]
    for _ in range(2):
        recv.fill_(-1)
        H.barrier()
        H.shmem_alltoall(sends, recv, receive_list)
        expect = torch.cat([torch.full((count(s, rank),), 100 * s + rank, dtype=torch.int32)
                            for s in range(world)] + [torch.full((3,), -1, dtype=torch.int32)])
        assert torch.equal(recv, expect)
    H.barrier()
    H.free(heap)


def _full_inputs(world, m, k, n, device, dtype=torch.float64):
    # Drawn on the CPU (the same numbers on every rank and device), then moved to `device`.
    g = torch.Generator(device="cpu").manual_seed(1234)
    a = torch.randn(world * m, k, generator=g, dtype=dtype, device="cpu")
    b = torch.randn(k, n, generator=g, dtype=dtype, device="cpu")
    return a.to(device), b.to(device)


@pytest.mark.parametrize("m, block_size", [(4, None), (5, 2), (3, 7), (1, 1)])
def test_fused_all_gather_matmul_matches_torch(rank, world, m, block_size, device):
    k, n = 6, 3
    a_all, b = _full_inputs(world, m, k, n, device)
    a = a_all[rank * m:(rank + 1) * m].clone()
    gather_out = H.empty([world * m, k], torch.float64)
    blocks = (m + (block_size or max(1, m // min(world, 4))) - 1) // (
        block_size or max(1, m // min(world, 4)))
    signal = H.empty([world * max(blocks, m)], torch.int32)
    signal.zero_()
    H.barrier()
    for _ in range(2):
        c = torch.zeros(world * m, n, dtype=torch.float64)
        got_gather, got_c = H.fused_all_gather_matmul(a, b, c, gather_out, signal, block_size)
        assert torch.equal(got_gather, a_all)
        torch.testing.assert_close(got_c, a_all @ b)
    H.barrier()
    H.free(signal)
    H.free(gather_out)


@pytest.mark.parametrize("reduce_op", ["sum", "avg"])
@pytest.mark.parametrize("m_per_rank, extra", [(2, 0), (3, 1)])
def test_fused_matmul_reduce_scatter_matches_torch(rank, world, reduce_op, m_per_rank, extra,
                                                  device):
    m, k, n = m_per_rank * world + extra, 5, 4
    g = torch.Generator(device="cpu").manual_seed(99)
    x1_all = torch.randn(world, m, k, generator=g, dtype=torch.float64, device="cpu").to(device)
    x2 = torch.randn(k, n, generator=g, dtype=torch.float64, device="cpu").to(device)
    rows = [m // world + (1 if i < m % world else 0) for i in range(world)]
    symm = H.empty([world * max(rows) * n], torch.float64)
    signal = H.empty([world], torch.int32)
    signal.zero_()
    H.barrier()
    for _ in range(2):
        out = H.fused_matmul_reduce_scatter(x1_all[rank], x2, symm, signal, reduce_op)
        total = sum(x1_all[r] @ x2 for r in range(world))
        if reduce_op == "avg":
            total = total / world
        start = sum(rows[:rank])
        torch.testing.assert_close(out, total[start:start + rows[rank]])
    H.barrier()
    H.free(signal)
    H.free(symm)


def test_fused_matmul_reduce_scatter_refuses_a_bad_op():
    with pytest.raises(ValueError, match="reduce_op 'max'"):
        H.fused_matmul_reduce_scatter(torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(4),
                                      torch.zeros(2, dtype=torch.int32), "max")


def test_rendezvous_gives_peer_buffers_and_signal_pads(rank, world):
    t = H.empty([4, 4], torch.float32)
    t.fill_(rank)
    handle = H.rendezvous(t)
    assert handle.rank == rank and handle.world_size == world and handle.buffer_size == 64
    handle.barrier()
    for pe in range(world):
        assert torch.equal(handle.get_buffer(pe, [4, 4], torch.float32), torch.full((4, 4), pe))
        assert torch.equal(handle.get_buffer(pe, [2], torch.float32, 14), torch.full((2,), pe))
    # Write into the right neighbour's buffer directly, then read it back there.
    right = (rank + 1) % world
    handle.barrier()
    handle.get_buffer(right, [1], torch.float32)[0] = 100 + rank
    handle.barrier()
    assert t[0, 0].item() == 100 + (rank - 1) % world
    pad = handle.get_signal_pad(rank, [4], torch.int32)
    assert pad.shape == (4,) and handle.signal_pad_size == H.get_signal_pad_size()
    with pytest.raises(ValueError, match="exceed the buffer's 64 bytes"):
        handle.get_buffer(rank, [17], torch.float32)
    handle.barrier()
    H.free(t)


def test_rendezvous_refuses_a_tensor_off_the_heap():
    with pytest.raises(RuntimeError, match="not on the symmetric heap"):
        H.rendezvous(torch.zeros(4))


def test_signal_pad_size_is_set_and_got(world):
    assert H.get_signal_pad_size() == 4096
    H.shmem_allgather(H.empty([world], torch.int32), torch.zeros(1, dtype=torch.int32))
    H.set_signal_pad_size(256)
    assert H.get_signal_pad_size() == 256
    out = H.empty([world], torch.int32)
    H.shmem_allgather(out, torch.ones(1, dtype=torch.int32))
    assert out.tolist() == [1] * world
    H.set_signal_pad_size(4096)
    with pytest.raises(ValueError, match="size 6 is not a positive multiple of 4"):
        H.set_signal_pad_size(6)


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod", "avg"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_all_reduce(rank, world, op, dtype):
    if op == "avg" and not dtype.is_floating_point:
        pytest.skip("avg of integers is not an integer")
    t = H.empty([7], dtype)
    base = torch.arange(1, 8, dtype=dtype)
    t.copy_(base + rank)
    H.all_reduce(t, op)
    stack = torch.stack([base + r for r in range(world)])
    expect = {"sum": lambda: stack.sum(0), "max": lambda: stack.amax(0),
              "min": lambda: stack.amin(0), "prod": lambda: stack.prod(0),
              "avg": lambda: stack.sum(0) / world}[op]().to(dtype)
    torch.testing.assert_close(t, expect)
    H.barrier()
    H.free(t)


@pytest.mark.parametrize("op", ["sum", "max", "avg"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_all_reduce_of_half_precision_reduces_in_float32(rank, world, op, dtype):
    t = H.empty([5], dtype)
    t.copy_(torch.arange(5, dtype=torch.float32) + rank)
    H.all_reduce(t, op)
    stack = torch.stack([torch.arange(5, dtype=torch.float32) + r for r in range(world)])
    expect = {"sum": stack.sum(0), "max": stack.amax(0), "avg": stack.sum(0) / world}[op]
    assert t.dtype == dtype
    torch.testing.assert_close(t, expect.to(dtype))
    H.barrier()
    H.free(t)


def test_all_reduce_accepts_torch_distributed_op_names():
    t = H.empty([2], torch.float32)
    t.fill_(1)
    import torch.distributed as dist

    H.all_reduce(t, dist.ReduceOp.SUM)
    assert t.tolist() == [float(H.world_size())] * 2
    H.barrier()
    H.free(t)


def test_all_gather_into_tensor_symmetric_and_in_place(rank, world):
    out = H.empty([world, 3], torch.float32)
    src = H.empty([3], torch.float32)
    src.fill_(rank)
    H.all_gather_into_tensor(out, src)
    assert torch.equal(out, torch.arange(world, dtype=torch.float32).repeat_interleave(3)
                       .view(world, 3))
    H.barrier()
    out.zero_()
    out[rank].fill_(rank + 1)
    H.all_gather_into_tensor(out, out[rank])  # input is a view of the output
    assert torch.equal(out[:, 0], torch.arange(1, world + 1, dtype=torch.float32))
    H.barrier()
    H.free(src)
    H.free(out)


def test_reduce_scatter_tensor_of_bfloat16(rank, world):
    inp = H.empty([world * 2], torch.bfloat16)
    out = torch.zeros(2, dtype=torch.bfloat16)
    inp.copy_(torch.arange(world * 2, dtype=torch.float32))
    H.reduce_scatter_tensor(out, inp)
    expect = torch.arange(rank * 2, rank * 2 + 2, dtype=torch.float32) * world
    torch.testing.assert_close(out, expect.to(torch.bfloat16))
    H.barrier()
    H.free(inp)


@pytest.mark.parametrize("op", ["sum", "avg", "max"])
def test_reduce_scatter_tensor(rank, world, op):
    inp = H.empty([world * 4], torch.float64)
    out = torch.zeros(4, dtype=torch.float64)
    inp.copy_(torch.arange(world * 4, dtype=torch.float64) * (rank + 1))
    H.reduce_scatter_tensor(out, inp, op)
    block = torch.arange(rank * 4, rank * 4 + 4, dtype=torch.float64)
    factor = {"sum": world * (world + 1) / 2, "avg": (world + 1) / 2, "max": world}[op]
    torch.testing.assert_close(out, block * factor)
    H.barrier()
    H.free(inp)


def test_all_to_all_single_even_and_uneven(rank, world):
    inp = H.empty([world * 2], torch.int64)
    out = H.empty([world * 2], torch.int64)
    inp.copy_(torch.arange(world * 2) + 100 * rank)
    H.all_to_all_single(out, inp)
    expect = torch.cat([torch.tensor([2 * rank, 2 * rank + 1]) + 100 * s for s in range(world)])
    assert torch.equal(out, expect)
    H.barrier()
    # Uneven: rank s sends d + 1 rows of 3 to rank d.
    ins = [d + 1 for d in range(world)]
    outs = [rank + 1] * world
    src = torch.cat([torch.full((d + 1, 3), 10 * rank + d) for d in range(world)])
    heap = H.empty([world * world, 3], torch.int64)
    dst = heap[: sum(outs)]
    H.all_to_all_single(dst, src, outs, ins)
    expect = torch.cat([torch.full((rank + 1, 3), 10 * s + rank) for s in range(world)])
    assert torch.equal(dst, expect)
    H.barrier()
    H.free(heap)
    H.free(out)
    H.free(inp)


def test_collectives_refuse_a_partial_group(world):
    with pytest.raises(ValueError, match="group 'tp' is not known"):
        H.all_reduce(torch.zeros(1), "sum", group="tp")


def test_a_bad_reduce_op_is_named():
    with pytest.raises(ValueError, match="reduce op 'xor'"):
        H.all_reduce(torch.zeros(1), "xor")


def test_library_is_found_and_loaded():
    assert H.is_shmem_available()
    assert _library.library_path().name == "libshmem_torch.so"
