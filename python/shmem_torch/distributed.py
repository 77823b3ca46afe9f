"""The torch.distributed backend "shmem": `import shmem_torch`, then
`torch.distributed.init_process_group("shmem")` (or "cpu:shmem,cuda:nccl").

This module owns the registration only; the backend is the C++ extension module
shmem_torch._c10d (cpp/torch/process_group.cpp), found beside this package (installed) or at
SHMEM_TORCH_C10D (a build tree). It is loaded when the first group is created, so importing
shmem_torch never needs it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from types import ModuleType

import torch.distributed as dist

BACKEND_NAME = "shmem"
_lock = threading.Lock()
_module: ModuleType | None = None


def extension() -> ModuleType:
    """The shmem_torch._c10d extension module (ImportError naming where it was looked for)."""
    global _module
    with _lock:
        if _module is not None:
            return _module
        path = os.environ.get("SHMEM_TORCH_C10D")
        if path:
            spec = importlib.util.spec_from_file_location("shmem_torch._c10d", path)
            if spec is None or spec.loader is None or not os.path.isfile(path):
                raise ImportError(f"shmem_torch: SHMEM_TORCH_C10D={path!r} is not a module file")
            module = importlib.util.module_from_spec(spec)
            sys.modules["shmem_torch._c10d"] = module
            spec.loader.exec_module(module)
        else:
            try:
                from . import _c10d as module  # type: ignore[attr-defined]
            except ImportError as exc:
                raise ImportError(
                    "shmem_torch: the torch.distributed backend's module _c10d is not beside "
                    f"{os.path.dirname(__file__)} ({exc}); build it with scripts/build.sh "
                    "-torch or set SHMEM_TORCH_C10D to its path"
                ) from exc
        _module = module
        return module


def _create(options, backend_options=None):
    """torch's creator (extended API): one backend per group, on its members. A group of some
    ranks names them (global ranks, in group-rank order) and the world's size; torch's default
    group names none."""
    ranks = list(options.global_ranks_in_group or [])
    world = dist.get_world_size() if ranks else options.group_size
    return extension().create_backend(
        options.store, options.group_rank, options.group_size, options.timeout, ranks, world
    )


def devices() -> list[str]:
    """The device types the backend takes tensors of: the CPU, and CUDA where the symmetric
    heap will be in GPU memory (SHMEM_DEVICE=cuda when shmem_torch is imported)."""
    if os.environ.get("SHMEM_DEVICE") == "cuda":
        return ["cpu", "cuda"]
    return ["cpu"]


def register() -> None:
    """Registers "shmem" with torch.distributed (once; import shmem_torch does it), for the
    devices devices() names. Nothing happens where torch is built without distributed
    support."""
    if not dist.is_available():
        return
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=devices())
