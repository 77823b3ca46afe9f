#!/usr/bin/env bash
# exit_unfinalized.sh LAUNCHER NPES RUNS CANN_DATA [SHMEMRUN | TORCH_PYTHON]
#
# Runs cann_data RUNS times as NPES PEs started the CANN way (attributes or a unique id), every
# PE checking the block its neighbour put and then ending without finalize, as CANN's programs
# do: returning from main on even runs, calling exit(0) on odd ones, each after a random pause
# so that the PEs leave in any order. Every run must end with every exit status 0, every PE's
# last line printed (a PE killed at its exit loses its buffered stdout), and no PE left.
#   LAUNCHER  plain     NPES processes started by hand (run_plain.sh), PE 0's store on TCP
#             shmemrun  under shmemrun (its store; the unique id through a file)
#             torchrun  under torch's torchrun --standalone --no-python, run by TORCH_PYTHON
#                       (its RANK, WORLD_SIZE; unique id); exits 77 (skipped) when TORCH_PYTHON
#                       is not given or cannot import torch
# Each job is bounded (60 s); a hang fails the test.
set -u
launcher=$1 npes=$2 runs=$3 data=$4 tool=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE
# Marks this test's processes, so that survivors are found by their environment.
export SHMEM_TEST_MARK="exit-unfinalized-$$"

if [ "$launcher" = torchrun ] && ! { [ -n "$tool" ] && "$tool" -c 'import torch' 2>/dev/null; }; then
    echo "SKIPPED: no Python with torch (${tool:-not given})"
    exit 77
fi

survivors() {
    local pid left=""
    for pid in $(pgrep -f -- "$data" 2>/dev/null); do
        tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SHMEM_TEST_MARK=$SHMEM_TEST_MARK" &&
            left="$left $pid"
    done
    echo "$left"
}

failed=0
for ((run = 1; run <= runs; run++)); do
    if ((run % 2)); then how=exit; else how=return; fi
    out=$tmp/out.$run
    case $launcher in
    plain)
        args=(-e SHMEM_TLS_DISABLE=1)
        for ((r = 0; r < npes; r++)); do
            args+=(-m "$r:PE $r of $npes: attr: data checked, ending by $how")
        done
        RUN_TIMEOUT=60 "$here/run_plain.sh" "${args[@]}" "$npes" -- \
            "$data" attr '{rank}' "$npes" --ip 'tcp://127.0.0.1:{port}' --end "$how" >"$out" 2>&1
        status=$?
        ;;
    shmemrun)
        rm -f "$tmp/uid"
        timeout -k 5 90 "$tool" -n "$npes" --timeout 60 \
            "$data" uid env env --uid "$tmp/uid" --end "$how" >"$out" 2>&1
        status=$?
        ;;
    torchrun)
        rm -f "$tmp/uid"
        timeout -k 5 90 "$tool" -m torch.distributed.run --standalone --nproc-per-node "$npes" \
            --no-python \
            "$data" uid env env --uid "$tmp/uid" --end "$how" >"$out" 2>&1
        status=$?
        ;;
    *)
        echo "exit_unfinalized.sh: unknown launcher $launcher"
        exit 2
        ;;
    esac
    bad=""
    [ "$status" -eq 0 ] || bad="status $status"
    if [ "$launcher" != plain ]; then
        for ((r = 0; r < npes; r++)); do
            grep -q "PE $r of $npes: uid: data checked, ending by $how" "$out" ||
                bad="$bad; PE $r's last line is missing"
        done
    fi
    if grep -q "exited without shmem_finalize\|without calling shmem_finalize" "$out"; then
        bad="$bad; a PE was reported as leaving unfinalized"
    fi
    left=$(survivors)
    if [ -n "$left" ]; then
        bad="$bad; processes left:$left"
        kill -9 $left 2>/dev/null
    fi
    if [ -n "$bad" ]; then
        echo "FAIL: run $run ($how): ${bad#; }"
        sed 's/^/    /' "$out"
        failed=$((failed + 1))
    fi
done
if [ $failed -ne 0 ]; then
    echo "FAIL: $failed of $runs runs of $npes PEs under $launcher"
    exit 1
fi
echo "OK: $runs runs of $npes PEs under $launcher ending without finalize, every status 0"
