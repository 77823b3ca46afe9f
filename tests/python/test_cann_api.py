"""CANN SHMEM's Python API (`import shmem`) on every PE of a job: each PE writes its neighbours'
memory and checks what its own neighbour wrote into its memory."""

import numpy as np
import pytest

import shmem
from conftest import MEM_SIZE, launcher_rank, view

ME, N = launcher_rank()
RIGHT, LEFT = (ME + 1) % N, (ME - 1) % N


@pytest.fixture(scope="module", autouse=True)
def job():
    assert shmem.shmem_init_status() == shmem.InitStatus.NOT_INITIALIZED
    assert shmem.shmem_init(ME, N, MEM_SIZE) == 0
    yield
    # CANN's spelling, the same routine as shmem_finalize.
    assert shmem.shmem_finialize is shmem.shmem_finalize
    assert shmem.shmem_finialize() == 0
    assert shmem.shmem_init_status() == shmem.InitStatus.NOT_INITIALIZED


def test_status_and_info():
    assert shmem.shmem_init_status() == shmem.InitStatus.INITIALIZED
    assert shmem.shmem_init_status().value == 2
    assert shmem.get_my_pe() == shmem.my_pe() == ME
    assert shmem.get_pe_count() == shmem.pe_count() == N
    assert shmem.shmem_info_get_version() == (1, 1)
    assert shmem.shmem_info_get_name()
    shmem.shmem_barrier_all()


def test_symmetric_memory_and_byte_rma():
    ptr = shmem.shmem_malloc(4096)
    assert isinstance(ptr, int) and ptr % 64 == 0
    mine = view(ptr, np.int64, 512)
    mine[:] = -1
    src = np.arange(512, dtype=np.int64) + 1000 * ME
    shmem.shmem_barrier_all()
    shmem.shmem_putmem(ptr, src.ctypes.data, 256 * 8, RIGHT)
    shmem.shmem_putmem_nbi(ptr + 256 * 8, src.ctypes.data + 256 * 8, 256 * 8, RIGHT)
    shmem.shmem_quiet()
    shmem.shmem_barrier_all()
    assert (mine == np.arange(512) + 1000 * LEFT).all(), "PE LEFT's put"
    got = np.zeros(512, np.int64)
    shmem.shmem_getmem(got.ctypes.data, ptr, 256 * 8, RIGHT)
    shmem.shmem_getmem_nbi(got.ctypes.data + 256 * 8, ptr + 256 * 8, 256 * 8, RIGHT)
    shmem.shmem_quiet()
    assert (got == np.arange(512) + 1000 * ME).all(), "what this PE put into PE RIGHT"
    # Every PE's copy is mapped here: a load through shmem_ptr sees PE RIGHT's data.
    peer = shmem.shmem_ptr(ptr, RIGHT)
    assert peer is not None
    assert (view(peer, np.int64, 512) == np.arange(512) + 1000 * ME).all()
    shmem.shmem_barrier_all()
    shmem.shmem_free(ptr)

    zeros = shmem.shmem_calloc(100, 8)
    assert (view(zeros, np.int64, 100) == 0).all()
    aligned = shmem.shmem_align(4096, 100)
    assert aligned % 4096 == 0
    assert shmem.shmem_malloc(0) is None
    assert shmem.shmem_malloc(1 << 50) is None, "more than the heap: None, as CANN's NULL"
    shmem.shmem_free(aligned)
    shmem.shmem_free(zeros)


def test_putmem_signal():
    data = shmem.shmem_malloc(256)
    sig = shmem.shmem_calloc(1, 8)
    src = np.full(32, ME + 1, np.int64)
    shmem.shmem_barrier_all()
    shmem.shmem_putmem_signal(data, src.ctypes.data, 128, sig, ME + 10, shmem.SIGNAL_SET, RIGHT)
    shmem.shmem_signal_wait_until(sig, shmem.CMP_EQ, LEFT + 10)
    assert (view(data, np.int64, 16) == LEFT + 1).all()
    shmem.shmem_barrier_all()
    shmem.shmem_putmem_signal_nbi(data + 128, src.ctypes.data, 128, sig, 5, shmem.SIGNAL_ADD, RIGHT)
    shmem.shmem_quiet()
    shmem.shmem_signal_wait_until(sig, shmem.CMP_GE, LEFT + 15)
    assert view(sig, np.int32, 1)[0] == LEFT + 15
    assert (view(data + 128, np.int64, 16) == LEFT + 1).all()
    shmem.shmem_barrier_all()
    shmem.shmem_free(sig)
    shmem.shmem_free(data)


NP = {"float": np.float32, "double": np.float64, "int8": np.int8, "int16": np.int16,
      "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16,
      "uint32": np.uint32, "uint64": np.uint64, "char": np.int8}


@pytest.mark.parametrize("t", shmem.RMA_TYPES)
def test_typed_rma(t):
    dt = np.dtype(NP[t])
    put, get = getattr(shmem, f"shmem_{t}_put"), getattr(shmem, f"shmem_{t}_get")
    put_nbi, get_nbi = getattr(shmem, f"shmem_{t}_put_nbi"), getattr(shmem, f"shmem_{t}_get_nbi")
    p, g = getattr(shmem, f"shmem_{t}_p"), getattr(shmem, f"shmem_{t}_g")
    buf = shmem.shmem_calloc(16, dt.itemsize)
    src = (np.arange(8) + 3 * ME + 1).astype(dt)
    shmem.shmem_barrier_all()
    put(buf, src.ctypes.data, 4, RIGHT)
    put_nbi(buf + 4 * dt.itemsize, src.ctypes.data + 4 * dt.itemsize, 4, RIGHT)
    value = "a" if t == "char" else 7 + ME
    p(buf + 8 * dt.itemsize, value, RIGHT)
    shmem.shmem_quiet()
    shmem.shmem_barrier_all()
    assert (view(buf, dt, 8) == (np.arange(8) + 3 * LEFT + 1).astype(dt)).all()
    got = np.zeros(8, dt)
    get(got.ctypes.data, buf, 4, RIGHT)
    get_nbi(got.ctypes.data + 4 * dt.itemsize, buf + 4 * dt.itemsize, 4, RIGHT)
    shmem.shmem_quiet()
    assert (got == src).all()
    one = g(buf + 8 * dt.itemsize, LEFT)
    assert one == ("a" if t == "char" else 7 + ((LEFT - 1) % N))
    shmem.shmem_barrier_all()
    shmem.shmem_free(buf)


@pytest.mark.parametrize("t", shmem.WAIT_TYPES)
def test_typed_wait_and_test(t):
    dt = np.dtype(NP[t])
    p = getattr(shmem, f"shmem_{t}_p")
    wait_until, test = getattr(shmem, f"shmem_{t}_wait_until"), getattr(shmem, f"shmem_{t}_test")
    var = shmem.shmem_calloc(1, 8)
    zero, five = ("\0", "\x05") if t == "char" else (0, 5)
    assert test(var, shmem.CMP_EQ, zero) == 1  # nobody writes it before the barrier
    shmem.shmem_barrier_all()
    p(var, five, RIGHT)
    wait_until(var, shmem.CMP_EQ, five)
    assert test(var, shmem.CMP_GT, zero) == 1
    assert test(var, shmem.CMP_LT, zero) == 0
    shmem.shmem_barrier_all()
    shmem.shmem_free(var)


def test_teams():
    world = shmem.ACLSHMEM_TEAM_WORLD
    assert shmem.team_my_pe(world) == shmem.get_team_my_pe(world) == ME
    assert shmem.team_n_pes(world) == shmem.get_team_pe_count(world) == N
    evens = shmem.team_split_strided(world, 0, 2, (N + 1) // 2)
    if ME % 2 == 0:
        assert evens > 0
        assert shmem.team_my_pe(evens) == ME // 2
        assert shmem.team_n_pes(evens) == (N + 1) // 2
        assert shmem.team_translate_pe(evens, shmem.team_n_pes(evens) - 1, world) == 2 * ((N - 1) // 2)
        assert shmem.team_translate_pe(world, ME, evens) == ME // 2
        cfg = shmem.shmem_team_get_config(evens)
        assert isinstance(cfg, shmem.TeamConfig) and cfg.num_contexts == 0
        shmem.shmem_barrier(evens)
        shmem.shmem_sync(evens)
        shmem.team_destroy(evens)
    else:
        assert evens == shmem.ACLSHMEM_TEAM_INVALID
        assert shmem.team_translate_pe(world, ME, world) == ME
    assert shmem.shmem_team_get_config(12345) is None
    x_range = 2 if N % 2 == 0 else 1
    x, y = shmem.team_split_2d(world, x_range)
    assert shmem.team_n_pes(x) == x_range and shmem.team_my_pe(x) == ME % x_range
    assert shmem.team_n_pes(y) == N // x_range and shmem.team_my_pe(y) == ME // x_range
    shmem.shmem_sync_all()
    shmem.team_destroy(y)
    shmem.team_destroy(x)
    assert TEAM_CLASSES_OK()


def TEAM_CLASSES_OK():
    assert shmem.TeamConfig().num_contexts == 0
    assert shmem.TeamConfig(3).num_contexts == 3
    return True


def test_attributes():
    attr = shmem.InitAttr()
    assert attr.ip_port == "" and attr.local_mem_size == 0
    # The library's attributes are in use while it runs (test_by_hand.py fills them before).
    assert shmem.shmem_set_attributes(ME, N, MEM_SIZE, "tcp://127.0.0.1:8666", attr) == \
        shmem.ACLSHMEM_INNER_ERROR
    attr.my_rank, attr.n_ranks, attr.local_mem_size = ME, N, MEM_SIZE
    attr.ip_port = "tcp://127.0.0.1:8666"
    opt = attr.option_attr
    assert isinstance(opt, shmem.OptionalAttr)
    assert opt.data_op_engine_type == shmem.OpEngineType.MTE
    assert opt.shm_init_timeout == opt.shm_create_timeout == opt.control_operation_timeout == 120
    assert opt.version == (1 << 16) + 24
    assert shmem.shmem_set_timeout(attr, 7) == 0
    assert attr.option_attr.shm_init_timeout == 7 and attr.option_attr.control_operation_timeout == 7
    attr.option_attr.shm_create_timeout = 9  # shared, as CANN's def_readwrite
    assert attr.option_attr.shm_create_timeout == 9
    assert shmem.shmem_set_data_op_engine_type(attr, shmem.OpEngineType.MTE) == 0
    for other in (shmem.OpEngineType.SDMA, shmem.OpEngineType.ROCE, shmem.OpEngineType.UDMA):
        assert shmem.shmem_set_data_op_engine_type(attr, other) == shmem.ACLSHMEM_NOT_SUPPORTED
    assert shmem.shmem_set_data_op_engine_type(attr, 3) == shmem.ACLSHMEM_INVALID_VALUE
    fresh = shmem.OptionalAttr()
    fresh.data_op_engine_type = shmem.OpEngineType.MTE.value
    fresh.version, fresh.shm_init_timeout = fresh.version, 1
    attr.option_attr = fresh
    assert "shm_init_timeout=1" in repr(attr) and "tcp://127.0.0.1:8666" in repr(attr)
    with pytest.raises(ValueError, match="ip_port"):
        attr.ip_port = "tcp://" + "1" * 80
    assert [s.name for s in (shmem.InitStatus.NOT_INITIALIZED, shmem.InitStatus.SHM_CREATED,
                             shmem.InitStatus.INITIALIZED, shmem.InitStatus.INVALID)] == [
        "NOT_INITIALIZED", "SHM_CREATED", "INITIALIZED", "INVALID"]


def test_codes_are_canns():
    assert (shmem.ACLSHMEM_SUCCESS, shmem.ACLSHMEM_INVALID_PARAM, shmem.ACLSHMEM_INVALID_VALUE,
            shmem.ACLSHMEM_INNER_ERROR, shmem.ACLSHMEM_NOT_INITED, shmem.ACLSHMEM_BOOTSTRAP_ERROR,
            shmem.ACLSHMEM_TIMEOUT_ERROR, shmem.ACLSHMEM_MALLOC_FAILED,
            shmem.ACLSHMEM_NOT_SUPPORTED) == (0, -1, -2, -4, -5, -6, -7, -8, -100)
    assert (shmem.CMP_EQ, shmem.CMP_NE, shmem.CMP_GT, shmem.CMP_GE, shmem.CMP_LT,
            shmem.CMP_LE) == (0, 1, 2, 3, 4, 5)
    assert (shmem.SIGNAL_SET, shmem.SIGNAL_ADD) == (0, 1)
    assert (shmem.ACLSHMEM_TEAM_WORLD, shmem.ACLSHMEM_TEAM_INVALID) == (0, -1)


def test_npu_routines():
    # The AscendC scratch area is recorded; a bad one is refused.
    assert shmem.mte_set_ub_params(0, 1024, 0) == shmem.ACLSHMEM_SUCCESS
    assert shmem.mte_set_ub_params(0, 1000, 0) == shmem.ACLSHMEM_INVALID_PARAM
    assert shmem.mte_set_ub_params(16, 1024, 0) == shmem.ACLSHMEM_INVALID_PARAM
    assert shmem.mte_set_ub_params(0, 1024, 8) == shmem.ACLSHMEM_INVALID_PARAM
    assert shmem.get_ffts_config() == shmem.ACLSHMEM_NOT_SUPPORTED


def test_logging():
    lines = []
    assert shmem.set_extern_logger(lambda level, msg: lines.append((level, msg))) == 0
    shmem.mte_set_ub_params(0, 1, 0)  # ub_size=1: logs an error line
    assert shmem.set_extern_logger(None) == 0
    assert any(level == 3 and "set_mte_config" in msg for level, msg in lines), lines
    assert shmem.set_log_level(3) == 0
    assert shmem.set_log_level(9) == shmem.ACLSHMEM_INVALID_VALUE
    assert shmem.register_decrypt_handler(lambda cipher: cipher) == 0


def test_bad_arguments_name_call_and_value():
    ptr = shmem.shmem_malloc(64)
    with pytest.raises(ValueError, match=r"shmem_malloc: size=-1"):
        shmem.shmem_malloc(-1)
    with pytest.raises(ValueError, match=rf"shmem_putmem: pe={N} is not a PE"):
        shmem.shmem_putmem(ptr, ptr, 8, N)
    with pytest.raises(ValueError, match=r"shmem_align: alignment=3"):
        shmem.shmem_align(3, 64)
    with pytest.raises(ValueError, match=r"shmem_putmem_signal: sig_op=7"):
        shmem.shmem_putmem_signal(ptr, ptr, 8, ptr, 1, 7, ME)
    with pytest.raises(ValueError, match=r"shmem_signal_wait_until: cmp=9"):
        shmem.shmem_signal_wait_until(ptr, 9, 0)
    with pytest.raises(ValueError, match=r"shmem_int32_p: value=.* is not a i32"):
        shmem.shmem_int32_p(ptr, 1 << 40, ME)
    with pytest.raises(TypeError, match=r"shmem_int32_put\(\) needs 'pe'"):
        shmem.shmem_int32_put(ptr, ptr, 1)
    with pytest.raises(TypeError, match=r"shmem_init: mype='x'"):
        shmem.shmem_init("x", 1, 1)
    with pytest.raises(TypeError, match="register_decrypt_handler: py_decrypt_func=5"):
        shmem.register_decrypt_handler(5)
    with pytest.raises(ValueError, match="shmem_init_using_unique_id: uid is 5 bytes"):
        shmem.shmem_init_using_unique_id(0, 1, 1, b"short")
    with pytest.raises(ValueError, match="shmem_set_timeout: value=-1"):
        shmem.shmem_set_timeout(shmem.InitAttr(), -1)
    shmem.shmem_fence()
    shmem.shmem_barrier_all()
    shmem.shmem_free(ptr)
