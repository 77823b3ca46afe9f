"""shmem.core, the NumPy layer, on every PE of a job: each PE writes its neighbours' arrays and
checks, in its own arrays, what the other PEs wrote."""

import numpy as np
import pytest

import shmem.core as sc
from conftest import MEM_SIZE, launcher_rank

ME, N = launcher_rank()
RIGHT, LEFT = (ME + 1) % N, (ME - 1) % N


@pytest.fixture(scope="module", autouse=True)
def job():
    assert not sc.is_initialized()
    with pytest.raises(sc.NotInitializedError, match="my_pe: the library is not running"):
        sc.my_pe()
    job = sc.init(mem_size=MEM_SIZE)  # test_by_hand.py runs it as a context manager
    assert sc.is_initialized()
    with pytest.raises(sc.InitError, match="already running"):
        sc.init()
    yield job
    sc.finalize()
    assert not sc.is_initialized()
    with pytest.raises(sc.NotInitializedError, match="finalize: the library is not running"):
        sc.finalize()


def test_who():
    assert (sc.my_pe(), sc.n_pes()) == (ME, N)
    assert sc.TEAM_WORLD.my_pe() == ME and sc.TEAM_WORLD.n_pes() == N
    assert sc.TEAM_SHARED.n_pes() == N  # one node
    assert "TEAM_WORLD" in repr(sc.TEAM_WORLD) and isinstance(sc.TEAM_WORLD, sc.Team)


def test_array_put_get_peer_array():
    a = sc.array((4, 8), np.float64)
    assert a.shape == (4, 8) and a.dtype == np.float64
    a[:] = -1
    sc.barrier()
    src = np.full((4, 8), ME + 0.5)
    sc.put(a, src, RIGHT)
    sc.barrier()
    assert (a == LEFT + 0.5).all(), "PE LEFT's put"
    got = np.zeros((4, 8))
    sc.get(got, a, RIGHT)
    assert (got == ME + 0.5).all()
    sc.barrier()  # every PE checked before the next puts land
    sc.put(a[1], np.full(8, 100.0 + ME), RIGHT, nbi=True)
    sc.get(got[2], a[2], RIGHT, nbi=True)
    sc.quiet()
    sc.barrier()
    assert (a[1] == 100.0 + LEFT).all()
    peer = sc.get_peer_array(a, RIGHT)
    assert peer.shape == a.shape and peer.dtype == a.dtype
    assert (peer[1] == 100.0 + ME).all(), "PE RIGHT's memory, loaded directly"
    sc.barrier()
    peer[3, 0] = 1000 + ME  # a store into PE RIGHT's array
    sc.barrier()
    assert a[3, 0] == 1000 + LEFT
    sc.barrier()
    sc.free(a)


def test_buffer_protocol_and_dlpack():
    b = sc.buffer(64)
    assert isinstance(b, sc.Buffer) and b.nbytes == 64 and len(b) == 64 and b.addr
    m = memoryview(b)
    assert m.nbytes == 64 and not m.readonly and m.format == "B"
    m[:] = bytes([ME]) * 64
    arr = np.from_dlpack(b)
    assert arr.dtype == np.uint8 and arr.shape == (64,) and (arr == ME).all()
    assert b.__dlpack_device__() == (1, 0)
    sc.barrier()
    peer = sc.get_peer_buffer(b, RIGHT)
    assert bytes(memoryview(peer)) == bytes([RIGHT]) * 64
    sc.put(b, np.full(8, ME + 1, np.uint8), RIGHT)
    sc.barrier()
    assert bytes(memoryview(b))[:8] == bytes([LEFT + 1]) * 8
    del m, arr
    sc.barrier()
    sc.free(b)
    with pytest.raises(BufferError, match="freed"):
        memoryview(b)


def test_signals():
    data = sc.array(16, np.int32)
    sig = sc.array(1, np.uint64)
    sig[:] = 0
    sc.barrier()
    sc.put_signal(data, np.arange(16, dtype=np.int32) + ME, sig, ME + 1, sc.SignalOp.SET, RIGHT)
    assert sc.signal_wait(sig, LEFT + 1, sc.ComparisonType.CMP_EQ) == LEFT + 1
    assert (data == np.arange(16) + LEFT).all()
    sc.barrier()
    sc.signal_op(sig, 10, sc.SignalOp.ADD, RIGHT)
    assert sc.signal_wait(sig, LEFT + 11) >= LEFT + 11  # CMP_GE by default
    sc.barrier()
    sc.put_signal(data, np.zeros(16, np.int32), sig, 0, sc.SignalOp.SET, RIGHT, nbi=True)
    sc.quiet()
    sc.signal_wait(sig, 0, sc.ComparisonType.CMP_EQ)
    assert (data == 0).all()
    sc.fence()
    sc.barrier_all()
    sc.free(sig)
    sc.free(data)


def test_collectives_on_world():
    n = 6
    src = sc.array(n, np.int64)
    dst = sc.array(n * N, np.int64)
    src[:] = np.arange(n) + 10 * ME
    sc.barrier()
    sc.fcollect(sc.TEAM_WORLD, dst, src)
    want = np.concatenate([np.arange(n) + 10 * p for p in range(N)])
    assert (dst == want).all(), "every PE's block"

    root = N - 1
    sc.broadcast(sc.TEAM_WORLD, src, src if ME == root else src, root=root)
    assert (src == np.arange(n) + 10 * root).all()

    a2a_src = sc.array(2 * N, np.int32)
    a2a_dst = sc.array(2 * N, np.int32)
    a2a_src[:] = [100 * ME + j for j in range(N) for _ in range(2)]
    sc.barrier()
    sc.alltoall(sc.TEAM_WORLD, a2a_dst, a2a_src)
    assert (a2a_dst == [100 * p + ME for p in range(N) for _ in range(2)]).all()
    for a in (a2a_dst, a2a_src, dst, src):
        sc.free(a)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "and", "or", "xor"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.int8, np.float32, np.float64])
def test_reduce_and_reducescatter(op, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f" and op in ("and", "or", "xor"):
        with pytest.raises(TypeError, match=f"reduce: op='{op}' needs integers"):
            x = sc.array(4, dt)
            try:
                sc.reduce(sc.TEAM_WORLD, x, x, op)
            finally:
                sc.free(x)
        return
    k = 3
    src = sc.array(k * N, dt)
    dst = sc.array(k * N, dt)
    vals = [(np.arange(k * N) % 3 + 1 + p).astype(dt) for p in range(N)]
    src[:] = vals[ME]
    sc.barrier()
    sc.reduce(sc.TEAM_WORLD, dst, src, op)
    fn = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    want = vals[0]
    for v in vals[1:]:
        want = fn(want, v).astype(dt)
    assert np.allclose(dst, want), (op, dst, want)
    part = sc.array(k, dt)
    sc.reducescatter(sc.TEAM_WORLD, part, src, sc.ReduceOp(op))
    assert np.allclose(part, want[ME * k:(ME + 1) * k])
    for a in (part, dst, src):
        sc.free(a)


def test_teams():
    evens = sc.TEAM_WORLD.split_strided(0, 2, (N + 1) // 2)
    if ME % 2:
        assert evens is None
    else:
        assert evens.my_pe() == ME // 2 and evens.n_pes() == (N + 1) // 2
        assert evens.translate_pe(evens.n_pes() - 1, sc.TEAM_WORLD) == 2 * ((N - 1) // 2)
    # A collective on the team: its PEs only (the others skip it).
    x = sc.array(4, np.int64)
    y = sc.array(4 * ((N + 1) // 2), np.int64)
    scratch = sc.array(y.size, np.int64)
    part = sc.array(4, np.int64)
    x[:] = ME
    sc.barrier()
    if evens is not None:
        sc.fcollect(evens, y, x)
        assert (y == np.repeat(np.arange(0, N, 2), 4)).all()
        # on a team, with scratch memory the team's PEs own: no job-wide allocation
        sc.reducescatter(evens, part, y, "max", scratch=scratch)
        assert (part == ME).all()  # block ME // 2 of y: what PE ME put in
        sc.reduce(evens, x, x, "sum")
        assert (x == sum(range(0, N, 2))).all()
        sc.sync(evens)
        sc.barrier(evens)
        evens.destroy()
    sc.sync()
    for a in (part, scratch, y, x):
        sc.free(a)
    with pytest.raises(ValueError, match="predefined"):
        sc.TEAM_WORLD.destroy()


def test_put_and_get_refuse_arrays_of_different_dtypes():
    a = sc.array(4, np.int64)
    sig = sc.array(1, np.uint64)
    a[:] = -1
    sig[:] = 0
    sc.barrier()
    floats = np.full(4, 1.5, np.float32)
    for call, do in [
        ("put", lambda: sc.put(a, floats, RIGHT)),
        ("put", lambda: sc.put(a, floats, RIGHT, nbi=True)),
        ("get", lambda: sc.get(np.zeros(4, np.float64), a, RIGHT)),
        ("put_signal", lambda: sc.put_signal(a, floats, sig, 1, sc.SignalOp.SET, RIGHT)),
    ]:
        with pytest.raises(TypeError, match=rf"^{call}: dst holds (int64 and src float32|float64 "
                                            rf"and src int64): {call} copies bytes"):
            do()
    with pytest.raises(TypeError, match="put: dst holds int64 and src bool"):
        sc.put(a, np.zeros(4, np.bool_), RIGHT)
    sc.barrier()
    assert (a == -1).all() and sig[0] == 0, "a refused copy wrote nothing"
    sc.barrier()  # every PE checked before the next puts land
    # One dtype under two C names (long, long long), and raw bytes, still copy.
    sc.put(a[:2], np.array([ME, ME + 10], np.longlong), RIGHT)
    sc.put(a[2:], np.array([ME + 20], np.int64).view(np.uint8), RIGHT)
    sc.put(a[3:], bytes(np.array([ME + 30], np.int64).view(np.uint8)), RIGHT)
    sc.barrier()
    assert a.tolist() == [LEFT, LEFT + 10, LEFT + 20, LEFT + 30], "PE LEFT's puts"
    got = np.zeros(4, np.int64)
    sc.get(got, a, RIGHT)
    assert got.tolist() == [ME, ME + 10, ME + 20, ME + 30]
    sc.barrier()
    sc.free(sig)
    sc.free(a)


def test_errors():
    a = sc.array(4, np.int32)
    local = np.zeros(4, np.int32)
    with pytest.raises(ValueError, match="put: dst at .* is not symmetric"):
        sc.put(local, a, RIGHT)
    with pytest.raises(ValueError, match=f"put: pe={N} is not a PE of the job"):
        sc.put(a, local, N)
    with pytest.raises(ValueError, match="get: dst .* is not a C-contiguous, writable buffer"):
        sc.get(np.zeros(8, np.int32)[::2], a, RIGHT)
    with pytest.raises(TypeError, match="put: src .* is not a C-contiguous buffer"):
        sc.put(a, [1, 2], RIGHT)
    with pytest.raises(ValueError, match=f"put: pe={N} is not a PE of the job"):
        sc.put(a, local, N)
    with pytest.raises(TypeError, match="get: pe='1' is not an int"):
        sc.get(local, a, "1")
    with pytest.raises(ValueError, match="put: src has 32 bytes, more than dst's 16"):
        sc.put(a, np.zeros(8, np.int32), RIGHT)
    with pytest.raises(TypeError, match="signal_wait: signal_var has dtype int32"):
        sc.signal_wait(a, 0)
    with pytest.raises(ValueError, match="reduce: op='avg' is none of"):
        sc.reduce(sc.TEAM_WORLD, a, a, "avg")
    with pytest.raises(ValueError, match="fcollect: dst has 4 elements"):
        if N > 1:
            sc.fcollect(sc.TEAM_WORLD, a, a)
        else:
            sc.fcollect(sc.TEAM_WORLD, a, sc.array(2, np.int32))
    with pytest.raises(ValueError, match="buffer: size=-1"):
        sc.buffer(-1)
    with pytest.raises(TypeError, match="array: dtype=object"):
        sc.array(2, object)
    with pytest.raises(sc.AllocationError, match="no room"):
        sc.array(1 << 40, np.uint8)
    with pytest.raises(ValueError, match="free: ndarray .* is not an allocation"):
        sc.free(local)
    assert issubclass(sc.CollectiveError, sc.ShmemError) and issubclass(sc.TeamError, sc.ShmemError)
    sc.barrier()
    sc.free(a)
