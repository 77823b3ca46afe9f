"""What the shmem package's tests (tests/python) share.

Every multi-PE test file runs as one pytest session per PE, started by a launcher (shmemrun,
mpirun, torchrun): the tests are collective, so every PE runs the same tests in the same order,
and a PE that fails ends its pytest with a nonzero status, which makes the launcher stop the job.
"""

import ctypes
import os

import numpy as np

#: Bytes of symmetric heap per PE of the tests.
MEM_SIZE = 64 << 20

_LAUNCHERS = (("SHMEM_RUN_RANK", "SHMEM_RUN_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
              ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"), ("RANK", "WORLD_SIZE"))


def launcher_rank():
    """(rank, size) as the launcher's environment says; (0, 1) without one."""
    for rank, size in _LAUNCHERS:
        if os.environ.get(rank):
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def view(addr, dtype, count):
    """A NumPy array over `count` elements of `dtype` at `addr` (no copy)."""
    dt = np.dtype(dtype)
    raw = (ctypes.c_char * (dt.itemsize * count)).from_address(addr)
    return np.frombuffer(raw, dtype=dt, count=count)


def pytest_runtest_logreport(report):
    """A PE's first failure ends the whole job at once (shmem_global_exit), after printing it:
    the other PEs would otherwise wait for this one in the next collective call."""
    if not report.failed:
        return
    import sys

    import shmem

    rank, _ = launcher_rank()
    sys.stderr.write(f"PE {rank}: {report.nodeid} FAILED ({report.when}):\n{report.longreprtext}\n")
    sys.stderr.flush()
    if shmem.shmem_init_status() == shmem.InitStatus.INITIALIZED:
        shmem.shmem_global_exit(1)
