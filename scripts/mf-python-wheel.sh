#!/usr/bin/env bash
# scripts/mf-python-wheel.sh VENV OUT_DIR LIBDIR INCLUDEDIR VERSION: builds memfabric_hybrid's
# wheel (python/memfabric: the packages memfabric_hybrid and mf_adapter, pure Python over
# libmf_smem.so) into OUT_DIR with VENV's Python (made or completed by scripts/python-env.sh),
# then installs it into VENV, replacing an older build. The wheel uses the libmf_smem.so in
# LIBDIR and reports LIBDIR and INCLUDEDIR (the install's) as its get_lib_path/get_include_path.
set -euo pipefail
usage="usage: mf-python-wheel.sh VENV OUT_DIR LIBDIR INCLUDEDIR VERSION"
venv=$(realpath -m -- "${1:?$usage}")
out=$(realpath -m -- "${2:?$usage}")
export MF_PYTHON_LIBDIR=${3:?$usage} MF_PYTHON_INCLUDEDIR=${4:?$usage} MF_PYTHON_VERSION=${5:?$usage}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=python-env.sh
source "$root/scripts/python-env.sh"
shmem_python_env "$venv"
py=$SHMEM_VENV_PYTHON

mkdir -p "$out"
rm -f "$out"/memfabric_hybrid-*.whl
# The backend is in the tree and needs only the standard library: no isolation, no index.
"$py" -m pip wheel --disable-pip-version-check -q --no-deps --no-build-isolation --no-index \
    --wheel-dir "$out" "$root/python/memfabric"
wheel=$(ls "$out"/memfabric_hybrid-*.whl)
"$py" -m pip install --disable-pip-version-check -q --force-reinstall --no-deps --no-index "$wheel"
echo "mf-python-wheel.sh: built and installed into $venv: $wheel"
