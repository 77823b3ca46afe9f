"""PyTorch symmetric memory on shmem: CANN SHMEM's torch handler over libshmem_torch.so.

libshmem_torch.so registers torch.classes.SymmetricMemory.Manager and
torch.classes.SymmetricMemory.Ops (load it with torch.ops.load_library(library_path()), or let
this package do it); TorchSymmetricMemoryHandler is the handler module's class, and the
torch.distributed-style collectives are exported as functions here too. Importing the package
registers the torch.distributed backend "shmem" (distributed.py):
torch.distributed.init_process_group("shmem").

This package owns the Python side of the torch binding only; it never starts a runtime of its
own (libshmem.so, loaded by the library, is the one runtime in the process).
"""

from ._library import library_path, load
from .distributed import register as _register_backend
from .handler import SymmetricMemoryHandle, TorchSymmetricMemoryHandler

_register_backend()

__all__ = [
    "SymmetricMemoryHandle",
    "TorchSymmetricMemoryHandler",
    "all_gather_into_tensor",
    "all_reduce",
    "all_to_all_single",
    "empty",
    "finalize",
    "free",
    "library_path",
    "load",
    "reduce_scatter_tensor",
]

empty = TorchSymmetricMemoryHandler.empty
free = TorchSymmetricMemoryHandler.free
finalize = TorchSymmetricMemoryHandler.finalize
all_reduce = TorchSymmetricMemoryHandler.all_reduce
all_gather_into_tensor = TorchSymmetricMemoryHandler.all_gather_into_tensor
reduce_scatter_tensor = TorchSymmetricMemoryHandler.reduce_scatter_tensor
all_to_all_single = TorchSymmetricMemoryHandler.all_to_all_single
