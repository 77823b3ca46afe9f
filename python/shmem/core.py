"""shmem.core: NumPy arrays on the symmetric heap, in the style of NVSHMEM's ``nvshmem.core``.

::

    import numpy as np
    import shmem.core as sc

    with sc.init():                       # the launcher's environment says who is who
        me, n = sc.my_pe(), sc.n_pes()
        a = sc.array((4,), np.int64)      # symmetric: every PE allocates it, collectively
        a[:] = me
        sc.barrier()
        right = np.empty(4, np.int64)
        sc.get(right, a, (me + 1) % n)    # PE me+1's array
        sc.free(a)

Arrays and buffers are host memory of this PE's symmetric heap, mapped by every PE of the node:
``get_peer_array`` gives another PE's array as a NumPy array that loads and stores go to
directly. Allocation, ``free`` and the collectives are collective: every PE of the job (of the
team) calls them in the same order. Failures raise ``ShmemError`` subclasses; bad arguments
``ValueError`` or ``TypeError`` naming the call, the argument and its value.
"""

from __future__ import annotations

import enum
import os
import re
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _shmem as _c

__all__ = [
    "ShmemError", "InitError", "NotInitializedError", "AllocationError", "TeamError",
    "CollectiveError", "SignalOp", "ComparisonType", "ReduceOp", "Team", "TEAM_WORLD",
    "TEAM_SHARED", "init", "finalize", "is_initialized", "my_pe", "n_pes", "buffer", "Buffer",
    "array", "free", "get_peer_array", "get_peer_buffer", "put", "get", "put_signal",
    "signal_op", "signal_wait", "quiet", "fence", "barrier", "barrier_all", "sync",
    "broadcast", "fcollect", "alltoall", "reduce", "reducescatter",
]

# ---- Errors ---------------------------------------------------------------------------------


class ShmemError(RuntimeError):
    """A shmem routine failed; ``code`` is the library's code where it gave one."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.code = code


class InitError(ShmemError):
    """The library could not start (``init``) or end (``finalize``)."""


class NotInitializedError(ShmemError):
    """A routine was called before ``init`` or after ``finalize``."""


class AllocationError(ShmemError, MemoryError):
    """The symmetric heap has no room for an allocation."""


class TeamError(ShmemError):
    """A team could not be made, or a PE is not in it."""


class CollectiveError(ShmemError):
    """A collective routine failed."""


# ---- Enums ----------------------------------------------------------------------------------


class SignalOp(enum.IntEnum):
    """How a signal word is updated (OpenSHMEM's values)."""

    #: The signal becomes the value.
    SET = _c.OSH_SIGNAL_SET
    #: The value is added to the signal.
    ADD = _c.OSH_SIGNAL_ADD


class ComparisonType(enum.IntEnum):
    """How ``signal_wait`` compares the signal with its value (OpenSHMEM's values)."""

    #: Equal.
    CMP_EQ = _c.OSH_CMP_EQ
    #: Not equal.
    CMP_NE = _c.OSH_CMP_NE
    #: Greater than.
    CMP_GT = _c.OSH_CMP_GT
    #: Greater than or equal.
    CMP_GE = _c.OSH_CMP_GE
    #: Less than.
    CMP_LT = _c.OSH_CMP_LT
    #: Less than or equal.
    CMP_LE = _c.OSH_CMP_LE


class ReduceOp(str, enum.Enum):
    """The reductions of ``reduce`` and ``reducescatter``; ``and``, ``or``, ``xor`` on integers."""

    #: Sum.
    SUM = "sum"
    #: Product.
    PROD = "prod"
    #: Minimum.
    MIN = "min"
    #: Maximum.
    MAX = "max"
    #: Bitwise and.
    AND = "and"
    #: Bitwise or.
    OR = "or"
    #: Bitwise exclusive or.
    XOR = "xor"


# ---- Teams ----------------------------------------------------------------------------------


class Team:
    """A team of PEs (an OpenSHMEM team handle). ``TEAM_WORLD`` holds every PE."""

    __slots__ = ("handle", "name")

    def __init__(self, handle: int, name: str = "team"):
        #: The handle (``shmem_team_t``) as an int.
        self.handle = handle
        #: A name for messages.
        self.name = name

    def my_pe(self) -> int:
        """This PE's number in the team (-1 when it is not in it)."""
        _require_init("Team.my_pe")
        return _c.osh_team_my_pe(self.handle)

    def n_pes(self) -> int:
        """The number of PEs of the team."""
        _require_init("Team.n_pes")
        return _c.osh_team_n_pes(self.handle)

    def translate_pe(self, pe: int, dest: "Team") -> int:
        """The number in ``dest`` of this team's PE ``pe`` (-1 when it has none)."""
        _require_init("Team.translate_pe")
        return _c.osh_team_translate_pe(self.handle, _int("Team.translate_pe", "pe", pe), dest.handle)

    def split_strided(self, start: int, stride: int, size: int) -> Optional["Team"]:
        """Collective over this team: a team of its PEs ``start``, ``start + stride``, ...
        (``size`` of them); ``None`` on the PEs left out. Raises ``TeamError`` on failure."""
        _require_init("Team.split_strided")
        rc, handle = _c.osh_team_split_strided(self.handle, start, stride, size)
        if rc != 0:
            raise TeamError(f"Team.split_strided(start={start}, stride={stride}, size={size}) of "
                            f"{self.name} failed", rc)
        return Team(handle, f"{self.name}[{start}::{stride}][:{size}]") if handle else None

    def destroy(self) -> None:
        """Collective over the team: ends it (``TEAM_WORLD`` and ``TEAM_SHARED`` may not be)."""
        if self.handle in (TEAM_WORLD.handle, TEAM_SHARED.handle):
            raise ValueError(f"Team.destroy: team={self.name} is predefined and cannot be destroyed")
        _require_init("Team.destroy")
        _c.osh_team_destroy(self.handle)
        self.handle = 0

    def __repr__(self) -> str:
        return f"Team({self.name})"


#: Every PE of the job.
TEAM_WORLD = Team(_c.osh_team_world(), "TEAM_WORLD")
#: The PEs whose memory this PE maps (those of its node).
TEAM_SHARED = Team(_c.osh_team_shared(), "TEAM_SHARED")

# ---- Start and end --------------------------------------------------------------------------

_LAUNCHERS = (  # rank, size: the library's order
    ("SHMEM_RUN_RANK", "SHMEM_RUN_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("RANK", "WORLD_SIZE"),
)
_DEFAULT_HEAP = 512 << 20
_allocations: dict = {}  # address -> Buffer, this PE's live allocations


def _heap_size_from_env() -> int:
    """SHMEM_SYMMETRIC_SIZE (else its deprecated name SMA_SYMMETRIC_SIZE), as the library reads
    it: a variable set but blank is refused, not taken for the default."""
    name = "SHMEM_SYMMETRIC_SIZE" if "SHMEM_SYMMETRIC_SIZE" in os.environ else "SMA_SYMMETRIC_SIZE"
    text = os.environ.get(name)
    if text is None:
        return _DEFAULT_HEAP
    if not text.strip():
        raise ValueError(f"init: {name}={text!r} is set but empty: unset it for the default "
                         "(512M), or give bytes with optional K/M/G/T suffix")
    return _parse_size(text, name)


def _parse_size(text: str, name: str = "SHMEM_SYMMETRIC_SIZE") -> int:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)[bB]?\s*", text)
    if not m:
        raise ValueError(f"init: {name}={text!r} is not a size")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def _launcher_rank() -> Tuple[int, int]:
    for rank, size in _LAUNCHERS:
        if os.environ.get(rank):
            return int(os.environ[rank]), int(os.environ.get(size, "1"))
    return 0, 1


class _Job:
    """What ``init`` returns: ``with init(): ...`` finalizes at the end of the block."""

    def __enter__(self) -> "_Job":
        return self

    def __exit__(self, *exc: Any) -> None:
        if is_initialized():
            finalize()


def init(mype: Optional[int] = None, npes: Optional[int] = None, mem_size: Optional[int] = None,
         *, attr: Optional[_c.InitAttr] = None, uid: Optional[bytes] = None) -> _Job:
    """Starts the library on this PE (collective over the job).

    With no argument, the launcher's environment says who is who (shmemrun, mpirun, torchrun,
    Slurm; a process started alone is a 1-PE job) and the heap is ``SHMEM_SYMMETRIC_SIZE`` (512
    MiB by default). ``mype``, ``npes``, ``mem_size`` are those of ``shmem.shmem_init``;
    ``attr`` (an ``InitAttr`` with an ``ip_port``) or ``uid`` (from
    ``shmem.shmem_get_unique_id`` on PE 0, with ``mype``, ``npes``, ``mem_size``) start
    processes by hand. Raises ``InitError`` with the library's code on failure. Returns an
    object whose ``with`` block ends with ``finalize()``.
    """
    if is_initialized():
        raise InitError("init: the library is already running (call finalize first)")
    if attr is not None:
        rc = _c.shmem_init(attr)
    else:
        if mype is None or npes is None:
            lr, ln = _launcher_rank()
            mype = lr if mype is None else mype
            npes = ln if npes is None else npes
        if mem_size is None:
            mem_size = _heap_size_from_env()
        if uid is not None:
            rc = _c.shmem_init_using_unique_id(mype, npes, mem_size, uid)
        else:
            rc = _c.shmem_init(mype, npes, mem_size)
    if rc != 0:
        raise InitError(f"init: the library did not start (code {rc}; its reason is on stderr)", rc)
    return _Job()


def finalize() -> None:
    """Ends the library on this PE (collective). Frees what this package allocated first."""
    _require_init("finalize")
    for buf in list(_allocations.values()):
        buf._detach()
    _allocations.clear()
    rc = _c.shmem_finalize()
    if rc != 0:
        raise InitError(f"finalize failed (code {rc})", rc)


def is_initialized() -> bool:
    """Whether the library is running."""
    return _c.shmem_init_status() == _c.InitStatus.INITIALIZED


def _require_init(call: str) -> None:
    if not is_initialized():
        raise NotInitializedError(f"{call}: the library is not running (call shmem.core.init first)")


def my_pe() -> int:
    """This PE's number in the job."""
    _require_init("my_pe")
    return _c.get_my_pe()


def n_pes() -> int:
    """The number of PEs of the job."""
    _require_init("n_pes")
    return _c.get_pe_count()


# ---- Memory ---------------------------------------------------------------------------------


class Buffer(_c.RawBuffer):
    """Bytes of symmetric memory: the buffer protocol (``memoryview(buf)``,
    ``numpy.frombuffer(buf)``) and DLPack (``numpy.from_dlpack(buf)``, ``torch.from_dlpack``)
    see them in place. ``addr`` is the first byte's address, ``nbytes`` the length. A buffer of
    ``get_peer_buffer`` is another PE's memory."""

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of the bytes (a one-dimensional uint8 tensor on the CPU)."""
        if stream is not None:
            raise ValueError(f"Buffer.__dlpack__: stream={stream!r}: host memory has no stream")
        view = np.frombuffer(self, dtype=np.uint8)
        if max_version is None:
            return view.__dlpack__()
        try:
            return view.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)
        except TypeError:  # NumPy before 2.1
            return view.__dlpack__()

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(kDLCPU, 0)``."""
        return (1, 0)

    def __repr__(self) -> str:
        return f"Buffer(addr={self.addr:#x}, nbytes={self.nbytes})"


def buffer(size: int) -> Buffer:
    """``size`` bytes of symmetric memory (collective; every PE asks for the same size)."""
    _require_init("buffer")
    size = _int("buffer", "size", size)
    if size < 0:
        raise ValueError(f"buffer: size={size} must be 0 or more")
    addr = _c.shmem_malloc(max(size, 1))
    if addr is None:
        raise AllocationError(f"buffer: no room for size={size} bytes on the symmetric heap")
    buf = Buffer(addr, size)
    _allocations[addr] = buf
    return buf


def array(shape: Union[int, Sequence[int]], dtype: Any = np.float32, order: str = "C") -> np.ndarray:
    """A NumPy array of ``shape`` and ``dtype`` on the symmetric heap (collective; every PE asks
    for the same). Its contents are undefined until written."""
    _require_init("array")
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise TypeError(f"array: dtype={dt} holds Python objects, which cannot be symmetric")
    shp = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(int(s) < 0 for s in shp):
        raise ValueError(f"array: shape={shp} has a negative extent")
    count = int(np.prod(shp, dtype=np.int64)) if shp else 1
    buf = buffer(count * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=count).reshape(shp, order=order)


def _base_address(obj: Any) -> int:
    if isinstance(obj, _c.RawBuffer):
        return obj.addr
    if isinstance(obj, np.ndarray):
        return obj.__array_interface__["data"][0]
    raise TypeError(f"expected a shmem.core array or Buffer, got {type(obj).__name__}")


def free(obj: Union[np.ndarray, Buffer]) -> None:
    """Frees an array or buffer of ``array``/``buffer`` (collective). Views of it must not be
    used afterwards."""
    _require_init("free")
    addr = _base_address(obj)
    buf = _allocations.pop(addr, None)
    if buf is None:
        raise ValueError(f"free: {type(obj).__name__} at {addr:#x} is not an allocation of "
                         "shmem.core.array or shmem.core.buffer (or was freed already)")
    buf._detach()
    _c.shmem_free(addr)


def _symmetric(call: str, name: str, a: Any) -> Tuple[int, int]:
    """(address, bytes) of a contiguous array or buffer inside one symmetric allocation."""
    if isinstance(a, _c.RawBuffer):
        addr, nbytes = a.addr, a.nbytes
    elif isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise ValueError(f"{call}: {name} is not C-contiguous")
        addr, nbytes = a.__array_interface__["data"][0], a.nbytes
    else:
        raise TypeError(f"{call}: {name} is a {type(a).__name__}, not an array or Buffer")
    for base, buf in _allocations.items():
        if base <= addr and addr + nbytes <= base + max(buf.nbytes, 1):
            return addr, nbytes
    raise ValueError(f"{call}: {name} at {addr:#x} ({nbytes} bytes) is not symmetric: make it "
                     "with shmem.core.array or shmem.core.buffer")


def _local(call: str, name: str, a: Any) -> Tuple[int, int]:
    """(address, bytes) of any contiguous array or buffer of this process."""
    if isinstance(a, _c.RawBuffer):
        return a.addr, a.nbytes
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise ValueError(f"{call}: {name} is not C-contiguous")
        return a.__array_interface__["data"][0], a.nbytes
    raise TypeError(f"{call}: {name} is a {type(a).__name__}, not an array or Buffer")


def _pe(call: str, pe: Any, team: Optional[Team] = None) -> int:
    pe = _int(call, "pe", pe)
    n = _c.get_pe_count() if team is None else _c.osh_team_n_pes(team.handle)
    if not 0 <= pe < n:
        raise ValueError(f"{call}: pe={pe} is not a PE of {'the job' if team is None else team.name} "
                         f"(0 to {n - 1})")
    return pe


def _int(call: str, name: str, v: Any) -> int:
    if isinstance(v, (bool, float)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{call}: {name}={v!r} is not an int")
    return int(v)


def get_peer_buffer(buf: Buffer, pe: int) -> Buffer:
    """PE ``pe``'s copy of the symmetric ``buf``, which this process loads and stores directly."""
    _require_init("get_peer_buffer")
    addr, nbytes = _symmetric("get_peer_buffer", "buf", buf)
    peer = _c.shmem_ptr(addr, _pe("get_peer_buffer", pe))
    if peer is None:
        raise ShmemError(f"get_peer_buffer: PE {pe}'s memory is not mapped by this PE")
    return Buffer(peer, nbytes)


def get_peer_array(a: np.ndarray, pe: int) -> np.ndarray:
    """PE ``pe``'s copy of the symmetric array ``a``, as a NumPy array of the same shape and
    dtype that loads and stores go to directly (no copy)."""
    _require_init("get_peer_array")
    addr, nbytes = _symmetric("get_peer_array", "a", a)
    peer = _c.shmem_ptr(addr, _pe("get_peer_array", pe))
    if peer is None:
        raise ShmemError(f"get_peer_array: PE {pe}'s memory is not mapped by this PE")
    return np.frombuffer(Buffer(peer, nbytes), dtype=a.dtype, count=a.size).reshape(a.shape)


# ---- RMA and signals ------------------------------------------------------------------------


def _same_type(call: str, dst: Any, src: Any) -> None:
    """A copy moves bytes: two arrays of different dtypes are refused rather than
    reinterpreted; raw bytes (a ``Buffer``, uint8) go with any dtype."""
    if not (isinstance(dst, np.ndarray) and isinstance(src, np.ndarray)):
        return
    if dst.dtype == src.dtype or np.uint8 in (dst.dtype, src.dtype):
        return
    raise TypeError(f"{call}: dst holds {dst.dtype} and src {src.dtype}: {call} copies bytes, so "
                    "both must hold the same type (view one as the other's dtype, or as uint8, "
                    "to copy the bytes as they are)")


def _copy_sizes(call: str, dst_bytes: int, src_bytes: int) -> int:
    if src_bytes > dst_bytes:
        raise ValueError(f"{call}: src has {src_bytes} bytes, more than dst's {dst_bytes}")
    return src_bytes


#: ``put(dst, src, pe, *, nbi=False)``: copies local ``src`` (any C-contiguous buffer: a NumPy
#: array, a ``Buffer``) into the symmetric ``dst`` on PE ``pe`` (``src``'s bytes, at most
#: ``dst``'s; both of one dtype unless one is raw bytes, else ``TypeError`` naming both);
#: complete on return, with ``nbi=True`` after ``quiet()``. Compiled: a call costs little more
#: than the C call.
put = _c.core_put
#: ``get(dst, src, pe, *, nbi=False)``: copies the symmetric ``src`` of PE ``pe`` into local
#: ``dst`` (``dst``'s bytes, at most ``src``'s); complete on return, with ``nbi=True`` after
#: ``quiet()``.
get = _c.core_get


def _signal_var(call: str, sig: Any) -> int:
    addr, nbytes = _symmetric(call, "signal_var", sig)
    if nbytes < 8 or addr % 8:
        raise ValueError(f"{call}: signal_var must be an aligned uint64 (8 bytes), got {nbytes} "
                         f"bytes at {addr:#x}")
    if isinstance(sig, np.ndarray) and sig.dtype != np.uint64:
        raise TypeError(f"{call}: signal_var has dtype {sig.dtype}, not uint64")
    return addr


def put_signal(dst: Any, src: Any, signal_var: Any, signal_val: int,
               signal_op: SignalOp, pe: int, *, nbi: bool = False) -> None:
    """``put``, then updates the uint64 ``signal_var`` (symmetric) on PE ``pe`` with
    ``signal_val`` by ``signal_op``: a PE that sees the signal sees the data."""
    d, dn = _symmetric("put_signal", "dst", dst)
    s, sn = _local("put_signal", "src", src)
    _same_type("put_signal", dst, src)
    n = _copy_sizes("put_signal", dn, sn)
    sig = _signal_var("put_signal", signal_var)
    _c.osh_putmem_signal(d, s, n, sig, int(signal_val), int(SignalOp(signal_op)),
                         _pe("put_signal", pe), nbi)


def signal_op(signal_var: Any, signal_val: int, signal_op: SignalOp, pe: int) -> None:
    """Updates the uint64 ``signal_var`` on PE ``pe`` atomically with ``signal_val``."""
    sig = _signal_var("signal_op", signal_var)
    _c.osh_signal_op(sig, int(signal_val), int(SignalOp(signal_op)), _pe("signal_op", pe))


def signal_wait(signal_var: Any, signal_val: int,
                cmp: ComparisonType = ComparisonType.CMP_GE) -> int:
    """Waits until this PE's uint64 ``signal_var`` compares true with ``signal_val``; returns
    the signal's value then."""
    sig = _signal_var("signal_wait", signal_var)
    return _c.osh_signal_wait_until(sig, int(ComparisonType(cmp)), int(signal_val))


def quiet() -> None:
    """Completes every put, get and signal this PE issued."""
    _require_init("quiet")
    _c.shmem_quiet()


def fence() -> None:
    """Orders this PE's puts to each PE."""
    _require_init("fence")
    _c.shmem_fence()


def barrier(team: Team = TEAM_WORLD) -> None:
    """Completes this PE's puts, then waits for every PE of ``team``."""
    _require_init("barrier")
    rc = _c.osh_team_barrier(team.handle)
    if rc != 0:
        raise CollectiveError(f"barrier on {team.name} failed", rc)


def barrier_all() -> None:
    """``barrier(TEAM_WORLD)``."""
    _require_init("barrier_all")
    _c.shmem_barrier_all()


def sync(team: Team = TEAM_WORLD) -> None:
    """Waits for every PE of ``team``, completing nothing."""
    _require_init("sync")
    if team.handle == TEAM_WORLD.handle:
        _c.shmem_sync_all()
    else:
        barrier(team)


# ---- Collectives ----------------------------------------------------------------------------


def _same_dtype(call: str, dst: np.ndarray, src: np.ndarray) -> None:
    for name, a in (("dst", dst), ("src", src)):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{call}: {name} is a {type(a).__name__}, not a NumPy array")
    if dst.dtype != src.dtype:
        raise TypeError(f"{call}: dst has dtype {dst.dtype}, src {src.dtype}")


def _check(call: str, team: Team, rc: int) -> None:
    if rc != 0:
        raise CollectiveError(f"{call} on {team.name} failed (code {rc})", rc)


def broadcast(team: Team, dst: np.ndarray, src: np.ndarray, root: int = 0) -> None:
    """Copies ``src`` of the team's PE ``root`` into ``dst`` on every PE of the team (both
    symmetric; ``dst`` at least as large)."""
    _same_dtype("broadcast", dst, src)
    d, dn = _symmetric("broadcast", "dst", dst)
    s, sn = _symmetric("broadcast", "src", src)
    n = _copy_sizes("broadcast", dn, sn)
    _check("broadcast", team, _c.osh_collective("broadcast", team.handle, d, s, n,
                                                _pe("broadcast", root, team)))


def fcollect(team: Team, dst: np.ndarray, src: np.ndarray) -> None:
    """Concatenates every team PE's ``src`` (the same size on each) into ``dst``, in team order
    (``dst.size == src.size * team.n_pes()``)."""
    _same_dtype("fcollect", dst, src)
    d, dn = _symmetric("fcollect", "dst", dst)
    s, sn = _symmetric("fcollect", "src", src)
    n = _c.osh_team_n_pes(team.handle)
    if dn != sn * n:
        raise ValueError(f"fcollect: dst has {dst.size} elements, not src's {src.size} times the "
                         f"{n} PEs of {team.name}")
    _check("fcollect", team, _c.osh_collective("fcollect", team.handle, d, s, sn, 0))


def alltoall(team: Team, dst: np.ndarray, src: np.ndarray) -> None:
    """Sends block j of ``src`` to team PE j, which stores it as block i (this PE's number) of
    ``dst``; both hold ``team.n_pes()`` blocks of the same size."""
    _same_dtype("alltoall", dst, src)
    d, dn = _symmetric("alltoall", "dst", dst)
    s, sn = _symmetric("alltoall", "src", src)
    n = _c.osh_team_n_pes(team.handle)
    if dn != sn or src.size % n:
        raise ValueError(f"alltoall: src ({src.size}) and dst ({dst.size}) must have the same "
                         f"size, a multiple of the {n} PEs of {team.name}")
    _check("alltoall", team, _c.osh_collective("alltoall", team.handle, d, s, sn // n, 0))


def _reduce_op(call: str, op: Any, dtype: np.dtype) -> str:
    try:
        o = ReduceOp(op.lower() if isinstance(op, str) else op).value
    except ValueError:
        raise ValueError(f"{call}: op={op!r} is none of {[x.value for x in ReduceOp]}") from None
    if dtype.kind == "f" and o in ("and", "or", "xor"):
        raise TypeError(f"{call}: op={o!r} needs integers, not {dtype}")
    return o


def reduce(team: Team, dst: np.ndarray, src: np.ndarray, op: Union[ReduceOp, str] = "sum") -> None:
    """Reduces ``src`` element-wise over the team's PEs with ``op`` into ``dst`` on every PE
    (both symmetric, the same size and dtype: int8 .. uint64, float32, float64; ``dst`` may be
    ``src``)."""
    _same_dtype("reduce", dst, src)
    o = _reduce_op("reduce", op, src.dtype)
    d, dn = _symmetric("reduce", "dst", dst)
    s, sn = _symmetric("reduce", "src", src)
    if dn != sn:
        raise ValueError(f"reduce: dst has {dst.size} elements, src {src.size}")
    _check("reduce", team, _c.osh_reduce(o, src.dtype.name, team.handle, d, s, src.size))


def reducescatter(team: Team, dst: np.ndarray, src: np.ndarray,
                  op: Union[ReduceOp, str] = "sum", *, scratch: Optional[np.ndarray] = None) -> None:
    """Reduces ``src`` (``team.n_pes()`` blocks of ``dst.size``) element-wise over the team with
    ``op``; team PE i gets block i of the result in ``dst``. The whole reduction goes through
    ``scratch``, a symmetric array of ``src``'s size and dtype; without one, the call allocates
    and frees it, which is collective over the job: then every PE of the job calls it (on a
    smaller team, pass ``scratch``)."""
    _same_dtype("reducescatter", dst, src)
    o = _reduce_op("reducescatter", op, src.dtype)
    _symmetric("reducescatter", "dst", dst)
    s, _ = _symmetric("reducescatter", "src", src)
    n, me = _c.osh_team_n_pes(team.handle), _c.osh_team_my_pe(team.handle)
    if src.size != dst.size * n:
        raise ValueError(f"reducescatter: src has {src.size} elements, not dst's {dst.size} times "
                         f"the {n} PEs of {team.name}")
    if scratch is not None:
        _same_dtype("reducescatter", scratch, src)
        if scratch.size != src.size:
            raise ValueError(f"reducescatter: scratch has {scratch.size} elements, not src's "
                             f"{src.size}")
    tmp = array(src.shape, src.dtype) if scratch is None else scratch
    try:
        t, _ = _symmetric("reducescatter", "scratch", tmp)
        _check("reducescatter", team, _c.osh_reduce(o, src.dtype.name, team.handle, t, s, src.size))
        dst.reshape(-1)[:] = tmp.reshape(-1)[me * dst.size:(me + 1) * dst.size]
    finally:
        if scratch is None:
            free(tmp)
