"""TorchSymmetricMemoryHandler: one-sided communication and collectives on symmetric tensors.

The handler speaks CANN SHMEM's torch handler API (empty, shmem_put, shmem_get,
shmem_signal_op, shmem_wait_for_signal, shmem_put_with_signal, shmem_allgather,
shmem_alltoall, fused_all_gather_matmul, fused_matmul_reduce_scatter, rendezvous and the
signal pad size) over the TorchScript classes torch.classes.SymmetricMemory.{Manager,Ops} of
libshmem_torch.so, plus all_reduce, all_gather_into_tensor, reduce_scatter_tensor and
all_to_all_single on symmetric tensors. It is device-agnostic: it never names a device, and
every data movement goes through the classes, so the same code serves each device the library
serves: CPU tensors on the host device, cuda:<index> tensors when the heap is on a GPU
(SHMEM_DEVICE=cuda). There the torch work it does between the classes' calls (zeroing a signal,
a matmul, a reduction of peers' tensors) runs on torch's current stream, and every call of the
classes that moves data, signals, waits or synchronises first waits for that stream, so the
order the code reads in is the order on the device. Offsets, sizes and signal values are CPU
tensors (the classes read them on the host).

It owns the handler's symmetric scratch (the signal pad and a small exchange area), allocated on
first use; it must never keep state about the job itself (libshmem has it: rank, world size).

Collectives are called by every rank in the same order, as torch.distributed's are. Each one
starts by synchronising the ranks (a barrier or an exchange that is one), so its signals and
buffers may be reused by the next call at once; each wait fails after the Ops wait timeout.

Errors: what the handler checks itself (ranks, shapes, dtypes, sizes, groups, reduce ops, the
signal pad size, SYMMETRIC_MEMORY_HEAP_SIZE) raises ValueError for a bad value and TypeError for
a wrong type, as Python code does; a failed start-up raises RuntimeError. What it hands to the
classes as given (offsets, counts, signal values, tensors) the classes refuse with their
RuntimeError, as CANN's binding does; their failures (a wait past its timeout, a full heap) are
RuntimeError too.
"""

from __future__ import annotations

import operator
import os
import threading
from typing import Any, Sequence

import torch

from . import _library

#: CANN's signal operations and comparison, as the Ops methods take them.
SIGNAL_SET = 0
SIGNAL_ADD = 1
CMP_EQ = 0

_DEFAULT_SIGNAL_PAD_BYTES = 4096


def _int(call: str, name: str, value: Any) -> int:
    """`value` as an int (a Python or NumPy integer, or an integer scalar tensor); TypeError
    naming the call, the argument and its value otherwise (bool and float included, which
    would pass a range check and then be taken for another number)."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{call}: {name} {value!r} is not an int")


def _one(value: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor([value], dtype=dtype, device="cpu")


class SymmetricMemoryHandle:
    """What rendezvous returns for a symmetric tensor: the peers' views of its storage and of
    the handler's signal pad, and a barrier (the shape of torch's symmetric memory handle)."""

    def __init__(self, tensor: torch.Tensor, rank: int, world_size: int) -> None:
        self._bytes = tensor.reshape(-1).view(torch.uint8)
        self.rank = rank
        self.world_size = world_size
        self.buffer_size = self._bytes.numel()

    def get_buffer(
        self, rank: int, sizes: Sequence[int], dtype: torch.dtype, storage_offset: int = 0
    ) -> torch.Tensor:
        """Rank `rank`'s copy of the tensor's storage as a tensor of `sizes` and `dtype`,
        starting `storage_offset` elements in, that this process reads and writes directly."""
        rank = TorchSymmetricMemoryHandler._check_rank("get_buffer", "rank", rank)
        width = torch.empty((), dtype=dtype).element_size()
        count = 1
        for dim in sizes:
            count *= int(dim)
        end = (storage_offset + count) * width
        if storage_offset < 0 or end > self.buffer_size:
            raise ValueError(
                f"get_buffer: storage_offset {storage_offset} + {count} elements of {dtype} "
                f"exceed the buffer's {self.buffer_size} bytes"
            )
        peer = _library.manager().peer_tensor(self._bytes, rank)
        return peer[storage_offset * width : end].view(dtype).view(list(sizes))

    def get_signal_pad(
        self, rank: int, sizes: Sequence[int] | None = None, dtype: torch.dtype = torch.int32
    ) -> torch.Tensor:
        """Rank `rank`'s signal pad (the handler's, get_signal_pad_size() bytes)."""
        rank = TorchSymmetricMemoryHandler._check_rank("get_signal_pad", "rank", rank)
        pad = TorchSymmetricMemoryHandler._pad().view(torch.uint8)
        peer = _library.manager().peer_tensor(pad, rank).view(dtype)
        return peer if sizes is None else peer[: _count(sizes)].view(list(sizes))

    @property
    def signal_pad_size(self) -> int:
        """The signal pad's size in bytes."""
        return TorchSymmetricMemoryHandler.get_signal_pad_size()

    def barrier(self, channel: int = 0) -> None:
        """Waits until every rank calls it; this rank's puts are complete first."""
        TorchSymmetricMemoryHandler.barrier()


def _count(sizes: Sequence[int]) -> int:
    count = 1
    for dim in sizes:
        count *= int(dim)
    return count


class TorchSymmetricMemoryHandler:
    """CANN SHMEM's torch handler, over libshmem_torch.so (see the module's doc)."""

    _lock = threading.Lock()
    _is_init = False
    _signal_pad: torch.Tensor | None = None
    _signal_pad_bytes = _DEFAULT_SIGNAL_PAD_BYTES
    _exchange: torch.Tensor | None = None
    _rank = -1
    _world = 0

    # ---- start-up ----------------------------------------------------------------------------

    @classmethod
    def _init_shmem(cls) -> None:
        """Joins the job once. Heap: SYMMETRIC_MEMORY_HEAP_SIZE bytes, else the library's
        SHMEM_SYMMETRIC_SIZE. With SYMMETRIC_MEMORY_IP_PORT (tcp://ip:port), attr_init with the
        rank and world size torch.distributed or the RANK / WORLD_SIZE variables give; else the
        launcher's environment (shmemrun, torchrun, mpirun). A job started before (attr_init,
        shmem.init) is used as it is."""
        with cls._lock:
            if cls._is_init:
                return
            manager = _library.manager()
            if manager.init_status() != 2:
                heap = os.environ.get("SYMMETRIC_MEMORY_HEAP_SIZE", "0")
                try:
                    heap_size = int(heap)
                except ValueError:
                    raise ValueError(
                        f"SYMMETRIC_MEMORY_HEAP_SIZE={heap!r} is not a number of bytes"
                    ) from None
                ip_port = os.environ.get("SYMMETRIC_MEMORY_IP_PORT")
                if ip_port:
                    rank, world = _rank_and_world()
                    rc = manager.attr_init(rank, world, heap_size or (1 << 30), ip_port)
                else:
                    rc = manager.init(heap_size)
                if rc != 0:
                    raise RuntimeError(
                        f"TorchSymmetricMemoryHandler: shmem start-up failed with {rc} "
                        "(the lines above say why)"
                    )
            # A job's rank and size never change while it runs: asked once.
            cls._rank = int(manager.my_pe())
            cls._world = int(manager.n_pes())
            cls._is_init = True

    @classmethod
    def finalize(cls) -> None:
        """Leaves the job (collective): frees the handler's scratch, then shmem_finalize. A
        program calls it before it exits, as it would call shmem_finalize."""
        with cls._lock:
            if not cls._is_init:
                return
            scratch = [t for t in (cls._signal_pad, cls._exchange) if t is not None]
            cls._signal_pad = cls._exchange = None
            cls._is_init = False
        ops, manager = _library.ops(), _library.manager()
        ops.barrier()
        for tensor in scratch:
            manager.free(tensor)
        manager.finalize()

    @staticmethod
    def is_shmem_available() -> bool:
        """Whether libshmem_torch.so can be loaded."""
        try:
            _library.load()
        except ImportError:
            return False
        return True

    @classmethod
    def rank(cls) -> int:
        """This process's rank (its PE number)."""
        if not cls._is_init:
            cls._init_shmem()
        return cls._rank

    @classmethod
    def world_size(cls) -> int:
        """The number of ranks (PEs) of the job."""
        if not cls._is_init:
            cls._init_shmem()
        return cls._world

    @classmethod
    def _check_rank(cls, call: str, name: str, rank: Any) -> int:
        """`rank` as an int when it is a rank of the job; TypeError or ValueError otherwise."""
        rank = _int(call, name, rank)
        world = cls.world_size()
        if not 0 <= rank < world:
            raise ValueError(f"{call}: {name} {rank} is outside [0, {world - 1}]")
        return rank

    # ---- memory ------------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape: int | Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """A tensor on the symmetric heap (collective: every rank calls it with the same shape).
        Give it back with free()."""
        cls._init_shmem()
        if isinstance(shape, int):
            shape = [shape]
        return _library.manager().malloc(list(shape), dtype)

    @classmethod
    def free(cls, tensor: torch.Tensor) -> None:
        """Returns a tensor from empty() to the heap (collective)."""
        cls._init_shmem()
        _library.manager().free(tensor)

    @classmethod
    def barrier(cls) -> None:
        """Completes this rank's puts, then waits until every rank calls it."""
        cls._init_shmem()
        _library.ops().barrier()

    @classmethod
    def rendezvous(cls, tensor: torch.Tensor, group: Any = None) -> SymmetricMemoryHandle:
        """The handle of a symmetric tensor (from empty()): peers' views of it and a barrier.
        The heap is mapped at start-up, so nothing is exchanged; `group` must be None, a group
        name "0"/"WORLD", or a torch.distributed group of every rank."""
        world = cls.world_size()
        size = _group_size(group)
        if size is not None and size != world:
            raise ValueError(
                f"rendezvous: group has {size} ranks; symmetric tensors span all {world} ranks"
            )
        _library.manager().peer_tensor(tensor.reshape(-1).view(torch.uint8), cls.rank())
        return SymmetricMemoryHandle(tensor, cls.rank(), world)

    @classmethod
    def set_signal_pad_size(cls, size: int) -> None:
        """Sets the signal pad's size in bytes (a positive multiple of 4). With a pad already
        allocated it is reallocated, so every rank calls it then."""
        size = _int("set_signal_pad_size", "size", size)
        if size <= 0 or size % 4:
            raise ValueError(f"set_signal_pad_size: size {size} is not a positive multiple of 4")
        with cls._lock:
            old = cls._signal_pad
            cls._signal_pad_bytes = int(size)
            cls._signal_pad = None
        if old is not None:
            cls.free(old)

    @classmethod
    def get_signal_pad_size(cls) -> int:
        """The signal pad's size in bytes."""
        return cls._signal_pad_bytes

    @classmethod
    def _pad(cls) -> torch.Tensor:
        """The handler's signal pad (int32, zero between collectives), allocated on first use."""
        if cls._signal_pad is None:
            pad = cls.empty([cls._signal_pad_bytes // 4], torch.int32)
            pad.zero_()
            cls.barrier()
            cls._signal_pad = pad
        return cls._signal_pad

    @classmethod
    def _exchange_area(cls) -> torch.Tensor:
        """int64 scratch of 4 x world_size: two blocks per rank in, two out."""
        if cls._exchange is None:
            cls._exchange = cls.empty([4 * cls.world_size()], torch.int64)
        return cls._exchange

    # ---- one-sided ---------------------------------------------------------------------------

    @classmethod
    def shmem_put(cls, target, target_offset, src, src_offset, size, target_rank: int) -> None:
        """Copies `size` elements of `src` from `src_offset` into symmetric `target` at
        `target_offset` on `target_rank` (offsets and size: one-element tensors)."""
        target_rank = cls._check_rank("shmem_put", "target_rank", target_rank)
        _library.ops().put_mem(target, target_offset, src, src_offset, size, target_rank)

    @classmethod
    def shmem_get(cls, target, target_offset, src, src_offset, size, target_rank: int) -> None:
        """Copies `size` elements of symmetric `src` at `src_offset` on `target_rank` into local
        `target` at `target_offset`."""
        target_rank = cls._check_rank("shmem_get", "target_rank", target_rank)
        _library.ops().get_mem(target, target_offset, src, src_offset, size, target_rank)

    @classmethod
    def shmem_signal_op(cls, signal, signal_offset, signal_value, signal_op: int,
                        target_rank: int) -> None:
        """Sets (0) or adds to (1) the int32 `signal` at `signal_offset` on `target_rank`."""
        target_rank = cls._check_rank("shmem_signal_op", "target_rank", target_rank)
        _library.ops().signal_op(signal, signal_offset, signal_value, signal_op, target_rank)

    @classmethod
    def shmem_wait_for_signal(cls, depend_tensor, signal, signal_offset, compare_value,
                              compare_op: int) -> None:
        """Waits until this rank's `signal` at `signal_offset` compares true (0 EQ ... 5 LE)."""
        cls._init_shmem()
        _library.ops().signal_wait_until(depend_tensor, signal, signal_offset, compare_value,
                                         compare_op)

    @classmethod
    def shmem_put_with_signal(cls, target, target_offset, src, src_offset, size, signal,
                              signal_offset, signal_value, signal_op: int,
                              target_rank: int) -> None:
        """shmem_put, then the signal update on `target_rank`, ordered after the data."""
        target_rank = cls._check_rank("shmem_put_with_signal", "target_rank", target_rank)
        _library.ops().put_mem_signal(target, target_offset, src, src_offset, size, signal,
                                      signal_offset, signal_value, signal_op, target_rank)

    # ---- CANN's collectives ------------------------------------------------------------------

    @classmethod
    def shmem_allgather(cls, output_tensor: torch.Tensor, input_tensor: torch.Tensor) -> None:
        """Every rank's `input_tensor` lands in symmetric `output_tensor` of every rank, in rank
        order. Inputs may differ in size between ranks; `output_tensor` holds their sum."""
        world, rank = cls.world_size(), cls.rank()
        if input_tensor.dtype != output_tensor.dtype:
            raise ValueError(f"shmem_allgather: input is {input_tensor.dtype} but output is "
                             f"{output_tensor.dtype}")
        sizes = cls._exchange_sizes(input_tensor.numel())
        if sum(sizes) != output_tensor.numel():
            raise ValueError(f"shmem_allgather: output_tensor has {output_tensor.numel()} "
                             f"elements, the ranks' inputs {sizes} sum to {sum(sizes)}")
        offset = _one(sum(sizes[:rank]))
        count = _one(sizes[rank])
        src = input_tensor.contiguous().view(-1)
        pad, ops = cls._pad(), _library.ops()
        for step in range(world):
            target = (rank + step) % world
            ops.put_mem_signal(output_tensor, offset, src, _one(0), count, pad, _one(0),
                               _one(1, torch.int32), SIGNAL_ADD, target)
        cls._wait_and_clear(output_tensor, pad, 0, world)

    @classmethod
    def shmem_alltoall(cls, send_tensor_list: Sequence[torch.Tensor],
                       receive_tensor: torch.Tensor, receive_list) -> None:
        """send_tensor_list[j] goes to rank j, where it lands in symmetric `receive_tensor`
        after the blocks of lower ranks; receive_list[i] is how many elements come from rank i
        (sizes may differ per rank and per pair)."""
        world, rank = cls.world_size(), cls.rank()
        receive = [int(x) for x in (receive_list.tolist() if torch.is_tensor(receive_list)
                                    else receive_list)]
        if len(send_tensor_list) != world or len(receive) != world:
            raise ValueError(f"shmem_alltoall: send_tensor_list has {len(send_tensor_list)} "
                             f"tensors and receive_list {len(receive)} sizes; {world} each needed")
        if sum(receive) > receive_tensor.numel():
            raise ValueError(f"shmem_alltoall: receive_tensor has {receive_tensor.numel()} "
                             f"elements, receive_list sums to {sum(receive)}")
        # Block j of the exchange tells rank j where its data goes here and how much is wanted.
        area = cls._exchange_area()
        send, got = area[: 2 * world], area[2 * world:]
        offsets = [sum(receive[:j]) for j in range(world)]
        send.copy_(torch.tensor([v for j in range(world) for v in (offsets[j], receive[j])],
                                dtype=torch.int64))
        _library.ops().all_to_all(got, send)
        placement = got.view(world, 2).tolist()
        pad, ops = cls._pad(), _library.ops()
        for step in range(world):
            target = (rank + step) % world
            block = send_tensor_list[target].contiguous().view(-1)
            where, wanted = placement[target]
            if block.numel() != wanted:
                raise ValueError(f"shmem_alltoall: rank {rank} sends {block.numel()} elements "
                                 f"to rank {target}, whose receive_list wants {wanted}")
            ops.put_mem_signal(receive_tensor, _one(where), block, _one(0), _one(wanted), pad,
                               _one(0), _one(1, torch.int32), SIGNAL_ADD, target)
        cls._wait_and_clear(receive_tensor, pad, 0, world)

    @classmethod
    def _exchange_sizes(cls, count: int) -> list[int]:
        """Every rank's `count` (a collective that also synchronises the ranks)."""
        world = cls.world_size()
        area = cls._exchange_area()
        area[3 * world] = count
        _library.ops().all_gather(area[:world], area[3 * world: 3 * world + 1])
        return [int(x) for x in area[:world].tolist()]

    @classmethod
    def _wait_and_clear(cls, depend: torch.Tensor, signal: torch.Tensor, slot: int,
                        value: int) -> None:
        """Waits for signal[slot] == value, then zeroes it for the next collective."""
        _library.ops().signal_wait_until(depend, signal, _one(slot), _one(value, torch.int32),
                                         CMP_EQ)
        signal[slot] = 0

    # ---- fused operators ---------------------------------------------------------------------

    @classmethod
    def fused_all_gather_matmul(cls, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                                gather_out: torch.Tensor, signal: torch.Tensor,
                                block_size: int | None = None):
        """gather_out = all-gather of every rank's `a` (m rows each) and c = gather_out @ b,
        each block of rows multiplied as soon as it arrives. gather_out (world*m, k) and
        signal (int32, world * ceil(m / block_size) slots, zero) are symmetric. Returns
        (gather_out, c)."""
        world, rank = cls.world_size(), cls.rank()
        m, k = a.shape
        if block_size is None:
            block_size = max(1, m // min(world, 4))
        block_size = max(1, min(block_size, m))
        blocks = (m + block_size - 1) // block_size
        if tuple(gather_out.shape) != (world * m, k):
            raise ValueError(f"fused_all_gather_matmul: gather_out is {tuple(gather_out.shape)}, "
                             f"expected {(world * m, k)}")
        if b.shape[0] != k or tuple(c.shape) != (world * m, b.shape[1]):
            raise ValueError(f"fused_all_gather_matmul: b is {tuple(b.shape)} and c "
                             f"{tuple(c.shape)}; expected ({k}, n) and ({world * m}, n)")
        if signal.numel() < world * blocks:
            raise ValueError(f"fused_all_gather_matmul: signal has {signal.numel()} slots, "
                             f"{world * blocks} needed ({world} ranks x {blocks} blocks)")
        ops = _library.ops()
        ops.barrier()
        flat = a.contiguous().view(-1)
        one = _one(1, torch.int32)
        for block in range(blocks):
            start = block * block_size
            rows = min(block_size, m - start)
            for step in range(world):
                target = (rank + step) % world
                ops.put_mem_signal(gather_out, _one((rank * m + start) * k), flat,
                                   _one(start * k), _one(rows * k), signal,
                                   _one(rank * blocks + block), one, SIGNAL_SET, target)
        for step in range(world):
            source = (rank + step) % world
            for block in range(blocks):
                ops.signal_wait_until(gather_out, signal, _one(source * blocks + block), one,
                                      CMP_EQ)
                first = source * m + block * block_size
                last = first + min(block_size, m - block * block_size)
                c[first:last] = torch.matmul(gather_out[first:last], b)
        signal.view(-1)[: world * blocks] = 0
        return gather_out, c

    @classmethod
    def fused_matmul_reduce_scatter(cls, x1: torch.Tensor, x2: torch.Tensor,
                                    symm_tensor: torch.Tensor, signal: torch.Tensor,
                                    reduce_op: str = "sum") -> torch.Tensor:
        """Rank r's rows of (x1 @ x2) summed (or averaged) over the ranks: the rows are split
        as torch.tensor_split splits them (m need not divide by the world size). symm_tensor
        (world * ceil(m / world) * n elements; (m, n) when m divides) and signal (int32, world
        slots, zero) are symmetric. Returns this rank's (rows, n) result."""
        world, rank = cls.world_size(), cls.rank()
        m, k = x1.shape
        if x2.shape[0] != k:
            raise ValueError(f"fused_matmul_reduce_scatter: x1 is {tuple(x1.shape)} but x2 is "
                             f"{tuple(x2.shape)}")
        if x1.dtype != x2.dtype or symm_tensor.dtype != x1.dtype:
            raise ValueError(f"fused_matmul_reduce_scatter: dtypes differ: x1 {x1.dtype}, x2 "
                             f"{x2.dtype}, symm_tensor {symm_tensor.dtype}")
        if reduce_op not in ("sum", "avg"):
            raise ValueError(f"fused_matmul_reduce_scatter: reduce_op {reduce_op!r} is not "
                             "'sum' or 'avg'")
        n = x2.shape[1]
        rows = [m // world + (1 if i < m % world else 0) for i in range(world)]
        starts = [sum(rows[:i]) for i in range(world)]
        slot = max(rows) * n
        if symm_tensor.numel() < world * slot or signal.numel() < world:
            raise ValueError(f"fused_matmul_reduce_scatter: symm_tensor has "
                             f"{symm_tensor.numel()} elements and signal {signal.numel()}; "
                             f"{world * slot} and {world} needed")
        ops = _library.ops()
        ops.barrier()
        one = _one(1, torch.int32)
        for step in range(1, world):
            target = (rank + step) % world
            part = torch.matmul(x1[starts[target]:starts[target] + rows[target]], x2)
            ops.put_mem_signal(symm_tensor, _one(rank * slot), part.contiguous().view(-1),
                               _one(0), _one(rows[target] * n), signal, _one(rank), one,
                               SIGNAL_SET, target)
        output = torch.matmul(x1[starts[rank]:starts[rank] + rows[rank]], x2)
        flat = symm_tensor.view(-1)
        for step in range(1, world):
            source = (rank - step) % world
            ops.signal_wait_until(symm_tensor, signal, _one(source), one, CMP_EQ)
            output.add_(flat[source * slot: source * slot + rows[rank] * n].view(rows[rank], n))
        signal.view(-1)[:world] = 0
        return output / world if reduce_op == "avg" else output

    # ---- torch.distributed-style collectives on symmetric tensors ----------------------------

    @classmethod
    def all_reduce(cls, tensor: torch.Tensor, op: str = "sum", group: Any = None) -> torch.Tensor:
        """In place: `tensor` (symmetric) becomes the elementwise sum (max, min, prod, avg) of
        every rank's `tensor`. Returns it."""
        if group is not None:
            cls._check_group("all_reduce", group)
        op = _op_name(op)
        if not cls._is_init:
            cls._init_shmem()
        if tensor.dtype in _WIDENED:
            return cls._all_reduce_widened(tensor, op)
        _library.ops().all_reduce(tensor, tensor, "sum" if op == "avg" else op)
        if op == "avg":
            tensor.div_(cls.world_size())
        return tensor

    @classmethod
    def _all_reduce_widened(cls, tensor: torch.Tensor, op: str) -> torch.Tensor:
        """all_reduce of a dtype the library has no reduction for (bfloat16, float16): every
        rank reads every peer's tensor in place and combines them in float32."""
        ops, manager = _library.ops(), _library.manager()
        if not manager.on_heap(tensor):
            raise ValueError("all_reduce: tensor is not on the symmetric heap (use empty())")
        ops.barrier()
        stacked = torch.stack([manager.peer_tensor(tensor, j).float()
                               for j in range(cls.world_size())])
        reduced = _reduce_stacked(stacked, op)
        ops.barrier()  # every rank has read every tensor: now each may overwrite its own
        tensor.copy_(reduced)
        return tensor

    @classmethod
    def all_gather_into_tensor(cls, output: torch.Tensor, input: torch.Tensor,
                               group: Any = None) -> torch.Tensor:
        """Rank i's `input` lands as block i of `output` (symmetric, world x input's size) on
        every rank. `input` may be any tensor, a view of `output` included."""
        if group is not None:
            cls._check_group("all_gather_into_tensor", group)
        if not cls._is_init:
            cls._init_shmem()
        if not _library.ops().all_gather(output, input):
            cls.shmem_allgather(output, input)
        return output

    @classmethod
    def reduce_scatter_tensor(cls, output: torch.Tensor, input: torch.Tensor, op: str = "sum",
                              group: Any = None) -> torch.Tensor:
        """`output` gets block `rank` of the elementwise sum (max, min, prod, avg) of every
        rank's `input` (symmetric, world x output's size)."""
        if group is not None:
            cls._check_group("reduce_scatter_tensor", group)
        op = _op_name(op)
        world, rank = cls.world_size(), cls.rank()
        count = output.numel()
        if input.numel() != world * count:
            raise ValueError(f"reduce_scatter_tensor: input has {input.numel()} elements, not "
                             f"world_size {world} x output's {count}")
        ops, manager = _library.ops(), _library.manager()
        flat = input.reshape(-1)
        ops.barrier()
        # Peers on this node are read in place: every rank reduces its own block.
        peers = [manager.peer_tensor(flat, j)[rank * count:(rank + 1) * count]
                 for j in range(world)]
        result = output.view(-1)
        if op == "sum" and output.dtype not in _WIDENED:
            torch.sum(torch.stack(peers), dim=0, out=result)
        else:
            stacked = torch.stack(peers)
            if output.dtype in _WIDENED:
                stacked = stacked.float()
            result.copy_(_reduce_stacked(stacked, op))
        ops.barrier()
        return output

    @classmethod
    def all_to_all_single(cls, output: torch.Tensor, input: torch.Tensor,
                          output_split_sizes: Sequence[int] | None = None,
                          input_split_sizes: Sequence[int] | None = None,
                          group: Any = None) -> torch.Tensor:
        """torch.distributed.all_to_all_single on symmetric tensors: split i of `input` (rows
        of dim 0) goes to rank i, and `output` holds the splits received, in rank order."""
        if group is not None:
            cls._check_group("all_to_all_single", group)
        world = cls.world_size()
        if output_split_sizes is None and input_split_sizes is None \
                and input.numel() == output.numel() and input.numel() % world == 0 \
                and _library.ops().all_to_all(output, input):
            return output
        row = _count(input.shape[1:]) if input.dim() > 1 else 1
        ins = list(input_split_sizes) if input_split_sizes is not None \
            else [input.shape[0] // world] * world
        outs = list(output_split_sizes) if output_split_sizes is not None \
            else [output.shape[0] // world] * world
        sends = list(torch.split(input.reshape(input.shape[0], -1), ins))
        cls.shmem_alltoall([s.reshape(-1) for s in sends], output,
                           [o * row for o in outs])
        return output

    @classmethod
    def _check_group(cls, call: str, group: Any) -> None:
        size = _group_size(group)
        world = cls.world_size()
        if size is not None and size != world:
            raise ValueError(f"{call}: group has {size} ranks; only the group of all {world} "
                             "ranks is supported")


#: Dtypes the library has no reduction for: reduced here in float32.
_WIDENED = (torch.bfloat16, torch.float16)


def _reduce_stacked(stacked: torch.Tensor, op: str) -> torch.Tensor:
    """`stacked` (ranks x elements) combined over the ranks by `op`."""
    if op == "sum":
        return stacked.sum(0)
    if op == "avg":
        return stacked.sum(0) / stacked.shape[0]
    if op == "max":
        return stacked.amax(0)
    if op == "min":
        return stacked.amin(0)
    return stacked.prod(0)


def _op_name(op: Any) -> str:
    if op == "sum":
        return op
    name = str(getattr(op, "name", op)).lower()
    name = {"product": "prod", "average": "avg"}.get(name, name)
    if name not in ("sum", "max", "min", "prod", "avg"):
        raise ValueError(f"reduce op {op!r} is not sum, max, min, prod or avg")
    return name


def _group_size(group: Any) -> int | None:
    if group is None or group in ("0", "WORLD", "world"):
        return None
    if isinstance(group, str):
        raise ValueError(f"group {group!r} is not known here (None or 'WORLD')")
    import torch.distributed as dist

    return dist.get_world_size(group)


def _rank_and_world() -> tuple[int, int]:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    try:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError):
        raise RuntimeError(
            "SYMMETRIC_MEMORY_IP_PORT is set but neither torch.distributed nor RANK and "
            "WORLD_SIZE say this process's rank"
        ) from None
