#!/usr/bin/env bash
# run.sh [-e VAR=VALUE]... [-l] LAUNCHER NPES WANT REGEX -- PROGRAM [ARGS...]
#
# Runs PROGRAM as one job of NPES PEs started by a launcher other than shmemrun:
#   mpirun    Open MPI's /usr/bin/mpirun (--allow-run-as-root --oversubscribe); without it the
#             test is skipped: status 77, ctest's SKIP_RETURN_CODE.
#   pmi1      tests/launchers/pmi1_server.py: a PMI-1 server starting NPES copies with PMI_FD,
#             PMI_RANK and PMI_SIZE only, as MPICH's Hydra does (no job id: it comes through
#             the server's key-value space).
#   slurm, torchrun, hydra, ompi
#             NPES copies started here in the background with that launcher's variables set by
#             hand (hydra: SHMEM_JOB_ID too; hydra-no-id: without it), then waited for.
# Every run gets a fresh job id, so concurrent tests never meet. -e sets (or, with an empty
# value, unsets) a variable for every PE after the launcher's own, e.g. a smaller local size.
# -l (by hand) starts PE 0 last, a moment after the others, which must wait for its store.
#
# WANT  ok       the job succeeds, and as ONE job: SHMEM_VERSION=1 makes PE 0 print one version
#                line, where NPES separate 1-PE jobs would print NPES.
#       N        (mpirun, pmi1) the launcher exits with N;  nonzero: with any failure.
#       "S0 S1 ..."  (by hand) the exit status of every copy, in rank order (137 = SIGKILL);
#                nonzero: every copy fails.
# REGEX must match the combined output ("" matches anything).
# Every run is bounded by RUN_TIMEOUT seconds (default 30): a hang fails the test.
set -u
overrides=()
pe0_last=0
while :; do
    case ${1:-} in
    -e)
        overrides+=("$2")
        shift 2
        ;;
    -l)
        pe0_last=1
        shift
        ;;
    *) break ;;
    esac
done
launcher=$1 npes=$2 want=$3 regex=$4
shift 4
[ "${1:-}" = -- ] && shift
limit=${RUN_TIMEOUT:-30}

# Whatever launcher runs this test must not leak into the job.
unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE
export SHMEM_VERSION=1

out=$(mktemp)
trap 'rm -f "$out"' EXIT
job_id="test-$$-$(date +%s%N)"

env_of() { # env_of RANK: the launcher's variables for that copy, then the overrides
    local i=$1
    case $launcher in
    slurm) echo SLURM_PROCID="$i" SLURM_NTASKS="$npes" SLURM_LOCALID="$i" SLURM_NNODES=1 \
        SLURM_STEP_NUM_NODES=1 SLURM_JOB_ID="$job_id" SLURM_STEP_ID=0 ;;
    torchrun) echo RANK="$i" WORLD_SIZE="$npes" LOCAL_RANK="$i" LOCAL_WORLD_SIZE="$npes" \
        MASTER_ADDR=127.0.0.1 MASTER_PORT="$$" ;;
    hydra) echo PMI_RANK="$i" PMI_SIZE="$npes" MPI_LOCALRANKID="$i" MPI_LOCALNRANKS="$npes" \
        SHMEM_JOB_ID="$job_id" ;;
    hydra-no-id) echo PMI_RANK="$i" PMI_SIZE="$npes" MPI_LOCALRANKID="$i" \
        MPI_LOCALNRANKS="$npes" ;;
    ompi) echo OMPI_COMM_WORLD_RANK="$i" OMPI_COMM_WORLD_SIZE="$npes" \
        OMPI_COMM_WORLD_LOCAL_RANK="$i" OMPI_COMM_WORLD_LOCAL_SIZE="$npes" \
        OMPI_MCA_ess_base_jobid="$job_id" ;;
    *)
        echo "run.sh: unknown launcher '$launcher'" >&2
        exit 2
        ;;
    esac
}

statuses=()
if [ "$launcher" = pmi1 ]; then
    es=()
    for o in "${overrides[@]+"${overrides[@]}"}"; do es+=(-e "$o"); done
    timeout -k 5 "$limit" python3 "$(dirname "$0")/pmi1_server.py" --timeout "$limit" \
        -n "$npes" "${es[@]+"${es[@]}"}" -- "$@" >"$out" 2>&1
    statuses=($?)
elif [ "$launcher" = mpirun ]; then
    if [ ! -x /usr/bin/mpirun ]; then
        echo "SKIP: /usr/bin/mpirun not found (Debian: apt-get install openmpi-bin)"
        exit 77
    fi
    xs=()
    for o in "${overrides[@]+"${overrides[@]}"}"; do xs+=(-x "$o"); done
    timeout -k 5 "$limit" /usr/bin/mpirun --allow-run-as-root --oversubscribe -n "$npes" \
        "${xs[@]+"${xs[@]}"}" "$@" >"$out" 2>&1
    statuses=($?)
else
    env_of 0 >/dev/null || exit 2
    order=$(seq 0 $((npes - 1)))
    ((pe0_last)) && order="$(seq 1 $((npes - 1))) 0"
    pids=()
    for i in $order; do
        ((pe0_last && i == 0)) && sleep 1
        # shellcheck disable=SC2207 # one word per VAR=value
        vars=($(env_of "$i"))
        unsets=()
        for o in "${overrides[@]+"${overrides[@]}"}"; do
            if [ -z "${o#*=}" ]; then unsets+=(-u "${o%%=*}"); else vars+=("$o"); fi
        done
        timeout -k 5 "$limit" env "${unsets[@]+"${unsets[@]}"}" "${vars[@]}" "$@" >>"$out" 2>&1 &
        pids[i]=$!
    done
    for ((i = 0; i < npes; i++)); do
        wait "${pids[i]}"
        statuses+=($?)
    done
fi
cat "$out"
got="${statuses[*]}"
echo "run.sh: $launcher -n $npes: exit status $got"

fail() {
    echo "run.sh: FAILED: $*"
    exit 1
}
for s in "${statuses[@]}"; do
    # timeout's own statuses (124; 137 is also SIGKILL, which the cases expect by name).
    [ "$s" -eq 124 ] && fail "still running after $limit s (a hang)"
done
case $want in
ok)
    for s in "${statuses[@]}"; do [ "$s" -eq 0 ] || fail "wanted success, got $got"; done
    lines=$(grep -c 'shmem .* (OpenSHMEM 1\.5)' "$out")
    [ "$lines" -eq 1 ] ||
        fail "wanted one job of $npes PEs (one version line), got $lines version lines"
    ;;
nonzero)
    for s in "${statuses[@]}"; do [ "$s" -ne 0 ] || fail "wanted every run to fail, got $got"; done
    ;;
*) [ "$got" = "$want" ] || fail "wanted exit status $want, got $got" ;;
esac
if [ -n "$regex" ] && ! grep -Eq -- "$regex" "$out"; then
    fail "output does not match: $regex"
fi
echo "run.sh: passed"
