#!/usr/bin/env bash
# python_wheel_venv.sh <python> <wheel-dir> <work-dir>
# The shmem wheel as a user gets it: a new virtual environment (made by <python>'s venv module,
# no system site packages), `pip install` of the wheel with nothing else set (env -i: no
# LD_LIBRARY_PATH, no SHMEM_*), then `import shmem` and a 1-PE job. The wheel must carry no copy
# of libshmem.so (one runtime per process) and must load the installed one through its run
# path: skipped (77) when that install is not there yet (`cmake --install` not run).
set -euo pipefail
python=${1:?}; wheels=${2:?}; work=${3:?}
wheel=$(ls "$wheels"/shmem-*.whl 2>/dev/null | head -1)
[[ -n $wheel ]] || { echo "FAIL: no wheel in $wheels"; exit 1; }

if "$python" -m zipfile -l "$wheel" | grep -q 'libshmem'; then
    echo "FAIL: $wheel carries a copy of libshmem:"
    "$python" -m zipfile -l "$wheel"
    exit 1
fi

rm -rf "$work"
base=$("$python" -c 'import sys; print(sys.base_prefix)')
# The interpreter the venv was made from, as a user would run it: nothing else set. --no-deps:
# NumPy (a dependency of shmem.core only) would come from the network.
env -i HOME="$work" PATH=/usr/bin:/bin "$base/bin/python3" -m venv "$work/venv"
env -i HOME="$work" PATH=/usr/bin:/bin "$work/venv/bin/python" -m pip \
    --disable-pip-version-check -q install --no-deps "$wheel"

so=$(ls "$work"/venv/lib/python*/site-packages/shmem/_shmem*.so)
runpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
if [[ -z $runpath ]]; then
    echo "FAIL: $so has no run path to libshmem.so"
    exit 1
fi
if [[ ! -e $runpath/libshmem.so.0 ]]; then
    echo "SKIP: the wheel loads libshmem.so from $runpath, which is not installed yet (cmake --install)"
    exit 77
fi

cd "$work"
env -i HOME="$work" PATH=/usr/bin:/bin "$work/venv/bin/python" -c '
import shmem
assert shmem.shmem_init(0, 1, 1 << 20) == 0
p = shmem.shmem_malloc(8)
shmem.shmem_int64_p(p, 42, 0)
assert shmem.shmem_int64_g(p, 0) == 42
shmem.shmem_free(p)
assert shmem.shmem_finalize() == 0
print("import shmem and a 1-PE job: ok, library", shmem.shmem_info_get_name())
'
echo "(python: $base; run path: $runpath)"
