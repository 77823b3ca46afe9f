"""shmem: OpenSHMEM and CANN SHMEM from Python, on the shmem library (libshmem.so).

Two layers share one runtime, the libshmem.so that C programs and torch extensions in the same
process use:

* CANN SHMEM's Python API, with the names, argument order and return conventions of CANN's
  ``_pyshmem`` module: routines return 0 or a negative ``ACLSHMEM_*`` code, addresses are ints,
  ``None`` stands where a pointer cannot be had::

      import shmem
      shmem.shmem_init(rank, world_size, 1 << 30)
      ptr = shmem.shmem_malloc(4096)
      shmem.shmem_putmem(ptr, local_addr, 4096, (rank + 1) % world_size)
      shmem.shmem_barrier_all()
      shmem.shmem_free(ptr)
      shmem.shmem_finalize()

* ``shmem.core``: NumPy arrays on the symmetric heap, in the style of NVSHMEM's
  ``nvshmem.core`` (``init``/``finalize``, ``array``, ``buffer``, ``put``/``get``, signals,
  collectives on teams; errors raise ``shmem.core.ShmemError`` subclasses).

Bad arguments raise ``ValueError`` or ``TypeError`` naming the call, the argument and its value.
``mte_set_ub_params`` records the AscendC kernels' unified-buffer scratch area (0, or
``ACLSHMEM_INVALID_PARAM`` for a bad argument); ``get_ffts_config``, with no meaning on the host
device, returns ``ACLSHMEM_NOT_SUPPORTED`` (-100).
"""

try:
    from . import _shmem
except ImportError as e:  # most often: libshmem.so is not where the extension's run path says
    raise ImportError(
        f"shmem: the extension could not load ({e}). It loads the installed libshmem.so through "
        "its run path (readelf -d on shmem/_shmem*.so shows it): install the library there "
        "(scripts/build.sh, cmake --install), or point LD_LIBRARY_PATH at its directory"
    ) from e

from ._shmem import (  # noqa: F401  (re-exported)
    ACLSHMEM_BOOTSTRAP_ERROR,
    ACLSHMEM_INNER_ERROR,
    ACLSHMEM_INVALID_PARAM,
    ACLSHMEM_INVALID_VALUE,
    ACLSHMEM_MALLOC_FAILED,
    ACLSHMEM_NOT_INITED,
    ACLSHMEM_NOT_SUPPORTED,
    ACLSHMEM_SUCCESS,
    ACLSHMEM_TEAM_INVALID,
    ACLSHMEM_TEAM_WORLD,
    ACLSHMEM_TIMEOUT_ERROR,
    CMP_EQ,
    CMP_GE,
    CMP_GT,
    CMP_LE,
    CMP_LT,
    CMP_NE,
    SIGNAL_ADD,
    SIGNAL_SET,
    InitAttr,
    InitStatus,
    OpEngineType,
    OptionalAttr,
    TeamConfig,
    get_ffts_config,
    get_my_pe,
    get_pe_count,
    get_team_my_pe,
    get_team_pe_count,
    mte_set_ub_params,
    my_pe,
    pe_count,
    register_decrypt_handler,
    set_conf_store_tls,
    set_conf_store_tls_key,
    set_extern_logger,
    set_log_level,
    shmem_align,
    shmem_barrier,
    shmem_barrier_all,
    shmem_calloc,
    shmem_fence,
    shmem_finalize,
    shmem_finialize,
    shmem_free,
    shmem_get_unique_id,
    shmem_getmem,
    shmem_getmem_nbi,
    shmem_global_exit,
    shmem_info_get_name,
    shmem_info_get_version,
    shmem_init,
    shmem_init_status,
    shmem_init_using_unique_id,
    shmem_malloc,
    shmem_ptr,
    shmem_putmem,
    shmem_putmem_nbi,
    shmem_putmem_signal,
    shmem_putmem_signal_nbi,
    shmem_quiet,
    shmem_set_attributes,
    shmem_set_data_op_engine_type,
    shmem_set_timeout,
    shmem_signal_wait_until,
    shmem_sync,
    shmem_sync_all,
    shmem_team_get_config,
    team_destroy,
    team_my_pe,
    team_n_pes,
    team_split_2d,
    team_split_strided,
    team_translate_pe,
)

#: CANN's host types of the typed routines ``shmem_<T>_put``, ``_get``, ``_put_nbi``,
#: ``_get_nbi``, ``_p`` and ``_g`` (float, double, int8 .. uint64, char: the list of
#: ``<shmem/cann_types.h>``, as the extension module registers them).
RMA_TYPES = _shmem._RMA_TYPES
#: The types of ``shmem_<T>_wait_until`` and ``shmem_<T>_test`` (CANN's host types but double).
WAIT_TYPES = _shmem._WAIT_TYPES

_typed = [f"shmem_{t}_{op}" for t in RMA_TYPES for op in ("put", "get", "put_nbi", "get_nbi", "p", "g")]
_typed += [f"shmem_{t}_{op}" for t in WAIT_TYPES for op in ("wait_until", "test")]
globals().update({name: getattr(_shmem, name) for name in _typed})

__version__ = "0.1.0"

__all__ = sorted(
    [n for n in dir(_shmem) if not n.startswith(("_", "osh_", "OSH_", "RawBuffer", "core_"))]
    + ["RMA_TYPES", "WAIT_TYPES", "core"]
)


def __getattr__(name: str):
    # shmem.core imports NumPy: load it when first asked for, so that the CANN API alone needs
    # nothing but the extension.
    if name == "core":
        import importlib

        return importlib.import_module(".core", __name__)
    raise AttributeError(f"module 'shmem' has no attribute {name!r}")
