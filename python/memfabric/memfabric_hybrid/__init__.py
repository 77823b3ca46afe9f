# memfabric_hybrid's Python package over this library's libmf_smem.so.
#
# The names, defaults and return conventions are memfabric_hybrid 1.0.0's: functions return the C
# function's code (0 success, -2000 invalid argument, -2008 not initialised, ...) and do not raise;
# ``TypeError`` only for a value the C parameter cannot hold. After a non-zero code,
# ``get_last_err_msg()`` names the call, the argument and its value::
#
#     import memfabric_hybrid as mf
#     from memfabric_hybrid import bm
#
#     mf.initialize()
#     cfg = bm.BmConfig()
#     bm.initialize(store_url="tcp://127.0.0.1:7000", world_size=2, device_id=0, config=cfg)
#     h = bm.create(id=0, local_dram_size=64 << 20, local_hbm_size=0,
#                   data_op_type=bm.BmDataOpType.HOST_TCP)
#     h.join()
#
# Modules: ``memfabric_hybrid.bm`` (Big Memory pools), ``memfabric_hybrid.shm`` (Share Memory),
# and the transfer engine (``TransferEngine``, also in the package ``mf_adapter``). One runtime
# per process: the package calls the installed libmf_smem.so through ctypes, so C code of the
# same process using ``smem_*`` or SHMEM shares its state.
#
# The module's docstring is the version, as memfabric's.

import os as _os

from . import _build_info
from ._lib import get_and_clear_last_err_msg, get_last_err_msg, lib as _c, set_extern_logger
from ._lib import to_int as _to_int, to_str as _to_str
from . import bm, shm
from ._transfer import TransferEngine, TransferOpcode, TransDataOpType, create_config_store

__doc__ = _build_info.VERSION
__version__ = _build_info.VERSION

__all__ = [
    "TransferEngine", "TransferOpcode", "TransDataOpType", "create_config_store", "bm", "shm",
    "initialize", "uninitialize", "set_log_level", "set_extern_logger", "get_last_err_msg",
    "get_and_clear_last_err_msg", "set_conf_store_tls", "set_conf_store_tls_key",
    "get_include_path", "get_lib_path",
]


def initialize(flags=0):
    """``smem_init(flags)``: 0."""
    return _c.smem_init(_to_int("initialize", "flags", flags, "u32"))


def uninitialize():
    """``smem_uninit()``."""
    _c.smem_uninit()


def set_log_level(level):
    """``smem_set_log_level``: lines below `level` (0 debug, 1 info, 2 warn, 3 error) are
    dropped; another value: -1."""
    return _c.smem_set_log_level(_to_int("set_log_level", "level", level, "int"))


def set_conf_store_tls(enable, tls_info):
    """``smem_set_conf_store_tls``: accepted and ignored, 0 (as memfabric; the store's TLS is
    Big Memory's ``storeTlsConfig``)."""
    info = _to_str("set_conf_store_tls", "tls_info", tls_info)
    return _c.smem_set_conf_store_tls(bool(enable), info, len(info))


def set_conf_store_tls_key(tls_pk, tls_pk_pw, py_decrypt_func):
    """``smem_set_config_store_tls_key``: accepted and ignored, 0 (as memfabric). The decrypt
    function is never called."""
    pk = _to_str("set_conf_store_tls_key", "tls_pk", tls_pk)
    pw = _to_str("set_conf_store_tls_key", "tls_pk_pw", tls_pk_pw)
    if py_decrypt_func is not None and not callable(py_decrypt_func):
        raise TypeError("set_conf_store_tls_key(): argument py_decrypt_func must be callable, "
                        f"not {type(py_decrypt_func).__name__}")
    return _c.smem_set_config_store_tls_key(pk, len(pk), pw, len(pw), None)


def get_include_path():
    """The install's include directory, holding ``smem/host/smem.h`` and the other headers."""
    return _build_info.INCLUDE_DIR


def get_lib_path():
    """The directory of the libmf_smem.so this package uses (the install's library directory,
    or the directory of ``LD_LIBRARY_PATH`` it was found in)."""
    from ._lib import library_path

    return _os.path.dirname(library_path())
