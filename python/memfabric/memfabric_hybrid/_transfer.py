"""The transfer engine (smem_trans_*): memfabric's ``TransferEngine``, with Mooncake's Python
engine API that SGLang drives, also exported by the package ``mf_adapter``.

A "Prefill" engine (sender) writes into and reads from the memory a "Decode" engine (receiver)
registered, by session id (``ip:port``, ``[ipv6]:port``); both meet through a config store
(``create_config_store``, or ``python -m mf_adapter.launch_ascend_mf_store``). Methods return
the C code and do not raise; addresses are ints. ``initialize`` returns as soon as the engine
is up (memfabric's sleeps 10 s after creating it).
"""

import ctypes
import enum
import errno
import os
import random
import socket

from ._lib import SM_ERROR, TRANS_MISSING, array, fail, library_path, lib as _c
from ._lib import to_addr, to_int, to_int_list, to_member, to_str

__all__ = ["TransferEngine", "TransferOpcode", "TransDataOpType", "create_config_store",
           "set_log_level", "set_conf_store_tls"]


class TransferOpcode(enum.IntEnum):
    Read = 0
    Write = 1


class TransDataOpType(enum.IntEnum):
    SDMA = 1
    DEVICE_RDMA = 8


# memfabric exports the opcode's members beside it.
Read, Write = TransferOpcode.Read, TransferOpcode.Write

_ROLES = {"Prefill": 1, "Decode": 2}  # SMEM_TRANS_SENDER, SMEM_TRANS_RECEIVER
_MAX_BATCH_REGISTER = 1 << 20
_RPC_PORTS = (15000, 25000)
_RPC_TRIES = 1000


class _Config(ctypes.Structure):
    """smem_trans_config_t as memfabric lays it out (24 bytes)."""

    _fields_ = [("role", ctypes.c_uint32), ("initTimeout", ctypes.c_uint32),
                ("deviceId", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("dataOpType", ctypes.c_uint32), ("startConfigServer", ctypes.c_bool)]


def _apply_env_log_level():
    # memfabric's adapter takes its level from ASCEND_MF_LOG_LEVEL (one digit), unless
    # SHMEM_LOG_LEVEL already says how much to log.
    level = os.environ.get("ASCEND_MF_LOG_LEVEL", "")
    if len(level) == 1 and level.isdigit() and "SHMEM_LOG_LEVEL" not in os.environ:
        _c.smem_set_log_level(int(level))


def _trans_missing(call):
    return fail(SM_ERROR, call, f"{library_path()} has no transfer engine: it lacks "
                f"{TRANS_MISSING[0]} and {len(TRANS_MISSING) - 1} more smem_trans_* functions")


def create_config_store(store_url):
    """``smem_create_config_store``: serves a config store at `store_url`
    (``tcp://<ip>:<port>``) in this process, for as long as it lives."""
    url = to_str("create_config_store", "store_url", store_url)
    _apply_env_log_level()
    return _c.smem_create_config_store(url)


def set_log_level(level):
    """``smem_set_log_level`` (0 debug .. 3 error)."""
    return _c.smem_set_log_level(to_int("set_log_level", "level", level, "int"))


def set_conf_store_tls(enable, tls_info):
    """``smem_set_conf_store_tls``: accepted and ignored, 0 (as memfabric)."""
    info = to_str("set_conf_store_tls", "tls_info", tls_info)
    return _c.smem_set_conf_store_tls(bool(enable), info, len(info))


def _addr_array(call, name, values):
    return array(ctypes.c_uint64, to_int_list(call, name, values, "u64"))


class TransferEngine:
    """memfabric's transfer engine: ``initialize``, then register memory, then
    ``transfer_sync_write``/``read`` (and batches) to a peer's session id."""

    TransferOpcode = TransferOpcode
    TransDataOpType = TransDataOpType

    def __init__(self):
        self._h = None
        self._rpc_socket = None

    def __del__(self):
        sock = getattr(self, "_rpc_socket", None)
        if sock is not None:
            sock.close()

    def initialize(self, store_url, session_id, role, device_id,
                   data_op_type=TransDataOpType.SDMA):
        """Creates the engine: `role` "Prefill" (sender) or "Decode" (receiver), else -1;
        `session_id` this engine's ``ip:port``. 0 once the engine is up, -1 (or the init's
        code) otherwise, the last error saying why."""
        call = "TransferEngine.initialize"
        url = to_str(call, "store_url", store_url)
        sid = to_str(call, "session_id", session_id)
        if not isinstance(role, str):
            raise TypeError(f"{call}(): argument role must be a str, not {type(role).__name__}")
        dev = to_int(call, "device_id", device_id, "u32")
        op = to_member(call, "data_op_type", data_op_type, TransDataOpType)
        if role not in _ROLES:
            return fail(SM_ERROR, call, f"invalid argument role={role!r}: not 'Prefill' or "
                        "'Decode'")
        if TRANS_MISSING:
            return _trans_missing(call)
        _apply_env_log_level()
        cfg = _Config()
        _c.smem_trans_config_init(ctypes.byref(cfg))
        cfg.role, cfg.deviceId, cfg.dataOpType = _ROLES[role], dev, op
        rc = _c.smem_trans_init(ctypes.byref(cfg))
        if rc != 0:
            return rc
        handle = _c.smem_trans_create(url, sid, ctypes.byref(cfg))
        if not handle:
            return SM_ERROR
        self._h = handle
        return 0

    def get_rpc_port(self):
        """A free TCP port in 15000..25000, held (bound) by this engine until ``destroy``, to
        make a unique session id ``f"{host}:{port}"``; 0 if none was found."""
        if self._rpc_socket is not None:
            return self._rpc_socket.getsockname()[1]
        family = socket.AF_INET if _has_ipv4() else socket.AF_INET6
        for _ in range(_RPC_TRIES):
            port = random.randint(*_RPC_PORTS)
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.bind(("", port))
            except OSError as e:
                sock.close()
                if e.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                return 0
            self._rpc_socket = sock
            return port
        return 0

    def _ready(self, call):
        if TRANS_MISSING:
            return _trans_missing(call)
        if not self._h:
            return fail(SM_ERROR, call, "the engine is not initialised (initialize() first, "
                        "and it must return 0)")
        return 0

    def transfer_sync_write(self, dest_session, buffer, peer_buffer, length, flags=0):
        """``smem_trans_write``: `length` bytes from local `buffer` to `peer_buffer` of the
        engine `dest_session`, complete on return."""
        return self._one("transfer_sync_write", _c_fn("smem_trans_write"), dest_session, buffer,
                         peer_buffer, length, None, flags)

    def transfer_sync_read(self, dest_session, buffer, peer_buffer, length, flags=0):
        """``smem_trans_read``: `length` bytes from `peer_buffer` of `dest_session` into
        local `buffer`."""
        return self._one("transfer_sync_read", _c_fn("smem_trans_read"), dest_session, buffer,
                         peer_buffer, length, None, flags)

    def batch_transfer_sync_write(self, dest_session, buffers, peer_buffers, lengths, flags=0):
        """``smem_trans_batch_write``: the lists must have one length (else -1)."""
        return self._batch("batch_transfer_sync_write", _c_fn("smem_trans_batch_write"),
                           dest_session, buffers, peer_buffers, lengths, None, flags)

    def batch_transfer_sync_read(self, dest_session, buffers, peer_buffers, lengths, flags=0):
        """``smem_trans_batch_read``."""
        return self._batch("batch_transfer_sync_read", _c_fn("smem_trans_batch_read"),
                           dest_session, buffers, peer_buffers, lengths, None, flags)

    def transfer_async_write_submit(self, dest_session, buffer, peer_buffer, length, stream,
                                    flags=0):
        """``smem_trans_write_submit`` on `stream` (an ``aclrtStream`` handle as an int)."""
        return self._one("transfer_async_write_submit", _c_fn("smem_trans_write_submit"),
                         dest_session, buffer, peer_buffer, length, stream, flags)

    def transfer_async_read_submit(self, dest_session, buffer, peer_buffer, length, stream,
                                   flags=0):
        """``smem_trans_read_submit``."""
        return self._one("transfer_async_read_submit", _c_fn("smem_trans_read_submit"),
                         dest_session, buffer, peer_buffer, length, stream, flags)

    def batch_transfer_async_write_submit(self, dest_session, buffers, peer_buffers, lengths,
                                          stream, flags=0):
        """``smem_trans_batch_write_submit``."""
        return self._batch("batch_transfer_async_write_submit",
                           _c_fn("smem_trans_batch_write_submit"), dest_session, buffers,
                           peer_buffers, lengths, stream, flags)

    def batch_transfer_async_read_submit(self, dest_session, buffers, peer_buffers, lengths,
                                         stream, flags=0):
        """``smem_trans_batch_read_submit``."""
        return self._batch("batch_transfer_async_read_submit",
                           _c_fn("smem_trans_batch_read_submit"), dest_session, buffers,
                           peer_buffers, lengths, stream, flags)

    def _one(self, name, fn, dest_session, buffer, peer_buffer, length, stream, flags):
        call = f"TransferEngine.{name}"
        args = [to_addr(call, "buffer", buffer), to_str(call, "dest_session", dest_session),
                to_addr(call, "peer_buffer", peer_buffer), to_int(call, "length", length, "u64")]
        if stream is not None:
            args.append(to_addr(call, "stream", stream))
        f = to_int(call, "flags", flags, "u32")
        rc = self._ready(call)
        return rc if rc != 0 else fn(self._h, *args, f)

    def _batch(self, name, fn, dest_session, buffers, peer_buffers, lengths, stream, flags):
        call = f"TransferEngine.{name}"
        dest = to_str(call, "dest_session", dest_session)
        local = _addr_array(call, "buffers", buffers)
        remote = _addr_array(call, "peer_buffers", peer_buffers)
        sizes = _addr_array(call, "lengths", lengths)
        extra = [] if stream is None else [to_addr(call, "stream", stream)]
        f = to_int(call, "flags", flags, "u32")
        if not len(buffers) == len(peer_buffers) == len(lengths):
            return fail(SM_ERROR, call, f"invalid argument: buffers, peer_buffers, lengths have "
                        f"{len(buffers)}, {len(peer_buffers)}, {len(lengths)} elements (must "
                        "be equal)")
        rc = self._ready(call)
        if rc != 0:
            return rc
        return fn(self._h, local, dest, remote, sizes, len(buffers), *extra, f)

    def register_memory(self, buffer_addr, capacity):
        """``smem_trans_register_mem``: peers may read and write `capacity` bytes at
        `buffer_addr` once this returns 0."""
        call = "TransferEngine.register_memory"
        addr = to_addr(call, "buffer_addr", buffer_addr)
        size = to_int(call, "capacity", capacity, "u64")
        rc = self._ready(call)
        return rc if rc != 0 else _c.smem_trans_register_mem(self._h, addr, size, 0)

    def unregister_memory(self, buffer_addr):
        """``smem_trans_deregister_mem``."""
        call = "TransferEngine.unregister_memory"
        addr = to_addr(call, "buffer_addr", buffer_addr)
        rc = self._ready(call)
        return rc if rc != 0 else _c.smem_trans_deregister_mem(self._h, addr)

    def batch_register_memory(self, buffer_addrs, capacities):
        """``smem_trans_batch_register_mem``: lists of one length, at most 1048576 entries
        (else -1)."""
        call = "TransferEngine.batch_register_memory"
        addrs = _addr_array(call, "buffer_addrs", buffer_addrs)
        sizes = _addr_array(call, "capacities", capacities)
        n = len(buffer_addrs)
        if n != len(capacities):
            return fail(SM_ERROR, call, f"invalid argument: buffer_addrs has {n} elements, "
                        f"capacities {len(capacities)} (must be equal)")
        if n > _MAX_BATCH_REGISTER:
            return fail(SM_ERROR, call, f"invalid argument: {n} entries, more than "
                        f"{_MAX_BATCH_REGISTER}")
        rc = self._ready(call)
        return rc if rc != 0 else _c.smem_trans_batch_register_mem(self._h, addrs, sizes, n, 0)

    def destroy(self):
        """``smem_trans_destroy``; releases the port of ``get_rpc_port``."""
        if self._h and not TRANS_MISSING:
            _c.smem_trans_destroy(self._h, 0)
        self._h = None
        if self._rpc_socket is not None:
            self._rpc_socket.close()
            self._rpc_socket = None

    def unInitialize(self):
        """``smem_trans_uninit``."""
        if not TRANS_MISSING:
            _c.smem_trans_uninit(0)


def _c_fn(name):
    # The C function, or a stand-in for a library without the transfer engine (never called:
    # _ready refuses first).
    return getattr(_c, name) if name not in TRANS_MISSING else None


def _has_ipv4():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        return True
    except OSError:
        return False


assert ctypes.sizeof(_Config) == 24, "smem_trans_config_t layout"
