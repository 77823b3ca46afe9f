"""Every rank runs the same tests in the same order (collectives meet), joins the job once
(the launcher's way, or attr_init when SYMMETRIC_MEMORY_IP_PORT is set) and checks the data
other ranks wrote. A lost peer fails a wait after SHMEM_TORCH_TEST_WAIT_TIMEOUT seconds."""

import os

import pytest
import torch

from shmem_torch import TorchSymmetricMemoryHandler, _library


@pytest.fixture(scope="session", autouse=True)
def job():
    TorchSymmetricMemoryHandler._init_shmem()
    _library.ops().set_wait_timeout(float(os.environ.get("SHMEM_TORCH_TEST_WAIT_TIMEOUT", "60")))
    yield
    TorchSymmetricMemoryHandler.finalize()
    assert _library.manager().init_status() == 0


@pytest.fixture
def rank():
    return TorchSymmetricMemoryHandler.rank()


@pytest.fixture
def world():
    return TorchSymmetricMemoryHandler.world_size()


def one(value, dtype=torch.int64):
    """A one-element tensor, as CANN's call patterns pass offsets, sizes and signal values."""
    return torch.tensor([value], dtype=dtype)
