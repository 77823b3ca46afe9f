"""Processes started by hand, without a launcher: `shmem_init(mype, npes, mem_size)` with CANN's
SHMEM_MASTER_ADDR/SHMEM_MASTER_PORT, `InitAttr` with an `ip_port`, the unique id, the clear
error when nothing says where the other PEs are, TLS settings before start-up, and
`shmem_global_exit`. Each case starts fresh interpreters (no launcher variable), and every one
of them checks data another one wrote."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from free_port import free_port  # noqa: E402  (tests/tools)

LAUNCHER_VARS = ("SHMEM_RUN_FD", "SHMEM_RUN_RANK", "SHMEM_RUN_SIZE", "SHMEM_RUN_JOBID",
                 "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_FD", "SLURM_PROCID", "RANK",
                 "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SHMEM_MASTER_ADDR",
                 "SHMEM_MASTER_PORT")
TIMEOUT = 60

# Every PE: start as told, then put its number into its right neighbour's symmetric int and
# check the left neighbour's; exit 0 only when that holds.
RING = textwrap.dedent("""
    import sys, numpy as np, shmem
    me, n = int(sys.argv[1]), int(sys.argv[2])
    {start}
    assert rc == 0, f"start-up failed: {{rc}}"
    assert (shmem.get_my_pe(), shmem.get_pe_count()) == (me, n)
    p = shmem.shmem_calloc(1, 8)
    v = np.array([1000 + me], np.int64)
    shmem.shmem_putmem(p, v.ctypes.data, 8, (me + 1) % n)
    shmem.shmem_barrier_all()
    got = shmem.shmem_int64_g(p, me)
    assert got == 1000 + (me - 1) % n, got
    shmem.shmem_free(p)
    assert shmem.shmem_finalize() == 0
    print(f"PE {{me}} ok")
""")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_pes(code, n, env, stdin=None, timeout=TIMEOUT):
    """Starts n interpreters running `code` with argv (i, n); returns their (status, output)s.
    Any still running after `timeout` is killed (the test then fails on its status)."""
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i), str(n)], env=env,
                              stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(n)]
    out = []
    try:
        for i, p in enumerate(procs):
            o, _ = p.communicate(stdin[i] if stdin else None, timeout=timeout)
            out.append((p.returncode, o))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


def run_ring(start, n, env, stdin=None):
    """Starts n PEs running RING with `start`; returns their (status, output)s."""
    return run_pes(RING.format(start=start), n, env, stdin)


def assert_ring_ok(out):
    for i, (rc, o) in enumerate(out):
        assert rc == 0 and f"PE {i} ok" in o, f"PE {i} exited {rc}:\n{o}"


@pytest.mark.parametrize("n", [2, 3])
def test_master_addr_variables(n):
    env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=free_port(),
                    SHMEM_TLS_DISABLE=1)
    assert_ring_ok(run_ring("rc = shmem.shmem_init(me, n, 1 << 24)", n, env))


def test_pe0_store_writes_its_refusal_summary_at_finalize():
    """Strangers flood PE 0's plain-TCP store just before the job ends: the summary of those
    not logged one by one is written when the store closes, not lost with it. Each stranger
    says nothing and waits for the store to close its connection, which the store does only
    after counting the refusal."""
    port = free_port()
    start = textwrap.dedent(f"""
        rc = shmem.shmem_init(me, n, 1 << 24)
        if me == 0:
            import socket as so
            for _ in range(60):
                s = so.create_connection(("127.0.0.1", {port}))
                s.shutdown(so.SHUT_WR)
                s.settimeout(30)
                while s.recv(4096):
                    pass
                s.close()
    """).strip()
    env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=port, SHMEM_TLS_DISABLE=1)
    out = run_ring(start, 2, env)
    assert_ring_ok(out)
    pe0 = out[0][1]
    # Every refusal is accounted for: a line of its own, or counted in a summary (one written
    # every few seconds, and the one the store writes as it closes).
    one_by_one = pe0.count("closed the connection without saying HELLO")
    summed = sum(int(m) for m in re.findall(r"store: (\d+) more connections refused", pe0))
    assert one_by_one >= 1 and one_by_one + summed == 60, pe0


def test_init_attr_with_ip_port():
    start = textwrap.dedent(f"""
        attr = shmem.InitAttr()
        assert shmem.set_conf_store_tls(False, "") == 0
        assert shmem.shmem_set_attributes(me, n, 1 << 24, "tcp://127.0.0.1:{free_port()}", attr) == 0
        assert shmem.shmem_set_timeout(attr, 30) == 0
        assert shmem.shmem_set_data_op_engine_type(attr, shmem.OpEngineType.MTE) == 0
        assert attr.option_attr.shm_init_timeout == 30 and attr.local_mem_size == 1 << 24
        rc = shmem.shmem_init(attr)
    """).strip()
    assert_ring_ok(run_ring(start, 2, clean_env()))


def test_unique_id():
    # PE 0 makes the id and prints it; the test hands it to PE 1 on its stdin.
    n = 2
    env = clean_env(SHMEM_TLS_DISABLE=1, SHMEM_UID_SESSION_ID=f"127.0.0.1:{free_port()}")
    start = textwrap.dedent("""
        if me == 0:
            uid = shmem.shmem_get_unique_id()
            assert isinstance(uid, bytes) and len(uid) == 136
            print("UID " + uid.hex(), flush=True)
        else:
            uid = bytes.fromhex(sys.stdin.readline().split()[1])
        rc = shmem.shmem_init_using_unique_id(me, n, 1 << 24, uid)
    """).strip()
    code = RING.format(start=start)
    p0 = subprocess.Popen([sys.executable, "-c", code, "0", str(n)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p1 = None
    try:
        line = p0.stdout.readline()
        assert line.startswith("UID "), line + p0.stdout.read()
        p1 = subprocess.Popen([sys.executable, "-c", code, "1", str(n)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        o1, _ = p1.communicate(line, timeout=TIMEOUT)
        o0, _ = p0.communicate(timeout=TIMEOUT)
        assert_ring_ok([(p0.returncode, o0), (p1.returncode, o1)])
    finally:
        for p in (p0, p1):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_nothing_says_where_the_pes_are():
    code = textwrap.dedent("""
        import shmem
        rc = shmem.shmem_init(1, 2, 1 << 20)
        assert rc == shmem.ACLSHMEM_BOOTSTRAP_ERROR, rc
        assert shmem.shmem_init_status() == shmem.InitStatus.NOT_INITIALIZED
        print("refused")
    """)
    r = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and "refused" in r.stdout, r.stdout + r.stderr
    assert ("shmem_init(mype=1, npes=2, mem_size=1048576): nothing says where the other PEs are"
            in r.stderr), r.stderr
    assert "SHMEM_MASTER_ADDR" in r.stderr and "shmemrun -n 2" in r.stderr


@pytest.mark.parametrize("variables", [
    {"SHMEM_SYMMETRIC_SIZE": ""},
    {"SHMEM_SYMMETRIC_SIZE": "  ", "SMA_SYMMETRIC_SIZE": "1M"},
    {"SMA_SYMMETRIC_SIZE": ""},
])
def test_core_init_refuses_a_blank_heap_size(variables):
    # shmem.core.init reads the heap size itself: a blank value is refused as the library
    # refuses it, naming the variable, not taken for the default.
    code = textwrap.dedent("""
        import shmem.core as sc
        try:
            sc.init()
        except ValueError as e:
            print(e)
        else:
            print("started")
            sc.finalize()
    """)
    env = {k: v for k, v in clean_env().items() if not k.endswith("_SYMMETRIC_SIZE")}
    env.update(variables)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    name = next(iter(variables))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(f"init: {name}={variables[name]!r} is set but empty: unset it "
                               "for the default (512M)"), r.stdout + r.stderr


def test_library_refuses_blank_variables():
    # The library's own reading (shmem_init with a launcher's variables, as shmemrun's PEs
    # start): a blank SHMEM_* variable that has no blank meaning stops start-up, naming it.
    for name, value in [("SHMEM_INIT_TIMEOUT", ""), ("SHMEM_LOG_LEVEL", " "),
                        ("SHMEM_TLS_DISABLE", ""), ("SHMEM_CUDA_LIBRARY", "")]:
        code = "import shmem; print('rc', shmem.shmem_init(0, 1, 1 << 20))"
        env = clean_env(**{name: value})
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=TIMEOUT)
        assert f"environment variable {name}=\"\": set but empty: unset it for the default" \
            in r.stderr, f"{name}: {r.stdout}{r.stderr}"
        assert "rc 0" not in r.stdout, f"{name}: started: {r.stdout}{r.stderr}"


def test_one_pe_alone_needs_nothing():
    code = "import shmem; assert shmem.shmem_init(0, 1, 1 << 20) == 0; " \
           "assert shmem.shmem_finalize() == 0; print('alone')"
    r = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and "alone" in r.stdout, r.stdout + r.stderr


def test_tls_key_and_decrypt_handler_before_start():
    code = textwrap.dedent("""
        import shmem
        seen = []
        def decrypt(cipher):
            seen.append(cipher)
            return cipher
        assert shmem.register_decrypt_handler(decrypt) == 0
        rc = shmem.set_conf_store_tls_key("not a key", "pw", decrypt)
        print("rc", rc)
        assert shmem.set_conf_store_tls(False, "") == 0
    """)
    r = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and "rc " in r.stdout, r.stdout + r.stderr


# CANN's Python programs end without shmem_finalize: the interpreter's end (or sys.exit)
# finalizes for them, whatever order the PEs end in, and each PE's last output survives.
UNFINALIZED = RING.replace("assert shmem.shmem_finalize() == 0\n", "").replace(
    'print(f"PE {{me}} ok")',
    'print(f"PE {{me}} ok")\nimport random, time\ntime.sleep(random.random() / 20)\n'
    '{end}')


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("end", ["", "sys.exit(0)"])
def test_ending_without_finalize_is_clean(n, end):
    for _ in range(5):
        env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=free_port(),
                        SHMEM_TLS_DISABLE=1)
        code = UNFINALIZED.format(start="rc = shmem.shmem_init(me, n, 1 << 24)", end=end)
        out = run_pes(code, n, env)
        assert_ring_ok(out)
        assert not any("shmem_finalize" in o for _, o in out), out


def test_dying_without_finalize_still_ends_the_job():
    # os._exit skips the interpreter's end: the PE died, as far as the job can tell.
    env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=free_port(),
                    SHMEM_TLS_DISABLE=1)
    code = textwrap.dedent("""
        import os, sys, time, shmem
        me = int(sys.argv[1])
        assert shmem.shmem_init(me, 2, 1 << 20) == 0
        shmem.shmem_barrier_all()
        if me == 1:
            os._exit(0)
        time.sleep(30)
        sys.exit(3)
    """)
    statuses, outs = zip(*run_pes(code, 2, env, timeout=25))
    assert list(statuses) == [1, 0], outs
    assert "PE 1 exited without shmem_finalize or died; ending the job" in outs[0], outs


def test_global_exit_ends_every_pe():
    env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=free_port(),
                    SHMEM_TLS_DISABLE=1)
    code = textwrap.dedent("""
        import sys, time, shmem
        me = int(sys.argv[1])
        assert shmem.shmem_init(me, 2, 1 << 20) == 0
        shmem.shmem_barrier_all()
        if me == 1:
            shmem.shmem_global_exit(7)
        time.sleep(30)
        sys.exit(3)
    """)
    statuses, outs = zip(*run_pes(code, 2, env, timeout=25))
    assert list(statuses) == [7, 7], outs


def test_core_init_as_a_context_manager():
    env = clean_env(SHMEM_MASTER_ADDR="127.0.0.1", SHMEM_MASTER_PORT=free_port(),
                    SHMEM_TLS_DISABLE=1)
    code = textwrap.dedent("""
        import sys, numpy as np, shmem.core as sc
        me = int(sys.argv[1])
        with sc.init(me, 2, 1 << 24):
            a = sc.array(3, np.int32)
            sc.put(a, np.full(3, 40 + me, np.int32), 1 - me)
            sc.barrier()
            assert (a == 40 + 1 - me).all(), a
        assert not sc.is_initialized()
        print(f"PE {me} ok")
    """)
    assert_ring_ok(run_pes(code, 2, env))


def test_no_restart_after_finalize():
    code = textwrap.dedent("""
        import shmem
        assert shmem.shmem_init(0, 1, 1 << 20) == 0
        assert shmem.shmem_finalize() == 0
        assert shmem.shmem_init(0, 1, 1 << 20) == shmem.ACLSHMEM_INNER_ERROR
        print("still running")
    """)
    r = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0 and "still running" in r.stdout, r.stdout + r.stderr
    assert "shmem_init: called after shmem_finalize" in r.stderr, r.stderr
