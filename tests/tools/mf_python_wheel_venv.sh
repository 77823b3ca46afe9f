#!/usr/bin/env bash
# mf_python_wheel_venv.sh <python> <wheel-dir> <work-dir> <example>
# memfabric_hybrid's wheel as a user gets it: a new virtual environment (made by <python>'s
# venv module, no system site packages), `pip install --no-index` of the wheel with nothing
# else set (env -i: no LD_LIBRARY_PATH, no SHMEM_*), then the packages' paths and memfabric's
# Big Memory example (<example>, tests/python/smem_bm_example.py) at 2 ranks. The wheel carries
# no library: it loads the installed libmf_smem.so, so the test is skipped (77) when that
# install is not there yet (`cmake --install` not run).
set -euo pipefail
python=${1:?}; wheels=${2:?}; work=${3:?}; example=${4:?}
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wheel=$(ls "$wheels"/memfabric_hybrid-*.whl 2>/dev/null | head -1)
[[ -n $wheel ]] || { echo "FAIL: no memfabric_hybrid wheel in $wheels"; exit 1; }
if "$python" -m zipfile -l "$wheel" | grep -q '\.so'; then
    echo "FAIL: $wheel carries a library:"
    "$python" -m zipfile -l "$wheel"
    exit 1
fi

rm -rf "$work"
base=$("$python" -c 'import sys; print(sys.base_prefix)')
run() { env -i HOME="$work" PATH=/usr/bin:/bin SHMEM_DEVICE=host "$@"; }
run "$base/bin/python3" -m venv "$work/venv"
run "$work/venv/bin/python" -m pip --disable-pip-version-check -q install --no-index \
    --no-deps "$wheel"

cd "$work"
# Read without importing the package (its import loads the library).
info=$(ls "$work"/venv/lib/python*/site-packages/memfabric_hybrid/_build_info.py)
lib=$("$python" -c 'import sys; d = {}; exec(open(sys.argv[1]).read(), d); print(d["LIB_DIR"])' "$info")
if [[ ! -e $lib/libmf_smem.so ]]; then
    echo "SKIP: the wheel loads libmf_smem.so from $lib, which is not installed yet (cmake --install)"
    exit 77
fi
run "$work/venv/bin/python" -c '
import os, memfabric_hybrid as mf, mf_adapter
assert os.path.isfile(os.path.join(mf.get_lib_path(), "libmf_smem.so")), mf.get_lib_path()
for h in ("smem.h", "smem_bm.h", "smem_bm_def.h", "smem_shm.h", "smem_shm_def.h"):
    assert os.path.isfile(os.path.join(mf.get_include_path(), "smem", "host", h)), h
print("paths ok:", mf.get_lib_path(), mf.get_include_path())
'
port=$("$python" "$tools/free_port.py")
run timeout -k 5 120 "$work/venv/bin/python" "$example" --world-size 2 --url "tcp://127.0.0.1:$port"
echo "(python: $base; library: $lib)"
