"""Finds and loads libshmem_torch.so once per process.

It owns only where the library is and that it is loaded once; what the classes do is in the
library (cpp/torch/symmetric_memory.cpp) and in handler.py.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import torch

LIBRARY_NAME = "libshmem_torch.so"
_lock = threading.Lock()
_loaded: Path | None = None
_manager = None
_ops = None


def candidates() -> list[Path]:
    """The places looked at, in order: SHMEM_TORCH_LIBRARY, beside this package (a wheel),
    and the install prefix's lib folders (this package installed as <prefix>/python/shmem_torch).
    """
    found = []
    env = os.environ.get("SHMEM_TORCH_LIBRARY")
    if env:
        found.append(Path(env))
    here = Path(__file__).resolve().parent
    found.append(here / LIBRARY_NAME)
    prefix = here.parent.parent
    found += [prefix / "lib" / LIBRARY_NAME, prefix / "lib64" / LIBRARY_NAME]
    return found


def library_path() -> Path:
    """The libshmem_torch.so this process loads; ImportError naming every place looked at."""
    paths = candidates()
    for path in paths:
        if path.is_file():
            return path.resolve()
    searched = ", ".join(str(p) for p in paths)
    raise ImportError(
        f"shmem_torch: {LIBRARY_NAME} not found (searched {searched}); build it with "
        "scripts/build.sh -torch or set SHMEM_TORCH_LIBRARY to its path"
    )


def load() -> Path:
    """Loads the library with torch.ops.load_library (once) and returns its path."""
    global _loaded
    with _lock:
        if _loaded is None:
            path = library_path()
            torch.ops.load_library(str(path))
            _loaded = path
        return _loaded


def manager():
    """The process's torch.classes.SymmetricMemory.Manager."""
    global _manager
    if _manager is not None:
        return _manager
    load()
    with _lock:
        if _manager is None:
            _manager = torch.classes.SymmetricMemory.Manager()
        return _manager


def ops():
    """The process's torch.classes.SymmetricMemory.Ops."""
    global _ops
    if _ops is not None:
        return _ops
    load()
    with _lock:
        if _ops is None:
            _ops = torch.classes.SymmetricMemory.Ops()
        return _ops
