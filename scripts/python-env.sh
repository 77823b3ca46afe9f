#!/usr/bin/env bash
# scripts/python-env.sh: the project's Python virtual environment, made once and reused.
#
# Usage: scripts/python-env.sh [--venv DIR] [PACKAGE...]
#   Makes DIR (default: build/venv, or $SHMEM_VENV) with the Python 3 found first on PATH
#   unless it exists, installs what the Python package needs to build and test (maturin, numpy,
#   pytest) and the extra PACKAGEs given (pip requirement specifiers, e.g. torch), each only
#   when missing, then prints DIR's python on stdout (everything else goes to stderr).
#
# Sourced, it defines shmem_python_env DIR [PACKAGE...], which does the same and sets
# SHMEM_VENV_PYTHON; other scripts (build.sh, the torch build) add their packages this way.
SHMEM_PYTHON_BASE_PACKAGES=("maturin>=1.5,<2" "numpy>=1.22" "pytest>=7")

shmem_python_env() {
    local venv=$1
    shift
    local py=$venv/bin/python lock_fd rc=0
    # One run at a time per environment: two builds at once (two checkouts sharing the torch
    # environment) must not make it or install into it together. The second waits, then finds
    # what the first installed.
    mkdir -p "$(dirname "$venv")" || return 1
    exec {lock_fd}>"$venv.lock" || return 1
    if ! flock -n "$lock_fd"; then
        echo "python-env.sh: another run is installing into $venv; waiting for it (lock $venv.lock, up to ${SHMEM_VENV_LOCK_WAIT:-3600} s)" >&2
        if ! flock -w "${SHMEM_VENV_LOCK_WAIT:-3600}" "$lock_fd"; then
            echo "python-env.sh: $venv is still locked by another run (fuser $venv.lock names it)" >&2
            exec {lock_fd}>&-
            return 1
        fi
    fi
    _shmem_python_env_locked "$venv" "$@" || rc=$?
    exec {lock_fd}>&-
    return $rc
}

_shmem_python_env_locked() {
    local venv=$1
    shift
    local py=$venv/bin/python
    if [[ ! -x $py ]]; then
        local base
        base=$(command -v python3) || {
            echo "python-env.sh: python3 not found: install it (Debian: python3 python3-venv)" >&2
            return 1
        }
        echo "python-env.sh: making the virtual environment $venv with $base" >&2
        if ! "$base" -m venv "$venv" >&2; then
            rm -rf "$venv"
            echo "python-env.sh: '$base -m venv' failed (Debian: apt-get install python3-venv)" >&2
            return 1
        fi
    fi
    local want=("${SHMEM_PYTHON_BASE_PACKAGES[@]}" "$@") missing=() req
    for req in "${want[@]}"; do
        # A requirement pip's own resolver would leave as it is needs no network.
        if ! "$py" - "$req" >/dev/null 2>&1 <<'PYEOF'; then
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
r = Requirement(sys.argv[1])
try:
    sys.exit(0 if r.specifier.contains(version(r.name), prereleases=True) else 1)
except PackageNotFoundError:
    sys.exit(1)
PYEOF
            missing+=("$req")
        fi
    done
    if ((${#missing[@]})); then
        echo "python-env.sh: installing into $venv: ${missing[*]}" >&2
        # pip's own lines (what it downloads, with sizes) show that a long download is moving.
        "$py" -m pip install --disable-pip-version-check "${missing[@]}" >&2 ||
            return 1
    fi
    SHMEM_VENV_PYTHON=$py
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    venv=${SHMEM_VENV:-$root/build/venv}
    if [[ ${1:-} == --venv ]]; then
        venv=${2:?"--venv needs a directory"}
        shift 2
    fi
    shmem_python_env "$venv" "$@"
    echo "$SHMEM_VENV_PYTHON"
fi
