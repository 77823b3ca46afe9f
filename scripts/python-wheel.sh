#!/usr/bin/env bash
# scripts/python-wheel.sh VENV OUT_DIR: builds the `shmem` wheel (python/pyproject.toml, maturin)
# into OUT_DIR with VENV's Python (made or completed by scripts/python-env.sh), then installs it
# into VENV, replacing an older build.
#
# The cargo environment comes from the caller (CMake passes its SHMEM_CARGO_ENV: target dir,
# compilers, SHMEM_LIB_DIR of the libshmem.so to link); SHMEM_PYTHON_RPATH names the directory
# the extension loads libshmem.so from at run time (the install's library directory).
set -euo pipefail
venv=${1:?usage: python-wheel.sh VENV OUT_DIR}
out=${2:?usage: python-wheel.sh VENV OUT_DIR}
venv=$(realpath -m -- "$venv")
out=$(realpath -m -- "$out")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -x $HOME/.cargo/bin/cargo ]] && PATH=$HOME/.cargo/bin:$PATH

# shellcheck source=python-env.sh
source "$root/scripts/python-env.sh"
shmem_python_env "$venv"
py=$SHMEM_VENV_PYTHON

mkdir -p "$out"
rm -f "$out"/shmem-*.whl
# --auditwheel skip: the wheel must not carry its own copy of libshmem.so (a second runtime in
# a process that also loads the installed one); it finds the installed library by its run path.
(cd "$root/python" && "$py" -m maturin build --release --locked --interpreter "$py" \
    --auditwheel skip --out "$out")
wheel=$(ls "$out"/shmem-*.whl)
"$py" -m pip install --disable-pip-version-check -q --force-reinstall --no-deps "$wheel"
echo "python-wheel.sh: built and installed into $venv: $wheel"
