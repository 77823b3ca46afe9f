"""memfabric_hybrid's Python packages (memfabric_hybrid, mf_adapter) over libmf_smem.so:
memfabric's Big Memory and Share Memory examples unchanged (host variant) at 2 and 3 ranks,
every class's defaults and enum values, the names memfabric's users import, memfabric's return
codes for bad arguments with a last error naming the call, the argument and its value,
TypeError for values the C parameters cannot hold, the extern logger, the install paths, and
the config store launcher. Jobs run in child interpreters, each under a timeout (the watchdog:
a hung job is killed and fails its test).
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import memfabric_hybrid as mf
import mf_adapter
from memfabric_hybrid import bm, shm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from free_port import free_port  # noqa: E402  (tests/tools)

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 150


def run(args, timeout=TIMEOUT, **kw):
    """Runs `python args...` to its end (killed after `timeout`); returns (status, output)."""
    p = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the example's forked ranks too
        out, _ = p.communicate()
        pytest.fail(f"{args} still running after {timeout} s:\n{out}")
    return p.returncode, out


@pytest.mark.parametrize("ranks,auto", [(2, False), (3, False), (3, True)])
def test_bm_example(ranks, auto):
    args = [os.path.join(HERE, "smem_bm_example.py"), "--world-size", str(ranks), "--url",
            f"tcp://127.0.0.1:{free_port()}"] + (["--auto"] if auto else [])
    rc, out = run(args)
    assert rc == 0, out
    assert out.count("data checked") == ranks, out


@pytest.mark.parametrize("ranks", [2, 3])
def test_shm_example(ranks):
    rc, out = run([os.path.join(HERE, "smem_shm_example.py"), "--world-size", str(ranks),
                   "--url", f"tcp://127.0.0.1:{free_port()}"])
    assert rc == 0, out
    assert out.count("checked") == ranks, out


def test_config_defaults():
    c = bm.BmConfig()
    assert (c.init_timeout, c.create_timeout, c.operation_timeout) == (120, 120, 120)
    assert (c.start_store, c.start_store_only, c.dynamic_world_size) == (True, False, False)
    assert (c.unified_address_space, c.auto_ranking, c.rank_id, c.flags) == (True, True, 65535, 0)
    c.auto_ranking, c.rank_id, c.operation_timeout, c.flags = False, 3, 7, 2
    assert (c.auto_ranking, c.rank_id, c.operation_timeout, c.flags) == (False, 3, 7, 2)
    c.set_nic("tcp://127.0.0.1:1234")
    assert bytes(c._c.hcomUrl) == b"tcp://127.0.0.1:1234"
    c.set_nic("x" * 80)  # cut at the field's 64 bytes, as memfabric
    assert bytes(c._c.hcomUrl)[:64] == b"x" * 64
    s = shm.ShmConfig()
    assert (s.init_timeout, s.create_timeout, s.operation_timeout, s.start_store, s.flags) == \
        (120, 120, 120, True, 0)
    s.start_store = False
    assert s.start_store is False


def test_enum_values():
    assert {m.name: m.value for m in bm.BmMemType} == \
        {"LOCAL_DEVICE": 0, "LOCAL_HOST": 1, "DEVICE": 2, "HOST": 3}
    assert {m.name: m.value for m in bm.BmCopyType} == {
        "L2G": 0, "G2L": 1, "G2H": 2, "H2G": 3, "L2GH": 4, "GH2L": 5, "GH2H": 6, "H2GH": 7,
        "G2G": 8, "AUTO": 9}
    assert {m.name: m.value for m in bm.BmDataOpType} == {
        "SDMA": 1, "HOST_RDMA": 2, "HOST_URMA": 16, "HOST_TCP": 4, "DEVICE_RDMA": 8}
    assert {m.name: m.value for m in shm.ShmDataOpType} == {"MTE": 1, "SDMA": 2, "RDMA": 4}
    assert int(bm.BmCopyType.G2G) == 8 and bm.BmCopyType.G2G != 8  # not arithmetic
    assert (mf.TransferOpcode.Read, mf.TransferOpcode.Write) == (0, 1)  # arithmetic
    assert (mf.TransDataOpType.SDMA, mf.TransDataOpType.DEVICE_RDMA) == (1, 8)
    assert mf.TransferEngine.TransferOpcode is mf.TransferOpcode
    assert mf.TransferEngine.TransDataOpType is mf.TransDataOpType


def test_names():
    assert set(mf.__all__) == {
        "TransferEngine", "TransferOpcode", "TransDataOpType", "create_config_store", "bm", "shm",
        "initialize", "uninitialize", "set_log_level", "set_extern_logger", "get_last_err_msg",
        "get_and_clear_last_err_msg", "set_conf_store_tls", "set_conf_store_tls_key",
        "get_include_path", "get_lib_path"}
    for name in mf.__all__:
        assert hasattr(mf, name), name
    assert mf.__doc__ == mf.__version__
    for name in ("initialize", "uninitialize", "bm_rank_id", "create", "BmConfig", "BigMemory"):
        assert hasattr(bm, name), name
    for name in ("join", "leave", "local_mem_size", "peer_rank_ptr", "destroy",
                 "get_rank_id_by_gva", "register", "unregister", "copy_data", "copy_data_batch",
                 "wait"):
        assert callable(getattr(bm.BigMemory, name)), name
    for name in ("set_context", "destroy", "query_support_data_operation", "barrier",
                 "all_gather", "topology_can_reach"):
        assert callable(getattr(shm.ShareMemory, name)), name
    for name in ("local_rank", "rank_size", "gva"):
        assert isinstance(getattr(shm.ShareMemory, name), property), name
    for name in ("initialize", "get_rpc_port", "transfer_sync_write", "transfer_sync_read",
                 "batch_transfer_sync_write", "batch_transfer_sync_read",
                 "transfer_async_write_submit", "transfer_async_read_submit",
                 "batch_transfer_async_write_submit", "batch_transfer_async_read_submit",
                 "register_memory", "unregister_memory", "batch_register_memory", "destroy",
                 "unInitialize"):
        assert callable(getattr(mf.TransferEngine, name)), name
    assert mf_adapter.TransferEngine is mf.TransferEngine
    for name in ("set_log_level", "create_config_store", "set_conf_store_tls"):
        assert callable(getattr(mf_adapter, name)), name


def last_error_names(*parts):
    msg = mf.get_last_err_msg()
    for p in parts:
        assert p in msg, (p, msg)


def test_bad_arguments_return_codes():
    url = f"tcp://127.0.0.1:{free_port()}"
    assert bm.initialize(url, 0, 0, bm.BmConfig()) == -2000
    last_error_names("smem_bm_init", "worldSize=0")
    cfg = bm.BmConfig()
    cfg.auto_ranking, cfg.rank_id = False, 4
    assert bm.initialize(url, 2, 0, cfg) == -2000
    last_error_names("smem_bm_init", "rankId=4")
    assert shm.initialize(url, 2, 5, 0, shm.ShmConfig()) == -2000
    last_error_names("smem_shm_init", "rankId=5")
    assert mf.set_log_level(9) == -1
    last_error_names("smem_set_log_level", "level=9")
    assert mf.create_config_store("tcp://0.0.0.0:5000") == -2000
    last_error_names("smem_create_config_store", "0.0.0.0")
    with pytest.raises(RuntimeError, match="create bm handle failed."):
        bm.create(0, 2 << 20, 0, bm.BmDataOpType.HOST_TCP)
    last_error_names("smem_bm_create", "not initialised")
    with pytest.raises(RuntimeError, match="create shm failed!"):
        shm.create(0, 2, 0, 2 << 20)
    last_error_names("smem_shm_create")
    # A handle that is not one: memfabric's codes, no crash.
    h = bm.BigMemory(None)
    assert h.join() == -2000
    last_error_names("smem_bm_join", "handle=NULL")
    assert h.copy_data(1, 2, 3, bm.BmCopyType.H2G) == -2000
    assert h.copy_data_batch([1], [2], [3], 2, bm.BmCopyType.H2G, 0) == -2000
    last_error_names("BigMemory.copy_data_batch", "count=2", "src_addrs")
    assert h.peer_rank_ptr(0, bm.BmMemType.HOST) == 0
    # The transfer engine's own checks.
    e = mf.TransferEngine()
    assert e.initialize(url, "127.0.0.1:20001", "Both", 0) == -1
    last_error_names("TransferEngine.initialize", "role='Both'")
    assert e.register_memory(4096, 4096) == -1
    last_error_names("TransferEngine.register_memory")
    assert e.batch_transfer_sync_write("127.0.0.1:20002", [1, 2], [3], [4, 5]) == -1
    last_error_names("TransferEngine.batch_transfer_sync_write", "2, 1, 2")
    assert e.batch_register_memory([1, 2], [3]) == -1
    last_error_names("TransferEngine.batch_register_memory", "capacities 1")


def test_last_error_get_and_clear():
    assert mf.set_log_level(-1) == -1
    msg = mf.get_and_clear_last_err_msg()
    assert "level=-1" in msg
    assert mf.get_last_err_msg() == ""
    # A check made in Python, then one in C: the newer one is the last error.
    assert bm.BigMemory(None).copy_data_batch([], [], [], 1, bm.BmCopyType.G2G, 0) == -2000
    last_error_names("BigMemory.copy_data_batch")
    assert mf.set_log_level(7) == -1
    last_error_names("smem_set_log_level", "level=7")
    assert mf.get_and_clear_last_err_msg().startswith("smem_set_log_level")
    assert mf.get_and_clear_last_err_msg() == ""


def test_type_errors():
    cfg = bm.BmConfig()
    with pytest.raises(TypeError, match="world_size"):
        bm.initialize("tcp://127.0.0.1:1", "2", 0, cfg)
    with pytest.raises(TypeError, match="device_id=70000"):
        bm.initialize("tcp://127.0.0.1:1", 2, 70000, cfg)
    with pytest.raises(TypeError, match="config"):
        bm.initialize("tcp://127.0.0.1:1", 2, 0, shm.ShmConfig())
    with pytest.raises(TypeError, match="store_url"):
        shm.initialize(7000, 2, 0, 0, shm.ShmConfig())
    with pytest.raises(TypeError, match="type must be a BmCopyType"):
        bm.BigMemory(None).copy_data(1, 2, 3, 3)
    with pytest.raises(TypeError, match="src_ptr=-1"):
        bm.BigMemory(None).copy_data(-1, 2, 3, bm.BmCopyType.H2G)
    with pytest.raises(TypeError, match="data_op_type"):
        bm.create(0, 0, 0, 4)
    with pytest.raises(TypeError, match="rank_id"):
        cfg.rank_id = 1 << 16
    with pytest.raises(TypeError, match="flags"):
        mf.initialize(flags=1.5)
    with pytest.raises(TypeError, match="role"):
        mf.TransferEngine().initialize("tcp://127.0.0.1:1", "127.0.0.1:2", 1, 0)
    with pytest.raises(TypeError, match=r"buffers\[1\]"):
        mf.TransferEngine().batch_transfer_sync_write("127.0.0.1:2", [1, "x"], [1, 2], [1, 1])


def test_extern_logger_and_tls_setters():
    lines = []
    assert mf.set_extern_logger(lambda level, msg: lines.append((level, msg))) == 0
    try:
        assert mf.set_log_level(5) == -1
        assert (3, mf.get_last_err_msg()) in lines
        assert bm.BigMemory(None).copy_data_batch([1], [1], [1], 3, bm.BmCopyType.G2G, 0) == -2000
        assert lines[-1][0] == 3 and "count=3" in lines[-1][1]
        with pytest.raises(TypeError):
            mf.set_extern_logger(42)
    finally:
        assert mf.set_extern_logger(None) == -2000
    assert mf.set_conf_store_tls(False, "") == 0
    assert mf.set_conf_store_tls_key("key", "password", None) == 0
    assert mf_adapter.set_conf_store_tls(True, "ignored") == 0
    assert mf.initialize() == 0 and mf.uninitialize() is None


def test_paths():
    lib = mf.get_lib_path()
    assert os.path.isfile(os.path.join(lib, "libmf_smem.so")), lib
    include = mf.get_include_path()
    assert os.path.isabs(include)
    from memfabric_hybrid import _build_info

    assert include == _build_info.INCLUDE_DIR
    if not os.path.isdir(include):
        pytest.skip(f"{include} is not installed yet (cmake --install)")
    for h in ("smem.h", "smem_bm.h", "smem_bm_def.h", "smem_shm.h", "smem_shm_def.h"):
        assert os.path.isfile(os.path.join(include, "smem", "host", h)), h


# One rank of Big Memory in a child interpreter: the pool's calls with good and bad arguments.
ONE_RANK = textwrap.dedent("""
    import ctypes, sys
    import memfabric_hybrid as mf
    from memfabric_hybrid import bm
    cfg = bm.BmConfig()
    assert bm.initialize(sys.argv[1], 1, 0, cfg) == 0, mf.get_last_err_msg()
    assert bm.bm_rank_id() == 0
    h = bm.create(1, 2 << 20, 0, bm.BmDataOpType.HOST_TCP)
    assert h.join() == 0, mf.get_last_err_msg()
    base = h.peer_rank_ptr(0, bm.BmMemType.HOST)
    assert base and h.local_mem_size(bm.BmMemType.HOST) == 2 << 20
    assert h.local_mem_size(bm.BmMemType.DEVICE) == 0
    assert h.peer_rank_ptr(1, bm.BmMemType.HOST) == 0  # beyond the world
    assert h.get_rank_id_by_gva(base + 100) == 0
    assert h.get_rank_id_by_gva(16) == 4294967295
    src = ctypes.create_string_buffer(b"abcdefgh" * 512, 4096)
    dst = ctypes.create_string_buffer(4096)
    assert h.register(ctypes.addressof(src), 4096) == 0
    assert h.register(ctypes.addressof(src), 8192) == -1
    assert h.copy_data_batch([ctypes.addressof(src)] * 2, [base, base + 4096], [4096, 4096], 2,
                             bm.BmCopyType.H2G, 0) == 0, mf.get_last_err_msg()
    assert h.copy_data(base + 4096, ctypes.addressof(dst), 4096, bm.BmCopyType.AUTO, 1) == 0
    assert h.wait() == 0
    assert dst.raw == src.raw
    rc = h.copy_data(ctypes.addressof(src), ctypes.addressof(dst), 16, bm.BmCopyType.L2G)
    assert rc == -2000 and "smem_bm_copy" in mf.get_last_err_msg(), (rc, mf.get_last_err_msg())
    assert h.copy_data(base, ctypes.addressof(dst), 0, bm.BmCopyType.G2H) == -2000
    assert h.unregister(ctypes.addressof(src)) == 0
    assert h.leave() == 0 and h.leave() == -2003
    h.destroy()
    assert h.join() == -2000
    bm.uninitialize()
    print("one rank ok")
""")


def test_bm_one_rank_calls():
    rc, out = run(["-c", ONE_RANK, f"tcp://127.0.0.1:{free_port()}"])
    assert rc == 0 and "one rank ok" in out, out


def test_launch_ascend_mf_store():
    env = dict(os.environ)
    env.pop("ASCEND_MF_STORE_URL", None)
    rc, out = run(["-m", "mf_adapter.launch_ascend_mf_store"], timeout=60, env=env)
    assert rc != 0 and "ValueError" in out and "ASCEND_MF_STORE_URL" in out, out

    url = f"tcp://127.0.0.1:{free_port()}"
    env.update(ASCEND_MF_STORE_URL=url, ASCEND_MF_LOG_LEVEL="3")
    p = subprocess.Popen([sys.executable, "-m", "mf_adapter.launch_ascend_mf_store"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = p.stdout.readline()
        assert "serving the config store" in line, line
        # A Share Memory job of one rank uses that store (start_store off).
        code = ("import sys; from memfabric_hybrid import shm; c = shm.ShmConfig(); "
                "c.start_store = False; c.init_timeout = 10; "
                "assert shm.initialize(sys.argv[1], 1, 0, 0, c) == 0; "
                "h = shm.create(2, 1, 0, 2 << 20); assert h.barrier() == 0; print('ok')")
        rc, out = run(["-c", code, url], timeout=60)
        assert rc == 0 and "ok" in out, out
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_calls_release_the_gil():
    # bm.initialize with no store to reach blocks in C for init_timeout seconds; meanwhile this
    # thread keeps running Python code.
    import threading
    import time

    cfg = bm.BmConfig()
    cfg.start_store, cfg.init_timeout = False, 2
    result = []
    t = threading.Thread(target=lambda: result.append(
        bm.initialize(f"tcp://127.0.0.1:{free_port()}", 2, 0, cfg)))
    start = time.monotonic()
    t.start()
    spins = 0
    while t.is_alive() and time.monotonic() - start < 60:
        spins += 1
        time.sleep(0.01)
    t.join()
    assert result == [-1], (result, mf.get_last_err_msg())
    assert time.monotonic() - start >= 1 and spins >= 50, spins


def test_one_runtime_with_shmem():
    # The shmem package and memfabric_hybrid in one process load one libshmem.so.
    pytest.importorskip("shmem")
    code = ("import shmem, memfabric_hybrid\n"
            "maps = open('/proc/self/maps').read().splitlines()\n"
            "libs = {l.split()[-1] for l in maps if 'libshmem.so' in l}\n"
            "assert len(libs) == 1, libs\n"
            "assert any('libmf_smem.so' in l for l in maps)\n"
            "print('one runtime:', libs.pop())")
    rc, out = run(["-c", code], timeout=60)
    assert rc == 0 and "one runtime" in out, out
