"""memfabric_hybrid.bm: Big Memory pools (smem_bm_*), as memfabric's ``bm`` module.

Methods return the C function's code and do not raise (``bm.create`` raises ``RuntimeError``
when the C call returns NULL, as memfabric's does); addresses are ints.
"""

import ctypes
import functools

from ._lib import SM_INVALID_PARAM, CEnum as _CEnum, array, config_attr, fail, lib as _c
from ._lib import to_addr, to_int, to_int_list, to_member, to_str

__all__ = ["BmConfig", "BmMemType", "BmCopyType", "BmDataOpType", "BigMemory", "initialize",
           "uninitialize", "bm_rank_id", "create"]


class BmMemType(_CEnum):
    LOCAL_DEVICE = 0
    LOCAL_HOST = 1
    DEVICE = 2
    HOST = 3


class BmCopyType(_CEnum):
    L2G = 0
    G2L = 1
    G2H = 2
    H2G = 3
    L2GH = 4
    GH2L = 5
    GH2H = 6
    H2GH = 7
    G2G = 8
    AUTO = 9


class BmDataOpType(_CEnum):
    SDMA = 1
    HOST_RDMA = 2
    HOST_URMA = 16
    HOST_TCP = 4
    DEVICE_RDMA = 8


class _TlsConfig(ctypes.Structure):
    _fields_ = [("tlsEnable", ctypes.c_bool)] + [
        (f, ctypes.c_char * 256) for f in ("caPath", "crlPath", "certPath", "keyPath",
                                           "keyPassPath", "packagePath", "decrypterLibPath")]


class _Config(ctypes.Structure):
    """smem_bm_config_t as memfabric lays it out (3676 bytes)."""

    _fields_ = [
        ("initTimeout", ctypes.c_uint32),
        ("createTimeout", ctypes.c_uint32),
        ("controlOperationTimeout", ctypes.c_uint32),
        ("startConfigStoreServer", ctypes.c_bool),
        ("startConfigStoreOnly", ctypes.c_bool),
        ("dynamicWorldSize", ctypes.c_bool),
        ("unifiedAddressSpace", ctypes.c_bool),
        ("autoRanking", ctypes.c_bool),
        ("rankId", ctypes.c_uint16),
        ("flags", ctypes.c_uint32),
        ("hcomUrl", ctypes.c_char * 64),
        ("hcomTlsConfig", _TlsConfig),
        ("storeTlsConfig", _TlsConfig),
    ]


_field = functools.partial(config_attr, "BmConfig")


class BmConfig:
    """smem_bm_config_t, made with ``smem_bm_config_init``'s defaults (timeouts 120 s,
    ``start_store`` and ``unified_address_space`` and ``auto_ranking`` True, ``rank_id`` 65535,
    the rest 0/False). ``set_nic(url)`` sets ``hcomUrl`` (memfabric's
    ``tcp://<ip>/<prefix>:<port>``). TLS settings are not exposed (as in memfabric's package)."""

    init_timeout = _field("init_timeout", "initTimeout", "u32")
    create_timeout = _field("create_timeout", "createTimeout", "u32")
    operation_timeout = _field("operation_timeout", "controlOperationTimeout", "u32")
    start_store = _field("start_store", "startConfigStoreServer", "bool")
    start_store_only = _field("start_store_only", "startConfigStoreOnly", "bool")
    dynamic_world_size = _field("dynamic_world_size", "dynamicWorldSize", "bool")
    unified_address_space = _field("unified_address_space", "unifiedAddressSpace", "bool")
    auto_ranking = _field("auto_ranking", "autoRanking", "bool")
    rank_id = _field("rank_id", "rankId", "u16")
    flags = _field("flags", "flags", "u32")

    def __init__(self):
        self._c = _Config()
        _c.smem_bm_config_init(ctypes.byref(self._c))

    def set_nic(self, nic):
        """Copies `nic` into ``hcomUrl`` (64 bytes; a longer one is cut, as memfabric)."""
        raw = to_str("BmConfig.set_nic", "nic", nic)[:64]
        ctypes.memset(ctypes.addressof(self._c) + _Config.hcomUrl.offset, 0, 64)
        ctypes.memmove(ctypes.addressof(self._c) + _Config.hcomUrl.offset, raw, len(raw))

    def __repr__(self):
        names = ("init_timeout", "create_timeout", "operation_timeout", "start_store",
                 "start_store_only", "dynamic_world_size", "unified_address_space",
                 "auto_ranking", "rank_id", "flags")
        return "BmConfig(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"


class _CopyParams(ctypes.Structure):
    _fields_ = [("src", ctypes.c_void_p), ("dest", ctypes.c_void_p), ("dataSize", ctypes.c_size_t)]


class _BatchCopyParams(ctypes.Structure):
    _fields_ = [("sources", ctypes.c_void_p), ("destinations", ctypes.c_void_p),
                ("dataSizes", ctypes.c_void_p), ("batchSize", ctypes.c_uint32)]


_world_size = {"n": 0}


def initialize(store_url, world_size, device_id, config):
    """``smem_bm_init``; also keeps `world_size` for ``create``."""
    call = "bm.initialize"
    url = to_str(call, "store_url", store_url)
    n = to_int(call, "world_size", world_size, "u32")
    dev = to_int(call, "device_id", device_id, "u16")
    if not isinstance(config, BmConfig):
        raise TypeError(f"{call}(): argument config must be a BmConfig, not "
                        f"{type(config).__name__}")
    rc = _c.smem_bm_init(url, n, dev, ctypes.byref(config._c))
    if rc == 0:
        _world_size["n"] = n
    return rc


def uninitialize(flags=0):
    """``smem_bm_uninit``."""
    _c.smem_bm_uninit(to_int("bm.uninitialize", "flags", flags, "u32"))


def bm_rank_id():
    """``smem_bm_get_rank_id``: this process's rank (0 before ``initialize``)."""
    return _c.smem_bm_get_rank_id()


def create(id, local_dram_size, local_hbm_size, data_op_type=BmDataOpType.SDMA, flags=0):
    """``smem_bm_create`` with the world size given to ``initialize``: a BigMemory, or
    ``RuntimeError("create bm handle failed.")`` (the last error says why)."""
    call = "bm.create"
    handle = _c.smem_bm_create(
        to_int(call, "id", id, "u32"), _world_size["n"],
        to_member(call, "data_op_type", data_op_type, BmDataOpType),
        to_int(call, "local_dram_size", local_dram_size, "u64"),
        to_int(call, "local_hbm_size", local_hbm_size, "u64"), to_int(call, "flags", flags, "u32"))
    if not handle:
        raise RuntimeError("create bm handle failed.")
    return BigMemory(handle)


class BigMemory:
    """A Big Memory object (made by ``bm.create``). Dropping the last reference (``del h``)
    destroys it, as ``destroy()`` does."""

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        self.destroy()

    def join(self, flags=0):
        """``smem_bm_join``: collective with the members already joined."""
        return _c.smem_bm_join(self._h, to_int("BigMemory.join", "flags", flags, "u32"))

    def leave(self, flags=0):
        """``smem_bm_leave``."""
        return _c.smem_bm_leave(self._h, to_int("BigMemory.leave", "flags", flags, "u32"))

    def local_mem_size(self, mem_type=BmMemType.DEVICE):
        """``smem_bm_get_local_mem_size_by_mem_type``: this rank's bytes of the pool."""
        t = to_member("BigMemory.local_mem_size", "mem_type", mem_type, BmMemType)
        return _c.smem_bm_get_local_mem_size_by_mem_type(self._h, t)

    def peer_rank_ptr(self, peer_rank, mem_type=BmMemType.DEVICE):
        """``smem_bm_ptr_by_mem_type``: rank `peer_rank`'s segment as an int, 0 for NULL."""
        call = "BigMemory.peer_rank_ptr"
        t = to_member(call, "mem_type", mem_type, BmMemType)
        return _c.smem_bm_ptr_by_mem_type(self._h, t,
                                          to_int(call, "peer_rank", peer_rank, "u16")) or 0

    def destroy(self):
        """``smem_bm_destroy``; the object is unusable afterwards (its calls: -2000)."""
        if self._h:
            _c.smem_bm_destroy(self._h)
            self._h = None

    def get_rank_id_by_gva(self, gva):
        """``smem_bm_get_rank_id_by_gva``: the rank whose segment holds `gva`; 4294967295
        outside the pool."""
        return _c.smem_bm_get_rank_id_by_gva(self._h,
                                             to_addr("BigMemory.get_rank_id_by_gva", "gva", gva))

    def register(self, addr, size):
        """``smem_bm_register_user_mem``."""
        call = "BigMemory.register"
        return _c.smem_bm_register_user_mem(self._h, to_addr(call, "addr", addr),
                                            to_int(call, "size", size, "u64"))

    def unregister(self, addr):
        """``smem_bm_unregister_user_mem``."""
        return _c.smem_bm_unregister_user_mem(self._h,
                                              to_addr("BigMemory.unregister", "addr", addr))

    def copy_data(self, src_ptr, dst_ptr, size, type, flags=0):
        """``smem_bm_copy`` of `size` bytes from `src_ptr` to `dst_ptr` (ints)."""
        call = "BigMemory.copy_data"
        p = _CopyParams(to_addr(call, "src_ptr", src_ptr), to_addr(call, "dst_ptr", dst_ptr),
                        to_int(call, "size", size, "u64"))
        return _c.smem_bm_copy(self._h, ctypes.byref(p), to_member(call, "type", type, BmCopyType),
                               to_int(call, "flags", flags, "u32"))

    def copy_data_batch(self, src_addrs, dst_addrs, sizes, count, type, flags):
        """``smem_bm_copy_batch`` of the first `count` elements of the three lists. A `count`
        larger than a list: -2000 (memfabric reads past the list)."""
        call = "BigMemory.copy_data_batch"
        srcs = to_int_list(call, "src_addrs", src_addrs, "u64")
        dsts = to_int_list(call, "dst_addrs", dst_addrs, "u64")
        lens = to_int_list(call, "sizes", sizes, "u64")
        n = to_int(call, "count", count, "u32")
        t = to_member(call, "type", type, BmCopyType)
        f = to_int(call, "flags", flags, "u32")
        for name, values in (("src_addrs", srcs), ("dst_addrs", dsts), ("sizes", lens)):
            if n > len(values):
                return fail(SM_INVALID_PARAM, call,
                            f"invalid argument count={n}: {name} has {len(values)} elements")
        a, b, c = (array(ctypes.c_uint64, v[:n]) for v in (srcs, dsts, lens))
        p = _BatchCopyParams(ctypes.addressof(a), ctypes.addressof(b), ctypes.addressof(c), n)
        return _c.smem_bm_copy_batch(self._h, ctypes.byref(p), t, f)

    def wait(self):
        """``smem_bm_wait``: completes this object's copies made with ASYNC_COPY_FLAG (1)."""
        return _c.smem_bm_wait(self._h)


assert ctypes.sizeof(_Config) == 3676 and _Config.hcomUrl.offset == 24, "smem_bm_config_t layout"
