"""Every public name of the package is exercised by a test of tests/python, has a docstring, and
is declared in the type stubs (shmem/_shmem.pyi, shmem/core.pyi)."""

import inspect
import pathlib
import re

import shmem
import shmem.core as sc

HERE = pathlib.Path(__file__).parent
TESTS = "\n".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != "test_names.py")
TYPED = re.compile(r"^shmem_(\w+?)_(put|get|put_nbi|get_nbi|p|g|wait_until|test)$")
STUB = (pathlib.Path(shmem.__file__).parent / "_shmem.pyi").read_text()
CORE_STUB = (pathlib.Path(shmem.__file__).parent / "core.pyi").read_text()


def exercised(name):
    m = TYPED.match(name)
    if m and m.group(1) in shmem.RMA_TYPES + shmem.WAIT_TYPES:
        # the typed suites run over RMA_TYPES / WAIT_TYPES and look each routine up by name
        return f'f"shmem_{{t}}_{m.group(2)}"' in TESTS
    return re.search(rf"\b{re.escape(name)}\b", TESTS) is not None


def test_every_public_name_is_exercised():
    missing = [n for n in shmem.__all__ + [f"core.{n}" for n in sc.__all__]
               if not exercised(n.split(".", 1)[-1])]
    assert not missing, f"not used by any test: {missing}"


def test_every_public_name_has_a_docstring():
    undocumented = []
    for mod, names in ((shmem, shmem.__all__), (sc, sc.__all__)):
        for n in names:
            obj = getattr(mod, n)
            if isinstance(obj, (int, str, tuple)):
                continue  # constants: documented in the stubs and the module docstring
            if not (inspect.getdoc(obj) or "").strip():
                undocumented.append(f"{mod.__name__}.{n}")
    assert not undocumented, undocumented


def test_every_extension_name_is_in_the_stubs():
    names = [n for n in dir(shmem._shmem) if not n.startswith("__")]
    missing = [n for n in names if not re.search(rf"^(def|class) {n}\b|^{n}: ", STUB, re.M)]
    assert not missing, f"not in _shmem.pyi: {missing}"


def test_every_core_name_is_in_the_stubs():
    missing = [n for n in sc.__all__
               if not re.search(rf"^(def|class) {n}\b|^{n}: ", CORE_STUB, re.M)]
    assert not missing, f"not in core.pyi: {missing}"
