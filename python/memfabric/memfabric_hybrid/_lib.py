"""The process's one libmf_smem.so, its C prototypes, and what the package's modules share:
argument conversion (``TypeError`` for a value the C parameter cannot hold, as memfabric's
bindings raise) and the last error message, which a check made here in Python sets as the C
functions set theirs.

Every call goes through ``ctypes.CDLL``, which releases the GIL for the duration of the C call
(a barrier or a join blocks only the calling thread). Nothing here keeps state of the runtime:
that lives in libmf_smem.so and the libshmem.so it links, shared with C code of the process.
"""

import ctypes
import enum
import operator
import os
import sys
import threading

from . import _build_info

LIB_NAME = "libmf_smem.so"


def library_path():
    """Where libmf_smem.so is loaded from: as the dynamic loader treats an extension's run path,
    a directory of ``LD_LIBRARY_PATH`` holding it comes first, then the install's library
    directory this package was built for."""
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isfile(os.path.join(d, LIB_NAME)):
            return os.path.abspath(os.path.join(d, LIB_NAME))
    return os.path.join(_build_info.LIB_DIR, LIB_NAME)


def _load():
    path = library_path()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"memfabric_hybrid: cannot load {path} ({e}). The package uses the libmf_smem.so "
            f"installed in {_build_info.LIB_DIR} (cmake --install, scripts/build.sh), or one in "
            "a directory of LD_LIBRARY_PATH") from e


lib = _load()

c_u16, c_u32, c_u64, c_i32 = ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32
c_ptr, c_str, c_size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p)

# name: (result, arguments). The smem_bm_* / smem_shm_* config structs are declared by their
# modules and passed as pointers (c_void_p).
_PROTOTYPES = {
    "smem_init": (c_i32, [c_u32]),
    "smem_uninit": (None, []),
    "smem_create_config_store": (c_i32, [c_str]),
    "smem_set_extern_logger": (c_i32, [LOG_FN]),
    "smem_set_log_level": (c_i32, [ctypes.c_int]),
    "smem_set_conf_store_tls": (c_i32, [ctypes.c_bool, c_str, c_u32]),
    "smem_set_config_store_tls_key": (c_i32, [c_str, c_u32, c_str, c_u32, c_ptr]),
    "smem_get_last_err_msg": (c_str, []),
    "smem_get_and_clear_last_err_msg": (c_str, []),
    "smem_bm_config_init": (c_i32, [c_ptr]),
    "smem_bm_init": (c_i32, [c_str, c_u32, c_u16, c_ptr]),
    "smem_bm_uninit": (None, [c_u32]),
    "smem_bm_get_rank_id": (c_u32, []),
    "smem_bm_create": (c_ptr, [c_u32, c_u32, c_u32, c_u64, c_u64, c_u32]),
    "smem_bm_destroy": (None, [c_ptr]),
    "smem_bm_join": (c_i32, [c_ptr, c_u32]),
    "smem_bm_leave": (c_i32, [c_ptr, c_u32]),
    "smem_bm_get_local_mem_size_by_mem_type": (c_u64, [c_ptr, c_u32]),
    "smem_bm_ptr_by_mem_type": (c_ptr, [c_ptr, c_u32, c_u16]),
    "smem_bm_copy": (c_i32, [c_ptr, c_ptr, c_u32, c_u32]),
    "smem_bm_copy_batch": (c_i32, [c_ptr, c_ptr, c_u32, c_u32]),
    "smem_bm_wait": (c_i32, [c_ptr]),
    "smem_bm_register_user_mem": (c_i32, [c_ptr, c_u64, c_u64]),
    "smem_bm_unregister_user_mem": (c_i32, [c_ptr, c_u64]),
    "smem_bm_get_rank_id_by_gva": (c_u32, [c_ptr, c_ptr]),
    "smem_shm_config_init": (c_i32, [c_ptr]),
    "smem_shm_init": (c_i32, [c_str, c_u32, c_u32, c_u16, c_ptr]),
    "smem_shm_uninit": (None, [c_u32]),
    "smem_shm_query_support_data_operation": (c_u32, []),
    "smem_shm_create": (c_ptr, [c_u32, c_u32, c_u32, c_u64, c_u32, c_u32, ctypes.POINTER(c_ptr)]),
    "smem_shm_destroy": (c_i32, [c_ptr, c_u32]),
    "smem_shm_set_extra_context": (c_i32, [c_ptr, c_ptr, c_u32]),
    "smem_shm_get_global_rank": (c_u32, [c_ptr]),
    "smem_shm_get_global_rank_size": (c_u32, [c_ptr]),
    "smem_shm_control_barrier": (c_i32, [c_ptr]),
    "smem_shm_control_allgather": (c_i32, [c_ptr, c_ptr, c_u32, c_ptr, c_u32]),
    "smem_shm_topology_can_reach": (c_i32, [c_ptr, c_u32, ctypes.POINTER(c_u32)]),
}

# The transfer engine (smem_trans.h), declared as memfabric declares it. A libmf_smem.so
# without these symbols still serves the rest of the package; TransferEngine then says so.
_TRANS_PROTOTYPES = {
    "smem_trans_config_init": (c_i32, [c_ptr]),
    "smem_trans_init": (c_i32, [c_ptr]),
    "smem_trans_uninit": (None, [c_u32]),
    "smem_trans_create": (c_ptr, [c_str, c_str, c_ptr]),
    "smem_trans_destroy": (None, [c_ptr, c_u32]),
    "smem_trans_register_mem": (c_i32, [c_ptr, c_ptr, c_size, c_u32]),
    "smem_trans_batch_register_mem": (c_i32, [c_ptr, c_ptr, c_ptr, c_u32, c_u32]),
    "smem_trans_deregister_mem": (c_i32, [c_ptr, c_ptr]),
    "smem_trans_write": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_size, c_u32]),
    "smem_trans_read": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_size, c_u32]),
    "smem_trans_batch_write": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_ptr, c_u32, c_u32]),
    "smem_trans_batch_read": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_ptr, c_u32, c_u32]),
    "smem_trans_write_submit": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_size, c_ptr, c_u32]),
    "smem_trans_read_submit": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_size, c_ptr, c_u32]),
    "smem_trans_batch_write_submit": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_ptr, c_u32, c_ptr,
                                              c_u32]),
    "smem_trans_batch_read_submit": (c_i32, [c_ptr, c_ptr, c_str, c_ptr, c_ptr, c_u32, c_ptr,
                                             c_u32]),
}


def _declare(table, required):
    missing = []
    for name, (restype, argtypes) in table.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype, fn.argtypes = restype, argtypes
    if missing and required:
        raise ImportError(f"memfabric_hybrid: {library_path()} lacks {', '.join(missing)}")
    return missing


_declare(_PROTOTYPES, required=True)
#: The smem_trans_* functions this libmf_smem.so lacks (empty when it has the transfer engine).
TRANS_MISSING = tuple(_declare(_TRANS_PROTOTYPES, required=False))

# memfabric's codes (api: 0 success).
SM_OK, SM_ERROR, SM_INVALID_PARAM = 0, -1, -2000
UINT32_MAX = (1 << 32) - 1

# ---------------------------------------------------------------------------------------------
# Argument conversion: what memfabric's bindings refuse with TypeError (a value the C parameter
# cannot hold) is refused here the same way, naming the call, the argument and the value.

_RANGES = {"u16": (0, (1 << 16) - 1), "u32": (0, UINT32_MAX), "u64": (0, (1 << 64) - 1),
           "i32": (-(1 << 31), (1 << 31) - 1), "int": (-(1 << 31), (1 << 31) - 1)}


def to_int(call, name, value, kind):
    """`value` as an int that fits C type `kind` (u16, u32, u64, i32), else TypeError."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{call}(): argument {name} must be an int, not {type(value).__name__} "
                        f"({value!r})") from None
    lo, hi = _RANGES[kind]
    if not lo <= v <= hi:
        raise TypeError(f"{call}(): argument {name}={v} does not fit the C parameter "
                        f"({kind}: {lo}..{hi})")
    return v


def to_addr(call, name, value):
    """An address given as an int (``tensor.data_ptr()``, ``ctypes.addressof``)."""
    return to_int(call, name, value, "u64")


def to_str(call, name, value):
    """A str (UTF-8) or bytes as the C string memfabric's binding passes."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{call}(): argument {name} must be a str, not {type(value).__name__} "
                    f"({value!r})")


def to_bytes(call, name, value):
    """A bytes-like object (or a str, as UTF-8) as a bytes copy."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{call}(): argument {name} must be bytes, not {type(value).__name__} "
                    f"({value!r})")


def to_member(call, name, value, enum_type):
    """The C value of a member of `enum_type` (memfabric's enums are not ints: an int is
    refused)."""
    if not isinstance(value, enum_type):
        raise TypeError(f"{call}(): argument {name} must be a {enum_type.__name__}, not "
                        f"{type(value).__name__} ({value!r})")
    return value.value


def to_int_list(call, name, values, kind):
    """A list (any sequence) of ints fitting `kind`."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{call}(): argument {name} must be a list of ints, not "
                        f"{type(values).__name__}")
    return [to_int(call, f"{name}[{i}]", v, kind) for i, v in enumerate(values)]


class CEnum(enum.Enum):
    """memfabric's enums (pybind11's, not arithmetic): members with ``name`` and ``value``,
    ``int(member)`` is the value, and a member never equals a plain int."""

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value


def config_attr(owner, attr, field, kind):
    """A read/write attribute `attr` of config class `owner` over its C struct's `field`
    (``self._c``); `kind` is a C integer type (u16, u32) or "bool" (any truth value)."""

    def get(self):
        return getattr(self._c, field)

    def set_(self, value):
        value = bool(value) if kind == "bool" else to_int(f"{owner}.{attr}", "value", value, kind)
        setattr(self._c, field, value)

    return property(get, set_)


def array(ctype, values):
    """A C array of `values` (one element at least, so its address is never NULL)."""
    return (ctype * max(len(values), 1))(*values)


# ---------------------------------------------------------------------------------------------
# Logging and the last error. The C library keeps a per-thread last error; a check made here
# (before any C call) records its message in this thread's Python slot, which get_last_err_msg
# returns as long as no C error came after it (the C message is remembered with it: once it
# changes, the C error is the newer).

_local = threading.local()
_logger = {"fn": None}
_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")


def _c_last_err():
    return (lib.smem_get_last_err_msg() or b"").decode(errors="replace")


def fail(code, call, message):
    """Records `call: message` as this thread's last error, logs it as an error line (to the
    extern logger, else standard error, as the library logs) and returns `code`."""
    line = f"{call}: {message}"
    _local.error = (line, _c_last_err())
    emit(3, line)
    return code


def emit(level, line):
    fn = _logger["fn"]
    if fn is not None:
        fn(level, line)
    else:
        sys.stderr.write(f"[mf_smem] {_LEVELS[level]} {line}\n")


def _python_error():
    err = getattr(_local, "error", None)
    if err is None:
        return None
    line, c_then = err
    if _c_last_err() != c_then:  # a C error came later
        _local.error = None
        return None
    return line


def get_last_err_msg():
    line = _python_error()
    return line if line is not None else _c_last_err()


def get_and_clear_last_err_msg():
    line = _python_error()
    if line is not None:
        _local.error = None
        lib.smem_get_and_clear_last_err_msg()
        return line
    return (lib.smem_get_and_clear_last_err_msg() or b"").decode(errors="replace")


@LOG_FN
def _trampoline(level, msg):
    # Called by the library with the GIL taken by ctypes, from whichever thread logs.
    text = (msg or b"").decode(errors="replace")
    level = level if 0 <= level <= 3 else 3
    try:
        emit(level, text)
    except Exception as e:  # a logger must not unwind into C
        sys.stderr.write(f"[mf_smem] {_LEVELS[level]} {text} (the extern logger raised {e!r})\n")


def set_extern_logger(log_fn):
    """memfabric's ``set_extern_logger``: ``log_fn(level, msg)`` receives every log line;
    ``None`` clears it (lines go to standard error again) and returns -2000, as memfabric."""
    if log_fn is None:
        _logger["fn"] = None
        return lib.smem_set_extern_logger(LOG_FN())
    if not callable(log_fn):
        raise TypeError(f"set_extern_logger(): argument log_fn must be callable or None, not "
                        f"{type(log_fn).__name__} ({log_fn!r})")
    _logger["fn"] = log_fn
    rc = lib.smem_set_extern_logger(_trampoline)
    if rc != 0:
        _logger["fn"] = None
        raise RuntimeError(f"set_extern_logger: smem_set_extern_logger returned {rc}: "
                           f"{get_last_err_msg()}")
    return rc
