"""Every rank runs the same tests in the same order (collectives meet), joins the job once
(the launcher's way, or attr_init when SYMMETRIC_MEMORY_IP_PORT is set) and checks the data
other ranks wrote. A lost peer fails a wait after SHMEM_TORCH_TEST_WAIT_TIMEOUT seconds.

The suites run on the device that holds the heap: CPU tensors on the host device; on a GPU
(SHMEM_DEVICE=cuda with the real driver, ctest's torch.gpu.* tests) the PE's GPU becomes
torch's current and default device, so the tests' own tensors are made where the heap is and
the same assertions hold. Over the CUDA driver's stand-in (SHMEM_CUDA_LIBRARY set) torch has
no GPU: only test_cuda_standin.py runs there, and it makes no tensor of its own on the device."""

import os

import pytest
import torch

from shmem_torch import TorchSymmetricMemoryHandler, _library

#: The CUDA driver is the tests' stand-in (tests/cuda), not a GPU's.
STANDIN = bool(os.environ.get("SHMEM_CUDA_LIBRARY"))


def heap_device() -> torch.device:
    """The device of the heap's tensors (collective: an allocation and its free)."""
    probe = TorchSymmetricMemoryHandler.empty([1], torch.int8)
    device = probe.device
    TorchSymmetricMemoryHandler.free(probe)
    return device


@pytest.fixture(scope="session", autouse=True)
def job():
    TorchSymmetricMemoryHandler._init_shmem()
    _library.ops().set_wait_timeout(float(os.environ.get("SHMEM_TORCH_TEST_WAIT_TIMEOUT", "60")))
    device = heap_device()
    if os.environ.get("SHMEM_TORCH_TEST_GPU") == "1":
        assert device.type == "cuda", f"SHMEM_DEVICE=cuda, yet the heap's tensors are on {device}"
    if device.type == "cuda" and not STANDIN:
        torch.cuda.set_device(device)
        torch.set_default_device(device)
    yield device
    TorchSymmetricMemoryHandler.finalize()
    assert _library.manager().init_status() == 0


@pytest.fixture
def device(job):
    """Where the heap's tensors are: cpu, or cuda:<index> of this PE's GPU."""
    return job


@pytest.fixture
def rank():
    return TorchSymmetricMemoryHandler.rank()


@pytest.fixture
def world():
    return TorchSymmetricMemoryHandler.world_size()


def one(value, dtype=torch.int64):
    """A one-element tensor, as CANN's call patterns pass offsets, sizes and signal values
    (on the CPU, wherever the heap is: the classes read them on the host)."""
    return torch.tensor([value], dtype=dtype, device="cpu")
