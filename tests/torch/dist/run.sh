#!/usr/bin/env bash
# run.sh MODE NPES SCRIPT: runs one of this folder's programs (the torch.distributed backend
# "shmem") on NPES ranks.
#   torchrun  torchrun --standalone --nproc-per-node NPES SCRIPT (env:// rendezvous)
#   shmemrun  shmemrun -n NPES python SCRIPT, the ranks meeting at a free local port
#             (SHMEM_DIST_TEST_PORT) through the one line docs/pytorch.md gives
#   kill      NPES ranks started here with torch's env:// variables (torchrun would stop the
#             others itself); SCRIPT kills the last one mid-allreduce: every other rank must
#             exit non-zero within the watchdog, rank 0 with the library's message naming it
# Environment (set by ctest): SHMEM_TORCH_PYTHON, SHMEM_SHMEMRUN, SHMEM_TORCH_C10D, PYTHONPATH.
# Each run is bounded by RUN_TIMEOUT seconds (default 120).
set -euo pipefail
mode=${1:?mode}; npes=${2:?npes}; script=${3:?script}
py=${SHMEM_TORCH_PYTHON:?}
limit=${RUN_TIMEOUT:-120}
cd "$(dirname "$0")"
free_port() {
    "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
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
    kill)
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        port=$(free_port)
        pids=()
        for ((r = 0; r < npes; r++)); do
            RANK=$r LOCAL_RANK=$r WORLD_SIZE=$npes LOCAL_WORLD_SIZE=$npes \
                MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
                timeout -k 5 "$limit" "$py" "$script" >"$work/$r.out" 2>"$work/$r.err" &
            pids+=($!)
        done
        start=$SECONDS
        status=0
        for ((r = 0; r < npes; r++)); do
            rc=0
            wait "${pids[$r]}" || rc=$?
            echo "rank $r: exit status $rc after $((SECONDS - start)) s"
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
    *) echo "run.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
