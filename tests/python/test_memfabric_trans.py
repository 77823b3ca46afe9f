"""memfabric_hybrid's TransferEngine (and mf_adapter's) over libmf_smem.so's smem_trans_*: a
"Decode" engine (receiver) and a "Prefill" engine (sender) in two processes on one store, with
IPv4 and IPv6 session ids as SGLang builds them (``f"{host}:{engine.get_rpc_port()}"``): the
receiver registers memory (one buffer, and two in one batch), the sender writes into it (single
and batch), reads it back (single and batch), and gets memfabric's errors for an unknown peer, a
remote range outside the registrations, a peer of its own role and a session id already taken;
the receiver then sees the sender's bytes. Every process runs under a timeout (a hung one fails
its test). The two processes are skipped when the libmf_smem.so in use has no transfer engine.
"""

import os
import select
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

import memfabric_hybrid as mf
from memfabric_hybrid import _lib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from free_port import free_port  # noqa: E402  (tests/tools)

needs_trans = pytest.mark.skipif(
    bool(_lib.TRANS_MISSING), reason=f"{_lib.library_path()} has no smem_trans_* functions")

TIMEOUT = 120
SIZE = 64 << 10


def ipv6_loopback():
    try:
        free_port("::1")
        return True
    except OSError:
        return False


COMMON = textwrap.dedent("""
    import ctypes, sys, time
    from mf_adapter import TransferEngine, create_config_store, set_conf_store_tls, set_log_level
    import memfabric_hybrid as mf
    SIZE = %d
    def pattern(salt, n=SIZE):
        return bytes((i * 7 + salt) %% 251 for i in range(n))
    def session(host, engine):
        port = engine.get_rpc_port()
        assert 15000 <= port <= 25000, port
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    def up(engine, url, sid, role):
        start = time.monotonic()
        rc = engine.initialize(url, sid, role, 0)
        assert rc == 0, (rc, mf.get_last_err_msg())
        took = time.monotonic() - start
        assert took < 8, f"initialize took {took:.1f} s"
""" % SIZE)

RECEIVER = COMMON + textwrap.dedent("""
    url, host, store = sys.argv[1], sys.argv[2], sys.argv[3]
    if store == "here":  # else served by python -m mf_adapter.launch_ascend_mf_store
        assert create_config_store(url) == 0, mf.get_last_err_msg()
    set_conf_store_tls(False, "")
    e = TransferEngine()
    sid = session(host, e)
    up(e, url, sid, "Decode")
    one = ctypes.create_string_buffer(SIZE)
    two = [ctypes.create_string_buffer(SIZE) for _ in range(2)]
    assert e.register_memory(ctypes.addressof(one), SIZE) == 0, mf.get_last_err_msg()
    rc = e.batch_register_memory([ctypes.addressof(b) for b in two], [SIZE, SIZE])
    assert rc == 0, mf.get_last_err_msg()
    for i, b in enumerate([one] + two):
        ctypes.memmove(b, pattern(100 + i), SIZE)
    print("READY", sid, ctypes.addressof(one), *[ctypes.addressof(b) for b in two], flush=True)
    assert sys.stdin.readline().strip() == "check"
    assert one.raw == pattern(1), "the single write did not land"
    assert two[0].raw[:SIZE // 2] == pattern(2, SIZE // 2), "batch element 0 did not land"
    assert two[1].raw[SIZE // 2:] == pattern(3)[SIZE // 2:], "batch element 1 did not land"
    assert two[1].raw[:SIZE // 2] == pattern(102)[:SIZE // 2], "a batch wrote outside its range"
    assert e.unregister_memory(ctypes.addressof(one)) == 0
    e.destroy()
    e.unInitialize()
    print("RECEIVER OK", flush=True)
""")

SENDER = COMMON + textwrap.dedent("""
    url, host, peer = sys.argv[1], sys.argv[2], sys.argv[3]
    one, two_a, two_b = (int(a) for a in sys.argv[4:7])
    e = TransferEngine()
    sid = session(host, e)
    up(e, url, sid, "Prefill")
    src = [ctypes.create_string_buffer(pattern(1 + i), SIZE) for i in range(3)]
    assert e.batch_register_memory([ctypes.addressof(b) for b in src], [SIZE] * 3) == 0
    a = [ctypes.addressof(b) for b in src]

    # Reads first: the receiver's patterns 100, 101, 102.
    dst = ctypes.create_string_buffer(SIZE)
    assert e.register_memory(ctypes.addressof(dst), SIZE) == 0
    rc = e.transfer_sync_read(peer, ctypes.addressof(dst), one, SIZE)
    assert rc == 0 and dst.raw == pattern(100), (rc, mf.get_last_err_msg())
    rc = e.batch_transfer_sync_read(peer, [ctypes.addressof(dst), ctypes.addressof(dst) + 4096],
                                    [two_a, two_b + 4096], [4096, 4096])
    assert rc == 0, (rc, mf.get_last_err_msg())
    assert dst.raw[:4096] == pattern(101)[:4096] and dst.raw[4096:8192] == pattern(102)[4096:8192]

    # Writes: the whole of `one`, half of each batch buffer.
    rc = e.transfer_sync_write(peer, a[0], one, SIZE)
    assert rc == 0, (rc, mf.get_last_err_msg())
    rc = e.batch_transfer_sync_write(peer, [a[1], a[2] + SIZE // 2],
                                     [two_a, two_b + SIZE // 2], [SIZE // 2, SIZE // 2])
    assert rc == 0, (rc, mf.get_last_err_msg())

    # memfabric's errors: an unknown peer, a range outside the peer's registrations, a session
    # id another engine holds, an engine never initialised.
    unknown = "[::1]:1999" if ":" in host else "127.0.0.1:1999"
    rc = e.transfer_sync_write(unknown, a[0], one, 16)
    assert rc == -2000, (rc, mf.get_last_err_msg())
    rc = e.transfer_sync_write(peer, a[0], one + SIZE, 16)
    assert rc == -2000, (rc, mf.get_last_err_msg())
    rc = e.transfer_sync_write(sid, a[0], a[1], 16)  # a sender addresses receivers only
    assert rc == -2000 and "sender" in mf.get_last_err_msg(), (rc, mf.get_last_err_msg())
    assert TransferEngine().initialize(url, sid, "Prefill", 0) == -1
    assert TransferEngine().transfer_sync_write(peer, a[0], one, 16) == -1
    e.destroy()
    e.unInitialize()
    print("SENDER OK", flush=True)
""")


def start(code, *args):
    env = dict(os.environ, SHMEM_TRANS_PEER_TIMEOUT="1")
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(p, timeout):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"still running after {timeout} s:\n{out}")
    return p.returncode, out


@needs_trans
@pytest.mark.parametrize("host,store", [("127.0.0.1", "here"), ("::1", "here"),
                                        ("127.0.0.1", "launcher")])
def test_prefill_writes_decode_sees(host, store):
    """`store`: "here", the receiver serves it (create_config_store); "launcher", SGLang's way:
    ``python -m mf_adapter.launch_ascend_mf_store`` with ``ASCEND_MF_STORE_URL``."""
    if host == "::1" and not ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    url = f"tcp://[{host}]:{free_port(host)}" if ":" in host else f"tcp://{host}:{free_port(host)}"
    launcher = receiver = sender = None
    if store == "launcher":
        launcher = subprocess.Popen([sys.executable, "-m", "mf_adapter.launch_ascend_mf_store"],
                                    env=dict(os.environ, ASCEND_MF_STORE_URL=url),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
    receiver = start(RECEIVER, url, host, store)
    try:
        ready, _, _ = select.select([receiver.stdout], [], [], TIMEOUT)
        line = receiver.stdout.readline() if ready else ""
        if not line.startswith("READY"):
            receiver.kill()
            pytest.fail(f"receiver: {line}{receiver.communicate()[0]}")
        _, sid, one, two_a, two_b = line.split()
        assert sid.endswith(tuple(f":{p}" for p in range(15000, 25001))), sid
        sender = start(SENDER, url, host, sid, one, two_a, two_b)
        rc, out = finish(sender, TIMEOUT)
        assert rc == 0 and "SENDER OK" in out, out
        receiver.stdin.write("check\n")
        receiver.stdin.flush()
        rc, out = finish(receiver, TIMEOUT)
        assert rc == 0 and "RECEIVER OK" in out, out
        if launcher is not None:
            launcher.send_signal(signal.SIGTERM)
            assert finish(launcher, 30)[0] == 0
    finally:
        for p in (launcher, receiver, sender):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_rpc_port_held_until_destroy():
    e = mf.TransferEngine()
    port = e.get_rpc_port()
    assert 15000 <= port <= 25000
    assert e.get_rpc_port() == port
    family = e._rpc_socket.family
    with socket.socket(family) as s, pytest.raises(OSError):
        s.bind(("", port))
    e.destroy()
    with socket.socket(family) as s:
        s.bind(("", port))
