#!/usr/bin/env bash
# fault_case.sh SHMEMRUN PROGRAM CASE NPES STATUS REGEX [kill-launcher]
# Runs `SHMEMRUN -n NPES --timeout 30 PROGRAM CASE` (SHMEM_FAULT_TIMEOUT overrides the 30) and passes only if the job ends with STATUS
# and its output matches REGEX, and afterwards no PE process is left (each PE records its pid).
# SHMEM_FAULT_LAUNCHER_ARGS adds launcher options (e.g. --store tcp://127.0.0.1:0).
# A hang ends as the launcher's timeout (124), which fails any case expecting another status.
# With "kill-launcher", the launcher itself is killed with SIGKILL once every PE has started,
# and the test checks that every PE dies with it. "kill-launcher-wrapped" does the same with
# every PE started through a wrapper script that does not exec it (so the launcher's children
# are the shells, not the PEs), for cases whose PEs also fork a child each (pid files
# <name>.child.pid): PEs and children must all end within seconds.
set -u
shmemrun=$1 program=$2 case=$3 npes=$4 want=$5 regex=$6 mode=${7:-}
read -r -a launcher_args <<<"${SHMEM_FAULT_LAUNCHER_ARGS:-}"
here=$(cd "$(dirname "$0")" && pwd)
piddir=$(mktemp -d)
trap 'rm -rf "$piddir"' EXIT
export SHMEM_TEST_PID_DIR=$piddir

survivors() {
    local left=""
    for f in "$piddir"/*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        # A zombie is already dead; only a live process counts, and only if it is still ours:
        # pids are reused quickly (pid_max may be 32768), so check it carries this test's
        # SHMEM_TEST_PID_DIR.
        if [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null &&
            tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SHMEM_TEST_PID_DIR=$piddir"; then
            left="$left $pid"
        fi
    done
    echo "$left"
}

if [ "$mode" = kill-launcher ] || [ "$mode" = kill-launcher-wrapped ]; then
    run=("$program")
    expect=$npes
    if [ "$mode" = kill-launcher-wrapped ]; then
        wrapdir=$(mktemp -d)
        trap 'rm -rf "$piddir" "$wrapdir"' EXIT
        # A command after the program keeps the shell from replacing itself with it.
        printf '#!/bin/sh\n"$@"\nstatus=$?\necho "wrapper: program ended with $status"\nexit $status\n' \
            >"$wrapdir/wrap.sh"
        chmod +x "$wrapdir/wrap.sh"
        run=("$wrapdir/wrap.sh" "$program")
        expect=$((2 * npes))
    fi
    "$shmemrun" "${launcher_args[@]+"${launcher_args[@]}"}" -n "$npes" --timeout 60 "${run[@]}" "$case" &
    launcher=$!
    for _ in $(seq 300); do
        [ "$(ls "$piddir" | wc -l)" -ge "$expect" ] && break
        sleep 0.1
    done
    [ "$(ls "$piddir" | wc -l)" -ge "$expect" ] || { echo "fault_case: PEs did not start"; exit 1; }
    kill -9 "$launcher"
    wait "$launcher" 2>/dev/null
    status=0
else
    "$here/expect_failure.sh" "$want" "$regex" -- "$shmemrun" \
        "${launcher_args[@]+"${launcher_args[@]}"}" -n "$npes" \
        --timeout "${SHMEM_FAULT_TIMEOUT:-30}" \
        "$program" "$case"
    status=$?
fi

# PDEATHSIG and the launcher's stop sequence act at once; allow the kernel a moment.
for _ in $(seq 50); do
    [ -z "$(survivors)" ] && break
    sleep 0.1
done
left=$(survivors)
if [ -n "$left" ]; then
    echo "fault_case: PE processes still alive after the job ended:$left"
    kill -9 $left 2>/dev/null
    exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
echo "fault_case: no PE left behind"
