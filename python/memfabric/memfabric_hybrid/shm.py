"""memfabric_hybrid.shm: Share Memory (smem_shm_*), as memfabric's ``shm`` module.

Methods return the C function's code and do not raise (``shm.create`` raises ``RuntimeError``
when the C call returns NULL, as memfabric's does); the window's base ``gva`` is an int.
"""

import ctypes
import functools

from ._lib import CEnum as _CEnum, config_attr, lib as _c, to_bytes, to_int, to_member, to_str

__all__ = ["ShmConfig", "ShmDataOpType", "ShareMemory", "initialize", "uninitialize", "create"]


class ShmDataOpType(_CEnum):
    MTE = 1
    SDMA = 2
    RDMA = 4


class _Config(ctypes.Structure):
    """smem_shm_config_t as memfabric lays it out (20 bytes)."""

    _fields_ = [("shmInitTimeout", ctypes.c_uint32), ("shmCreateTimeout", ctypes.c_uint32),
                ("controlOperationTimeout", ctypes.c_uint32),
                ("startConfigStoreServer", ctypes.c_bool), ("flags", ctypes.c_uint32)]


_field = functools.partial(config_attr, "ShmConfig")


class ShmConfig:
    """smem_shm_config_t, made with ``smem_shm_config_init``'s defaults (timeouts 120 s,
    ``start_store`` True, ``flags`` 0)."""

    init_timeout = _field("init_timeout", "shmInitTimeout", "u32")
    create_timeout = _field("create_timeout", "shmCreateTimeout", "u32")
    operation_timeout = _field("operation_timeout", "controlOperationTimeout", "u32")
    start_store = _field("start_store", "startConfigStoreServer", "bool")
    flags = _field("flags", "flags", "u32")

    def __init__(self):
        self._c = _Config()
        _c.smem_shm_config_init(ctypes.byref(self._c))

    def __repr__(self):
        names = ("init_timeout", "create_timeout", "operation_timeout", "start_store", "flags")
        return "ShmConfig(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"


def initialize(store_url, world_size, rank_id, device_id, config):
    """``smem_shm_init``: rank 0 serves the store at `store_url` when ``config.start_store``."""
    call = "shm.initialize"
    url = to_str(call, "store_url", store_url)
    n = to_int(call, "world_size", world_size, "u32")
    rank = to_int(call, "rank_id", rank_id, "u32")
    dev = to_int(call, "device_id", device_id, "u16")
    if not isinstance(config, ShmConfig):
        raise TypeError(f"{call}(): argument config must be a ShmConfig, not "
                        f"{type(config).__name__}")
    return _c.smem_shm_init(url, n, rank, dev, ctypes.byref(config._c))


def uninitialize(flags=0):
    """``smem_shm_uninit``."""
    _c.smem_shm_uninit(to_int("shm.uninitialize", "flags", flags, "u32"))


def create(id, rank_size, rank_id, local_mem_size, data_op_type=ShmDataOpType.MTE, flags=0):
    """``smem_shm_create``, collective over `rank_size` ranks: a ShareMemory, or
    ``RuntimeError("create shm failed!")`` (the last error says why)."""
    call = "shm.create"
    gva = ctypes.c_void_p()
    handle = _c.smem_shm_create(
        to_int(call, "id", id, "u32"), to_int(call, "rank_size", rank_size, "u32"),
        to_int(call, "rank_id", rank_id, "u32"),
        to_int(call, "local_mem_size", local_mem_size, "u64"),
        to_member(call, "data_op_type", data_op_type, ShmDataOpType),
        to_int(call, "flags", flags, "u32"), ctypes.byref(gva))
    if not handle:
        raise RuntimeError("create shm failed!")
    return ShareMemory(handle, gva.value or 0)


class ShareMemory:
    """A Share Memory object (made by ``shm.create``): rank r's slot is at
    ``gva + r * local_mem_size``. Dropping the last reference destroys it."""

    def __init__(self, handle, gva):
        self._h = handle
        self._gva = gva
        self._destroyed = False

    def __del__(self):
        # memfabric's destructor destroys again after destroy() (-2007, ignored); here it
        # skips an object already destroyed, so no error line is logged for it.
        if getattr(self, "_h", None) and not self._destroyed:
            _c.smem_shm_destroy(self._h, 0)

    @property
    def local_rank(self):
        """``smem_shm_get_global_rank``: the rank given to ``create``."""
        return _c.smem_shm_get_global_rank(self._h)

    @property
    def rank_size(self):
        """``smem_shm_get_global_rank_size``."""
        return _c.smem_shm_get_global_rank_size(self._h)

    @property
    def gva(self):
        """The window's base address."""
        return self._gva

    def set_context(self, context):
        """``smem_shm_set_extra_context``; returns None (as memfabric: the code is dropped, the
        last error says what failed)."""
        data = to_bytes("ShareMemory.set_context", "context", context)
        _c.smem_shm_set_extra_context(self._h, data, len(data))

    def destroy(self, flags=0):
        """``smem_shm_destroy``: local; a second destroy returns -2007."""
        rc = _c.smem_shm_destroy(self._h, to_int("ShareMemory.destroy", "flags", flags, "u32"))
        self._destroyed = self._destroyed or rc == 0
        return rc

    def query_support_data_operation(self):
        """``smem_shm_query_support_data_operation``: 1 (MTE)."""
        return _c.smem_shm_query_support_data_operation()

    def barrier(self):
        """``smem_shm_control_barrier``: every rank of the object."""
        return _c.smem_shm_control_barrier(self._h)

    def all_gather(self, local_data):
        """``smem_shm_control_allgather``: every rank's `local_data`, in rank order, as bytes
        of ``len(local_data) * rank_size``; zeros where the call failed (as memfabric: the code
        is dropped, the last error says why)."""
        data = to_bytes("ShareMemory.all_gather", "local_data", local_data)
        size = self.rank_size
        total = len(data) * size if size != 0xFFFFFFFF else 0
        out = ctypes.create_string_buffer(max(total, 1))
        _c.smem_shm_control_allgather(self._h, data, len(data), out, total)
        return out.raw[:total]

    def topology_can_reach(self, remote_rank, reach_info):
        """``smem_shm_topology_can_reach``: the C code only (as memfabric, the reach mask it
        writes is not returned)."""
        call = "ShareMemory.topology_can_reach"
        info = ctypes.c_uint32(to_int(call, "reach_info", reach_info, "u32"))
        return _c.smem_shm_topology_can_reach(self._h, to_int(call, "remote_rank", remote_rank,
                                                              "u32"), ctypes.byref(info))


assert ctypes.sizeof(_Config) == 20, "smem_shm_config_t layout"
