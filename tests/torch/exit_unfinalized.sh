#!/usr/bin/env bash
# exit_unfinalized.sh NPES RUNS: attr_init_exit.py RUNS times under torchrun --standalone with
# NPES ranks, joining with Manager.attr_init at a free local port and ending without finalize
# (the interpreter's end on even runs, sys.exit(0) on odd ones). Every run must end with status
# 0, every rank's last line printed, no "without shmem_finalize" report and no rank left behind.
# Environment (set by ctest): SHMEM_TORCH_PYTHON, SHMEM_TORCH_LIBRARY, PYTHONPATH. Each run is
# bounded (90 s); a hang fails the test.
set -u
npes=${1:?npes}; runs=${2:?runs}
py=${SHMEM_TORCH_PYTHON:?}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SHMEM_TEST_MARK="torch-exit-unfinalized-$$"

survivors() {
    local pid left=""
    for pid in $(pgrep -f -- attr_init_exit.py 2>/dev/null); do
        tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SHMEM_TEST_MARK=$SHMEM_TEST_MARK" &&
            left="$left $pid"
    done
    echo "$left"
}

failed=0
for ((run = 1; run <= runs; run++)); do
    if ((run % 2)); then how=exit; else how=end; fi
    port=$("$py" "$here/../tools/free_port.py")
    out=$tmp/out.$run
    SHMEM_TEST_STORE=tcp://127.0.0.1:$port timeout -k 5 90 "$py" -m torch.distributed.run \
        --standalone --nproc-per-node "$npes" "$here/attr_init_exit.py" "$how" >"$out" 2>&1
    status=$?
    bad=""
    [[ $status -eq 0 ]] || bad="status $status"
    for ((r = 0; r < npes; r++)); do
        grep -q "rank $r of $npes: data checked, ending by $how" "$out" ||
            bad="$bad; rank $r's last line is missing"
    done
    grep -q "without shmem_finalize" "$out" && bad="$bad; a rank was reported as leaving unfinalized"
    left=$(survivors)
    if [[ -n $left ]]; then
        bad="$bad; processes left:$left"
        kill -9 $left 2>/dev/null
    fi
    if [[ -n $bad ]]; then
        echo "FAIL: run $run ($how): ${bad#; }"
        sed 's/^/    /' "$out"
        failed=$((failed + 1))
    fi
done
if ((failed)); then
    echo "FAIL: $failed of $runs runs of $npes ranks"
    exit 1
fi
echo "OK: $runs runs of $npes ranks joining with Manager.attr_init, ending without finalize, every status 0"
