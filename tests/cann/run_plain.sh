#!/usr/bin/env bash
# run_plain.sh [-s "S0 S1 ..."] [-m RANK:REGEX]... [-e VAR=VALUE]... NPES -- PROGRAM [ARGS...]
#
# Starts NPES copies of PROGRAM as plain processes, no launcher, as a CANN SHMEM program is
# started: each learns its rank from its arguments. In ARGS, {rank} becomes the copy's rank,
# {tmp} a directory fresh for this run (removed after) and {port} a port number fresh for this
# run, so concurrent tests never meet.
#   -s  the exit status every copy must have, in rank order (default: all 0)
#   -m  the output of copy RANK must match REGEX (extended grep), e.g. -m '0:PE 1: .*differs'
#   -e  set a variable for every copy
# Every copy is bounded by RUN_TIMEOUT seconds (default 60); a hang fails the test. Outputs are
# printed, by rank, when the test fails.
set -u
want="" matches=() envs=()
while :; do
    case ${1:-} in
    -s) want=$2; shift 2 ;;
    -m) matches+=("$2"); shift 2 ;;
    -e) envs+=("$2"); shift 2 ;;
    *) break ;;
    esac
done
npes=$1
shift
[ "${1:-}" = -- ] && shift
limit=${RUN_TIMEOUT:-60}

# A launcher running this test must not leak into the copies.
unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + ($$ * 7 + RANDOM) % 40000))
[ -z "$want" ] && want=$(for ((i = 0; i < npes; i++)); do printf '0 '; done)

pids=()
for ((i = 0; i < npes; i++)); do
    args=()
    for a in "$@"; do
        a=${a//\{rank\}/$i}
        a=${a//\{tmp\}/$tmp}
        a=${a//\{port\}/$port}
        args+=("$a")
    done
    env "${envs[@]}" timeout -k 5 "$limit" "${args[@]}" >"$tmp/out.$i" 2>&1 &
    pids+=($!)
done
got=""
for pid in "${pids[@]}"; do
    wait "$pid"
    got+="$? "
done

fail=0
if [ "$(echo $got)" != "$(echo $want)" ]; then
    echo "FAIL: exit statuses by rank: $got; wanted $want"
    fail=1
fi
for m in "${matches[@]}"; do
    r=${m%%:*} re=${m#*:}
    if ! grep -Eq -- "$re" "$tmp/out.$r"; then
        echo "FAIL: output of rank $r does not match: $re"
        fail=1
    fi
done
for ((i = 0; i < npes; i++)); do
    if [ $fail -ne 0 ] || [ -n "${VERBOSE:-}" ]; then
        echo "---- rank $i ----"
        cat "$tmp/out.$i"
    fi
done
[ $fail -eq 0 ] && echo "OK: $npes copies, statuses $got"
exit $fail
