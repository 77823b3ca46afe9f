#!/usr/bin/env bash
# run.sh MODE NPES SCRIPT: runs one of this folder's programs (the torch.distributed backend
# "shmem") on NPES ranks.
#   torchrun  torchrun --standalone --nproc-per-node NPES SCRIPT (env:// rendezvous)
#   shmemrun  shmemrun -n NPES python SCRIPT, the ranks meeting at a free local port
#             (SHMEM_DIST_TEST_PORT) through the one line docs/pytorch.md gives
#   mpirun    Open MPI's mpirun -n NPES python SCRIPT (status 77, a skip, without it), the ranks
#             meeting at MASTER_ADDR:MASTER_PORT (a free local port, passed with -x) through the
#             one line docs/pytorch.md gives
#   kill      NPES ranks started here with torch's env:// variables (torchrun would stop the
#             others itself); SCRIPT kills the last one mid-allreduce: every other rank must
#             exit non-zero within the watchdog, rank 0 with the library's message naming it
#   timeout   NPES ranks started the same way; SCRIPT (timeout.py) checks recv's timeouts itself,
#             then the last rank never enters an all_reduce: every rank must exit non-zero soon
#             after the group's 2 s timeout, one with the backend's message naming the call
# Environment (set by ctest): SHMEM_TORCH_PYTHON, SHMEM_SHMEMRUN, SHMEM_TORCH_C10D, PYTHONPATH;
# SHMEM_TORCH_TEST_GPU=1 for a program that needs a GPU: without one torch can use, it prints
# "SKIPPED: no GPU (...)" and exits 77.
# Each run is bounded by RUN_TIMEOUT seconds (default 120).
set -euo pipefail
mode=${1:?mode}; npes=${2:?npes}; script=${3:?script}
py=${SHMEM_TORCH_PYTHON:?}
limit=${RUN_TIMEOUT:-120}
cd "$(dirname "$0")"
# SHMEM_TORCH_TEST_GPU=1: a program for a GPU (gpu.py), skipped without one.
if [[ ${SHMEM_TORCH_TEST_GPU:-0} == 1 ]]; then
    . ../no_gpu.sh
    if why=$(no_gpu "$py"); then
        echo "SKIPPED: no GPU ($why)"
        exit 77
    fi
fi
free_port() {
    "$py" ../../tools/free_port.py
}
# Waits for rank $1 started by start_ranks: its status in rc, a line saying it and the time.
wait_rank() {
    rc=0
    wait "${pids[$1]}" || rc=$?
    took=$((SECONDS - start))
    echo "rank $1: exit status $rc after $took s"
}
# Starts NPES ranks of SCRIPT here with torch's env:// variables, their output in $work/RANK.out
# and .err, their ids in pids.
start_ranks() {
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    local port r
    port=$(free_port)
    pids=()
    for ((r = 0; r < npes; r++)); do
        RANK=$r LOCAL_RANK=$r WORLD_SIZE=$npes LOCAL_WORLD_SIZE=$npes \
            MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            timeout -k 5 "$limit" "$py" "$script" >"$work/$r.out" 2>"$work/$r.err" &
        pids+=($!)
    done
    start=$SECONDS
}
case $mode in
    torchrun)
        exec timeout -k 10 "$limit" "$py" -m torch.distributed.run --standalone \
            --nproc-per-node "$npes" "$script"
        ;;
    shmemrun)
        SHMEM_DIST_TEST_PORT=$(free_port) exec "${SHMEM_SHMEMRUN:?}" -n "$npes" \
            --timeout "$limit" "$py" "$script"
        ;;
    mpirun)
        if [[ ! -x /usr/bin/mpirun ]]; then
            echo "SKIP: /usr/bin/mpirun not found (Debian: apt-get install openmpi-bin)"
            exit 77
        fi
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) exec timeout -k 10 "$limit" \
            /usr/bin/mpirun --allow-run-as-root --oversubscribe -n "$npes" -x MASTER_ADDR \
            -x MASTER_PORT -x PYTHONPATH -x SHMEM_TORCH_C10D -x PYTHONDONTWRITEBYTECODE \
            "$py" "$script"
        ;;
    kill)
        start_ranks
        status=0
        for ((r = 0; r < npes; r++)); do
            wait_rank "$r"
            if ((r == npes - 1)); then
                # killed by its own SIGKILL
                ((rc == 137)) || { echo "rank $r: expected SIGKILL (137), got $rc"; status=1; }
            elif ((rc == 0 || rc == 124 || rc == 137)); then
                echo "rank $r: expected an error exit, got $rc (124/137: the watchdog)"
                status=1
            elif ((r == 0)) && ! grep -q "PE $((npes - 1)) exited without shmem_finalize or died" \
                "$work/$r.err"; then
                # PE 0 serves the job's store: it sees the death, names the rank and ends the
                # job; the other PEs exit with status 1.
                echo "rank $r: no message naming the lost rank"
                status=1
            fi
            tail -n 3 "$work/$r.err" | sed "s/^/  rank $r: /"
        done
        exit "$status"
        ;;
    timeout)
        start_ranks
        status=0
        for ((r = 0; r < npes; r++)); do
            wait_rank "$r"
            cat "$work/$r.out" | sed "s/^/  rank $r: /"
            grep -q "recv timed out" "$work/$r.out" ||
                { echo "rank $r: the recv part did not pass"; status=1; }
            # The job ends from the watchdog, 2 s into the all_reduce: long before the last
            # rank's 60 s sleep or the run's watchdog.
            if ((rc == 0 || rc == 124 || rc == 137 || took > 40)); then
                echo "rank $r: expected the job to end with an error soon after the timeout"
                status=1
            fi
            tail -n 3 "$work/$r.err" | sed "s/^/  rank $r: /"
        done
        # The first rank whose watchdog looks names the call (the others end with the job).
        if ! cat "$work"/*.err | grep -q \
            "rank [0-9]*: allreduce did not complete within the group's timeout of 2000 ms"; then
            echo "no rank's message names the call and the timeout"
            status=1
        fi
        exit "$status"
        ;;
    *) echo "run.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
