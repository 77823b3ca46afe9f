"""shmem.torch, CPU tensors on the symmetric heap, on every PE of a job: each PE writes its own
tensor, reads its neighbour's through get_peer_tensor and checks it, stores into it and checks
in its own tensor what its other neighbour stored. Runs with torch's Python (tests/python's
CMakeLists.txt puts the unpacked wheel on its path)."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import shmem.core as sc  # noqa: E402
import shmem.torch as st  # noqa: E402
from conftest import MEM_SIZE, launcher_rank  # noqa: E402

ME, N = launcher_rank()
RIGHT, LEFT = (ME + 1) % N, (ME - 1) % N


@pytest.fixture(scope="module", autouse=True)
def job():
    with pytest.raises(sc.NotInitializedError, match="empty: the library is not running"):
        st.empty(4)
    sc.init(mem_size=MEM_SIZE)
    yield
    sc.finalize()


def value(pe, i, dtype):
    """What PE `pe` stores at element `i`: distinct per PE and element, exact in every dtype."""
    if dtype == torch.bool:
        return bool((pe + i) % 2)
    return (pe * 7 + i) % 50


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64]
SHAPES = [(), (5,), (3, 4), (2, 3, 5), (0,), (4, 0, 2)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_empty_peer_roundtrip(shape, dtype):
    t = st.empty(shape, dtype)
    assert isinstance(t, torch.Tensor) and t.device.type == "cpu"
    assert tuple(t.shape) == shape and t.dtype == dtype and t.is_contiguous()
    count = t.numel()
    mine = torch.tensor([value(ME, i, dtype) for i in range(count)], dtype=dtype).view(shape)
    t.copy_(mine)
    sc.barrier_all()
    right = st.get_peer_tensor(t, RIGHT)
    assert tuple(right.shape) == shape and right.dtype == dtype
    want = torch.tensor([value(RIGHT, i, dtype) for i in range(count)], dtype=dtype).view(shape)
    assert torch.equal(right, want), f"PE {RIGHT}'s tensor, loaded directly"
    assert torch.equal(st.get_peer_tensor(t, ME), mine)
    sc.barrier_all()  # every PE read before anyone stores into its neighbour
    if count:
        right.view(-1)[0] = want.view(-1)[-1]  # a store into PE RIGHT's memory
    sc.barrier_all()
    if count:
        assert t.view(-1)[0] == mine.view(-1)[-1], f"PE {LEFT}'s store"
        assert torch.equal(t.view(-1)[1:], mine.view(-1)[1:]), "only the first element changed"
    st.free(t)
    assert t.numel() == 0, "free empties the tensor"


def test_storage_is_the_symmetric_memory_no_copy():
    t = st.zeros((8,), torch.int32)
    assert torch.equal(t, torch.zeros(8, dtype=torch.int32))
    a = t.numpy()  # NumPy over the same bytes, which shmem.core takes
    assert a.__array_interface__["data"][0] == t.data_ptr()
    a[3] = 42
    assert t[3] == 42
    sc.barrier_all()
    st.free(t)


def test_views_and_like():
    t = st.empty((4, 6), torch.float64)
    t.copy_(torch.arange(24, dtype=torch.float64).view(4, 6) + 100 * ME)
    sc.barrier_all()
    col = t[1:, 2]  # strided view inside the allocation
    peer = st.get_peer_tensor(col, RIGHT)
    assert peer.stride() == col.stride() and peer.storage_offset() == col.storage_offset()
    assert torch.equal(peer, torch.tensor([8.0, 14.0, 20.0], dtype=torch.float64) + 100 * RIGHT)
    tr = st.get_peer_tensor(t.t(), LEFT)
    assert torch.equal(tr, (torch.arange(24, dtype=torch.float64).view(4, 6) + 100 * LEFT).t())
    like = st.empty_like(t)
    assert like.shape == t.shape and like.dtype == t.dtype and like.data_ptr() != t.data_ptr()
    sc.barrier_all()
    st.free(like)
    st.free(t)


def test_core_routines_on_tensor_memory():
    t = st.zeros((N, 4), torch.int64)
    sc.barrier_all()  # every PE zeroed its tensor before any put lands in it
    src = np.full(4, 10 + ME, dtype=np.int64)
    sc.put(t.numpy()[ME], src, RIGHT)  # row ME of PE RIGHT's tensor
    sc.barrier_all()
    assert torch.equal(t[LEFT], torch.full((4,), 10 + LEFT, dtype=torch.int64)), "PE LEFT's put"
    got = np.zeros(4, dtype=np.int64)
    sc.get(got, t.numpy()[ME], RIGHT)
    assert (got == 10 + ME).all(), "this PE's put, read back from PE RIGHT"
    s = st.empty((5,), torch.float32)
    s.fill_(ME + 1)
    sc.barrier_all()
    sc.reduce(sc.TEAM_WORLD, s.numpy(), s.numpy(), "sum")
    assert torch.equal(s, torch.full((5,), float(N * (N + 1) // 2)))
    sc.barrier_all()
    st.free(s)
    st.free(t)


def test_free_and_reuse():
    # Each round asks for a third of the heap: without free the third round has no room.
    n = MEM_SIZE // 3 // 4
    for round_ in range(6):
        t = st.empty((n,), torch.float32)
        t[0], t[-1] = ME + round_, -ME - round_
        sc.barrier_all()
        peer = st.get_peer_tensor(t, RIGHT)
        assert (peer[0].item(), peer[-1].item()) == (RIGHT + round_, -RIGHT - round_)
        sc.barrier_all()
        st.free(t)
    with pytest.raises(sc.AllocationError):
        st.empty((MEM_SIZE,), torch.float64)


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"empty: dtype='float32' is not a torch.dtype"):
        st.empty(3, "float32")
    with pytest.raises(TypeError, match=r"empty: dtype=torch.qint8 cannot be"):
        st.empty(3, torch.qint8)
    with pytest.raises(ValueError, match=r"empty: shape=\(2, -1\) has a negative extent -1"):
        st.empty((2, -1))
    with pytest.raises(TypeError, match=r"empty: shape=\(2, 1.5\) has 1.5, which is not an int"):
        st.empty((2, 1.5))
    with pytest.raises(TypeError, match=r"zeros: shape='ab' has 'a', which is not an int"):
        st.zeros("ab")
    with pytest.raises(TypeError, match=r"empty: shape=None is not an int or a sequence"):
        st.empty(None)
    with pytest.raises(TypeError, match="empty_like: tensor is a list, not a torch.Tensor"):
        st.empty_like([1, 2])
    plain = torch.zeros(4)
    with pytest.raises(ValueError, match=r"get_peer_tensor: tensor \(storage at 0x[0-9a-f]+, "
                       r"16 bytes\) is not on the symmetric heap"):
        st.get_peer_tensor(plain, 0)
    with pytest.raises(ValueError, match=r"free: tensor \(storage at 0x[0-9a-f]+\) is not a "
                       "tensor of shmem.torch.empty"):
        st.free(plain)
    with pytest.raises(TypeError, match="free: tensor is a ndarray, not a torch.Tensor"):
        st.free(np.zeros(3))
    t = st.empty((4,), torch.int32)
    with pytest.raises(ValueError, match=rf"get_peer_tensor: pe={N} is not a PE of the job"):
        st.get_peer_tensor(t, N)
    with pytest.raises(ValueError, match=r"get_peer_tensor: pe=-1 is not a PE of the job"):
        st.get_peer_tensor(t, -1)
    with pytest.raises(TypeError, match=r"get_peer_tensor: pe=1.0 is not an int"):
        st.get_peer_tensor(t, 1.0)
    if N > 1:  # another PE's memory is no allocation of this PE (at 1 PE it is this PE's own)
        with pytest.raises(ValueError, match="get_peer_tensor: tensor .* is not on the symmetric"):
            st.get_peer_tensor(st.get_peer_tensor(t, RIGHT), ME)
        with pytest.raises(ValueError, match="free: tensor .* is not a tensor of shmem.torch"):
            st.free(st.get_peer_tensor(t, RIGHT))
    sc.barrier_all()
    st.free(t)
    with pytest.raises(ValueError, match=r"free: tensor .* \(or was freed already\)"):
        st.free(t)


def test_unmapped_peer_is_a_clear_error(monkeypatch):
    t = st.empty((2,), torch.float32)
    monkeypatch.setattr(sc._c, "shmem_ptr", lambda addr, pe: None)
    with pytest.raises(sc.ShmemError, match=rf"get_peer_tensor: PE {RIGHT}'s memory is not "
                       rf"mapped by PE {ME}"):
        st.get_peer_tensor(t, RIGHT)
    monkeypatch.undo()
    sc.barrier_all()
    st.free(t)


def test_names_documented_and_in_stub():
    stub = (pathlib.Path(st.__file__).with_suffix(".pyi")).read_text()
    for name in st.__all__:
        assert (getattr(st, name).__doc__ or "").strip(), f"shmem.torch.{name} has no docstring"
        assert re.search(rf"^def {name}\b", stub, re.M), f"{name} is not in torch.pyi"


def test_shmem_imports_without_torch():
    # A child with torch made unimportable: `import shmem` and `shmem.core` still work, and
    # `import shmem.torch` says what is missing.
    code = ("import sys; sys.modules['torch'] = None\n"
            "import shmem, shmem.core\n"
            "try:\n    import shmem.torch\nexcept ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ERR shmem.torch needs PyTorch" in out.stdout
