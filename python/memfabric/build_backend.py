"""PEP 517 backend of memfabric_hybrid's wheel: the two packages beside this file and
``memfabric_hybrid/_build_info.py``, written here from the environment (MF_PYTHON_LIBDIR,
MF_PYTHON_INCLUDEDIR: the install's library and include directories; MF_PYTHON_VERSION). Only
the standard library: ``pip wheel --no-build-isolation`` needs nothing installed.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "memfabric_hybrid"
PACKAGES = ("memfabric_hybrid", "mf_adapter")
HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = "memfabric_hybrid's Python API (memfabric_hybrid, mf_adapter) over the shmem library"


def _settings():
    missing = [v for v in ("MF_PYTHON_LIBDIR", "MF_PYTHON_INCLUDEDIR", "MF_PYTHON_VERSION")
               if not os.environ.get(v)]
    if missing:
        raise RuntimeError(f"memfabric_hybrid's wheel needs {', '.join(missing)} (the install's "
                           "library and include directories, the version): "
                           "scripts/mf-python-wheel.sh sets them")
    return (os.environ["MF_PYTHON_LIBDIR"], os.environ["MF_PYTHON_INCLUDEDIR"],
            os.environ["MF_PYTHON_VERSION"])


def _build_info(libdir, includedir, version):
    return (f'"""Written when the wheel was built: the install this package uses."""\n\n'
            f"LIB_DIR = {libdir!r}\nINCLUDE_DIR = {includedir!r}\nVERSION = {version!r}\n")


def _sources():
    for pkg in PACKAGES:
        for root, dirs, files in os.walk(os.path.join(HERE, pkg)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".typed")) and f != "_build_info.py":
                    path = os.path.join(root, f)
                    yield os.path.relpath(path, HERE), path


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
            "License: Apache-2.0\nRequires-Python: >=3.9\n")


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    libdir, includedir, version = _settings()
    wheel = f"{NAME}-{version}-py3-none-any.whl"
    dist_info = f"{NAME}-{version}.dist-info"
    entries = [(arc, open(path, "rb").read()) for arc, path in _sources()]
    entries.append((f"{NAME}/_build_info.py", _build_info(libdir, includedir, version).encode()))
    entries += [
        (f"{dist_info}/METADATA", _metadata(version).encode()),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: build_backend.py\n"
                               b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{dist_info}/top_level.txt", "".join(p + "\n" for p in PACKAGES).encode()),
    ]
    record = []
    for arc, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    version = os.environ.get("MF_PYTHON_VERSION") or "0"
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        files = [(arc, path) for arc, path in _sources()]
        files += [(f, os.path.join(HERE, f)) for f in ("pyproject.toml", "build_backend.py")]
        for arc, path in files:
            t.add(path, arcname=f"{base}/{arc}")
        pkg_info = _metadata(version).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        t.addfile(info, io.BytesIO(pkg_info))
    return name
