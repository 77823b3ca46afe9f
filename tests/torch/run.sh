#!/usr/bin/env bash
# run.sh LAUNCHER NPES [README]: runs this folder's pytest suite on NPES ranks.
#   torchrun   torchrun --standalone --nproc-per-node NPES -m pytest
#   shmemrun   shmemrun -n NPES python -m pytest
#   mpirun     Open MPI's /usr/bin/mpirun -n NPES python -m pytest (status 77, a skip, without it)
#   attr_init  torchrun, every rank joining with attr_init at a free local port
#   readme     a page's PyTorch example (the python block after
#              <!-- readme-test: torch -->; README.md or a docs/ page) under shmemrun
# Environment (set by ctest): SHMEM_TORCH_PYTHON, SHMEM_SHMEMRUN, SHMEM_TORCH_LIBRARY,
# PYTHONPATH; SHMEM_TORCH_TESTS, the test files to run (default: the folder). With
# SHMEM_TORCH_TEST_GPU=1 (the gpu tests) the suites need a GPU: without one torch can use, it
# prints "SKIPPED: no GPU (...)" and exits 77. Each run is bounded by RUN_TIMEOUT seconds
# (default 300).
set -euo pipefail
launcher=${1:?launcher}; npes=${2:?npes}
py=${SHMEM_TORCH_PYTHON:?}
limit=${RUN_TIMEOUT:-300}
export SHMEM_TORCH_TEST_WAIT_TIMEOUT=${SHMEM_TORCH_TEST_WAIT_TIMEOUT:-60}
read -r -a tests <<<"${SHMEM_TORCH_TESTS:-.}"
pytest=(-m pytest -q -x -p no:cacheprovider "${tests[@]}")
if [[ ${SHMEM_TORCH_TEST_GPU:-0} == 1 ]]; then
    . "$(dirname "${BASH_SOURCE[0]}")/no_gpu.sh"
    if why=$(no_gpu "$py"); then
        echo "SKIPPED: no GPU ($why)"
        exit 77
    fi
fi
# torchrun's workers get SIGTERM from it when the timeout stops it; -k ends stragglers.
torchrun=(timeout -k 10 "$limit" "$py" -m torch.distributed.run --standalone
    --nproc-per-node "$npes")

case $launcher in
    torchrun) exec "${torchrun[@]}" "${pytest[@]}" ;;
    shmemrun) exec "$SHMEM_SHMEMRUN" -n "$npes" --timeout "$limit" "$py" "${pytest[@]}" ;;
    mpirun)
        if [[ ! -x /usr/bin/mpirun ]]; then
            echo "SKIP: /usr/bin/mpirun not found (Debian: apt-get install openmpi-bin)"
            exit 77
        fi
        exec timeout -k 10 "$limit" /usr/bin/mpirun --allow-run-as-root --oversubscribe \
            -n "$npes" -x PYTHONPATH -x SHMEM_TORCH_LIBRARY -x SHMEM_TORCH_TEST_WAIT_TIMEOUT \
            -x PYTHONDONTWRITEBYTECODE -x SHMEM_DEVICE -x SHMEM_TORCH_TEST_GPU "$py" "${pytest[@]}"
        ;;
    attr_init)
        port=$("$py" "$(dirname "${BASH_SOURCE[0]}")/../tools/free_port.py")
        SYMMETRIC_MEMORY_IP_PORT=tcp://127.0.0.1:$port exec "${torchrun[@]}" "${pytest[@]}"
        ;;
    readme)
        readme=${3:?README.md}
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        awk '/^<!-- readme-test: torch -->$/ { want = 1; next }
             want && /^```python$/ { inside = 1; next }
             inside && /^```$/ { exit }
             inside { print }' "$readme" >"$work/example.py"
        [[ -s $work/example.py ]] || {
            echo "run.sh: no python block after <!-- readme-test: torch --> in $readme" >&2
            exit 1
        }
        cd "$work"
        "$SHMEM_SHMEMRUN" -n "$npes" --timeout "$limit" "$py" example.py
        ;;
    *) echo "run.sh: unknown launcher '$launcher'" >&2; exit 2 ;;
esac
