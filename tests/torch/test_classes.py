"""torch.classes.SymmetricMemory.{Manager,Ops} used the way code written for CANN's torch
binding uses them: torch.ops.load_library, then the classes, offsets and sizes as one-element
tensors, signal op 0 SET / 1 ADD, compare op 0 EQ. On the heap's device: CPU tensors, or a GPU's
(conftest makes it torch's default device there)."""

import pytest
import torch

from conftest import one
from shmem_torch import _library


@pytest.fixture
def manager():
    torch.ops.load_library(str(_library.library_path()))
    return torch.classes.SymmetricMemory.Manager()


@pytest.fixture
def ops():
    return torch.classes.SymmetricMemory.Ops()


def test_classes_load_and_name_themselves(manager, ops):
    assert manager.get_name() == "Manager"
    assert ops.get_name() == "Ops"
    assert manager.init_status() == 2


def test_attr_init_on_a_running_job_is_a_no_op(manager, rank, world):
    assert manager.attr_init(rank, world, 1 << 20, "tcp://127.0.0.1:1") == 0


def test_malloc_gives_a_symmetric_tensor_on_the_heaps_device(manager, ops, rank, world, device):
    t = manager.malloc([3, 5], torch.float32)
    assert t.shape == (3, 5) and t.dtype == torch.float32 and t.device == device
    t.fill_(rank)
    ops.barrier()
    for pe in range(world):
        assert torch.equal(manager.peer_tensor(t, pe), torch.full((3, 5), float(pe)))
    ops.barrier()
    manager.free(t)


def test_put_mem_lands_on_the_right_neighbour(manager, ops, rank, world):
    n = 16
    target = manager.malloc([2 * n], torch.int32)
    target.fill_(-1)
    src = torch.arange(n, dtype=torch.int32) + 100 * rank
    ops.barrier()
    right = (rank + 1) % world
    # Elements 4..11 of src go to elements n+2.. of the right neighbour's target.
    ops.put_mem(target, one(n + 2), src, one(4), one(8), right)
    ops.barrier()
    left = (rank - 1) % world
    expect = torch.full((2 * n,), -1, dtype=torch.int32)
    expect[n + 2:n + 10] = torch.arange(4, 12, dtype=torch.int32) + 100 * left
    assert torch.equal(target, expect)
    ops.barrier()
    manager.free(target)


def test_get_mem_reads_every_rank(manager, ops, rank, world):
    src = manager.malloc([8], torch.float64)
    src.copy_(torch.arange(8, dtype=torch.float64) * (rank + 1))
    ops.barrier()
    for pe in range(world):
        got = torch.zeros(4, dtype=torch.float64)
        ops.get_mem(got, one(1), src, one(2), one(3), pe)
        assert torch.equal(got, torch.tensor([0.0, 2, 3, 4]) * torch.tensor([0.0, 1, 1, 1])
                           * (pe + 1))
    ops.barrier()
    manager.free(src)


def test_put_mem_signal_then_wait_eq(manager, ops, rank, world):
    data = manager.malloc([world, 4], torch.int64)
    signal = manager.malloc([world], torch.int32)
    data.zero_()
    signal.zero_()
    ops.barrier()
    src = torch.full((4,), 10 + rank, dtype=torch.int64)
    for pe in range(world):
        # Row `rank` of every PE's data, then signal slot `rank` there set to 1.
        ops.put_mem_signal(data, one(rank * 4), src, one(0), one(4), signal, one(rank),
                           one(1, torch.int32), 0, pe)
    for pe in range(world):
        ops.signal_wait_until(data, signal, one(pe), one(1, torch.int32), 0)
        assert torch.equal(data[pe], torch.full((4,), 10 + pe, dtype=torch.int64))
    ops.barrier()
    manager.free(signal)
    manager.free(data)


def test_signal_op_add_from_every_rank(manager, ops, rank, world):
    signal = manager.malloc([2], torch.int32)
    signal.zero_()
    ops.barrier()
    for pe in range(world):
        ops.signal_op(signal, one(1), one(rank + 1, torch.int32), 1, pe)
    total = world * (world + 1) // 2
    ops.signal_wait_until(signal, signal, one(1), one(total, torch.int32), 0)
    assert signal.tolist() == [0, total]
    ops.barrier()
    # SET overwrites: the left neighbour sets slot 0 to its rank + 7.
    ops.signal_op(signal, one(0), one(rank + 7, torch.int32), 0, (rank + 1) % world)
    ops.signal_wait_until(signal, signal, one(0), one((rank - 1) % world + 7, torch.int32), 0)
    ops.barrier()
    manager.free(signal)


@pytest.mark.parametrize("call, args, message", [
    ("put_mem", lambda t, s: (t, one(0), s, one(0), one(4), 99), "target_pe 99"),
    ("put_mem", lambda t, s: (t, one(6), s, one(0), one(4), 0), "exceeds its 8 elements"),
    ("put_mem", lambda t, s: (s, one(0), t, one(0), one(2), 0), "not on the symmetric heap"),
    ("put_mem", lambda t, s: (t, torch.tensor([0, 1]), s, one(0), one(1), 0),
     "target_offset must hold one element"),
    ("get_mem", lambda t, s: (s, one(0), t, one(-1), one(1), 0), "src offset -1"),
    ("put_mem_signal", lambda t, s: (t, one(0), s, one(0), one(1), t.view(torch.float32),
                                     one(0), one(1, torch.int32), 0, 0),
     "signal must be an int32"),
    ("put_mem_signal", lambda t, s: (t, one(0), s, one(0), one(1), t, one(8),
                                     one(1, torch.int32), 0, 0), "signal offset 8"),
])
def test_bad_arguments_name_the_call_and_value(manager, ops, call, args, message):
    target = manager.malloc([8], torch.int32)
    local = torch.zeros(8, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=message) as err:
        getattr(ops, call)(*args(target, local))
    assert f"SymmetricMemory.Ops.{call}" in str(err.value)
    manager.free(target)


def test_bad_signal_and_compare_ops(manager, ops, rank):
    signal = manager.malloc([1], torch.int32)
    with pytest.raises(RuntimeError, match="signal_op 2 is neither 0"):
        ops.signal_op(signal, one(0), one(1, torch.int32), 2, rank)
    with pytest.raises(RuntimeError, match="compare_op 9 is not 0..5"):
        ops.signal_wait_until(signal, signal, one(0), one(0, torch.int32), 9)
    manager.free(signal)


def test_wait_times_out_with_the_value_it_saw(manager, ops):
    signal = manager.malloc([1], torch.int32)
    signal.zero_()
    before = ops.get_wait_timeout()
    ops.set_wait_timeout(0.2)
    try:
        with pytest.raises(RuntimeError, match=r"signal\[0\] is 0 after 0.2 s, still not EQ 5"):
            ops.signal_wait_until(signal, signal, one(0), one(5, torch.int32), 0)
    finally:
        ops.set_wait_timeout(before)
    manager.free(signal)


def test_malloc_refuses_what_does_not_fit(manager):
    with pytest.raises(RuntimeError, match="do not fit the symmetric heap"):
        manager.malloc([1 << 40], torch.float32)


def test_aligned_malloc_and_its_bad_alignment(manager):
    t = manager.aligned_malloc([3], torch.float32, 4096)
    assert t.data_ptr() % 4096 == 0 and t.shape == (3,)
    manager.free(t)
    with pytest.raises(RuntimeError, match="alignment 3 is not a positive power of two"):
        manager.aligned_malloc([3], torch.float32, 3)


def test_free_refuses_a_view_and_a_tensor_off_the_heap(manager):
    t = manager.malloc([4], torch.int64)
    with pytest.raises(RuntimeError, match="is a view at element 1"):
        manager.free(t[1:])
    with pytest.raises(RuntimeError, match="is not on the symmetric heap"):
        manager.free(torch.zeros(4, dtype=torch.int64))
    manager.free(t)


def test_peer_tensor_and_on_heap(manager, ops, rank, world):
    t = manager.malloc([2], torch.int32)
    assert manager.on_heap(t) and not manager.on_heap(torch.zeros(2, dtype=torch.int32))
    t.fill_(rank)
    ops.quiet()
    ops.barrier()
    for pe in range(world):
        assert manager.peer_tensor(t, pe).tolist() == [pe, pe]
    with pytest.raises(RuntimeError, match=f"peer_tensor: pe {world} is not a PE"):
        manager.peer_tensor(t, world)
    ops.barrier()
    manager.free(t)
