"""What only a GPU shows (ctest's torch.gpu.*, SHMEM_DEVICE=cuda with NVIDIA's driver; skipped
elsewhere): the classes' calls come after the kernels torch queued on its current stream, the
default one or a side stream, and their copies are complete for the kernels queued after them;
shmem.torch's tensors, loaded and stored by torch's kernels on this PE's GPU. The torch suites
(test_classes.py, test_handler.py) run in the same job on the GPU."""

import os

import pytest
import torch

if os.environ.get("SHMEM_TORCH_TEST_GPU") != "1":
    pytest.skip("GPU runs only (SHMEM_TORCH_TEST_GPU=1)", allow_module_level=True)

from conftest import one  # noqa: E402
from shmem_torch import _library  # noqa: E402

# Cycles torch.cuda._sleep spins the stream for: tens of milliseconds on an H100, far longer
# than the host takes to reach the call that follows it.
HOLD_CYCLES = 100_000_000


@pytest.fixture
def manager():
    return _library.manager()


@pytest.fixture
def ops():
    return _library.ops()


def test_the_heap_is_on_torchs_current_gpu(manager, device):
    assert device.type == "cuda" and torch.cuda.current_device() == device.index
    t = manager.malloc([2, 2], torch.float16)
    assert t.device == device and t.is_cuda
    manager.free(t)


def test_a_host_tensor_is_refused(manager, ops, device):
    target = manager.malloc([4], torch.int32)
    with pytest.raises(RuntimeError, match=f"src is on cpu, not on {device}"):
        ops.put_mem(target, one(0), torch.zeros(4, dtype=torch.int32, device="cpu"), one(0),
                    one(4), 0)
    manager.free(target)


@pytest.mark.parametrize("side_stream", [False, True], ids=["current", "side_stream"])
def test_put_reads_what_a_queued_kernel_wrote(manager, ops, rank, world, side_stream):
    n = 1 << 22
    dst = manager.malloc([n], torch.float32)
    dst.fill_(-1)
    src = torch.zeros(n, dtype=torch.float32)
    ops.barrier()
    right, left = (rank + 1) % world, (rank - 1) % world
    stream = torch.cuda.Stream() if side_stream else torch.cuda.current_stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(HOLD_CYCLES)  # the fill below runs long after the host moves on
        src.fill_(rank + 1)
        ops.put_mem(dst, one(0), src, one(0), one(n), right)
    ops.barrier()
    assert torch.all(dst == left + 1), "the put read src before the kernel wrote it"
    ops.barrier()
    manager.free(dst)


def test_kernels_after_a_get_see_its_data(manager, ops, rank, world):
    n = 1 << 20
    src = manager.malloc([n], torch.int64)
    src.fill_(rank)
    ops.barrier()
    local = torch.empty(n, dtype=torch.int64)
    for pe in range(world):
        torch.cuda._sleep(HOLD_CYCLES // 10)
        local.fill_(-1)  # queued; the get must land after it
        ops.get_mem(local, one(0), src, one(0), one(n), pe)
        assert int(local.sum()) == pe * n
    ops.barrier()
    manager.free(src)


def test_a_signal_zeroed_by_a_kernel_before_a_barrier(manager, ops, rank, world):
    # The handler's pattern: a kernel resets the signal, then the barrier; peers signal after
    # it, so the reset must not land on their signals.
    signal = manager.malloc([1], torch.int32)
    for round_ in range(3):
        torch.cuda._sleep(HOLD_CYCLES // 10)
        signal.zero_()
        ops.barrier()
        ops.signal_op(signal, one(0), one(1, torch.int32), 1, (rank + 1) % world)
        ops.signal_wait_until(signal, signal, one(0), one(1, torch.int32), 0)
        ops.barrier()
    manager.free(signal)


def test_shmem_torch_tensors_on_the_gpu(device, rank, world):
    try:
        import shmem.core as sc
    except ImportError as e:
        pytest.skip(f"the shmem wheel is not on the path ({e})")
    import shmem.torch as st

    t = st.zeros((3, 4), torch.float32)
    assert t.device == device and torch.all(t == 0)
    t.fill_(rank)
    torch.cuda.synchronize()
    sc.barrier_all()
    right, left = (rank + 1) % world, (rank - 1) % world
    peer = st.get_peer_tensor(t, right)
    assert peer.device == device and torch.all(peer == right)
    sc.barrier_all()
    peer[0, 0] = 100 + rank  # a store into PE right's memory by this PE's kernel
    torch.cuda.synchronize()
    sc.barrier_all()
    assert t[0, 0].item() == 100 + left and torch.all(t.view(-1)[1:] == rank)
    view = st.get_peer_tensor(t[1:, 2:], right)  # a view keeps its offset and strides
    assert torch.equal(view.cpu(), torch.full((2, 2), float(right)))
    sc.barrier_all()
    st.free(t)
    assert t.numel() == 0
