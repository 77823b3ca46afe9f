#!/usr/bin/env bash
# multihost.sh CASE SHMEMRUN PROGRAM [ARGS...]
#
# Two "hosts" on this machine: node A is this network namespace, node B a new one, joined by a
# veth pair (10.x.y.1 on A, 10.x.y.2 on B; both ends named alike, so UCX_NET_DEVICES holds on
# both nodes). A node is (boot id, network namespace), so PEs there are on two nodes as far as
# the library can tell, and no abstract socket crosses them: PEs of the other node are reached
# through UCX over the veth (UCX_TLS=tcp unless set).
# CASE:
#   split-shmemrun  `shmemrun --store tcp://A:0 -n 4` (TLS 1.3 with the job's CA); PEs 2 and 3
#                   enter node B (`ip netns exec`). The store, its TLS and the allgather of node
#                   identities work across the veth, each node exchanges its descriptors in its
#                   own descriptor store, and the job runs and passes.
#   split-pmi1      4 PEs started by a PMI-1 server (tests/launchers/pmi1_server.py) with 2 per
#                   node and no store address: PE 0 gives its store's address, certificate
#                   fingerprint and secret through the launcher's key-value service (TLS pinned
#                   to that certificate); the job passes.
#   split-slurm     4 PEs started here with Slurm's variables (2 nodes), PE 0 serving the store
#                   at A's address (SHMEM_BOOTSTRAP_ADDR, plain TCP): every PE passes.
#   inside-b        4 PEs all on node B, PE 0 serving the store at B's veth address: the job runs
#                   and passes (one node, reached over a non-loopback address in a namespace).
# Needs root and iproute2 (`ip netns`); otherwise skipped: status 77, ctest's SKIP_RETURN_CODE.
# Everything made here (namespace, veth, processes) is removed on exit, whatever happens.
set -u
if [ "${1:-}" = --pe ]; then
    # Per-PE wrapper under a launcher: PEs 2 and 3 (by the launcher's rank variable) run on B.
    ns=$2 rank_var=$3
    shift 3
    if [ "${!rank_var:-0}" -ge 2 ]; then exec ip netns exec "$ns" "$@"; fi
    exec "$@"
fi
case=$1 shmemrun=$2
shift 2
limit=${RUN_TIMEOUT:-60}
self=$(realpath "$0")

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2's ip (network namespaces)"
    exit 77
fi
ns="shmem-mh-$$"
va="shmva$$"
vb="shmvb$$"
# A /30 of 10.0.0.0/8 picked from the pid: the ctest RESOURCE_LOCK keeps these tests apart.
third=$((200 + $$ % 50))
fourth=$(((($$ / 50) % 64) * 4))
a_ip="10.$third.$fourth.1"
b_ip="10.$third.$fourth.2"
out=$(mktemp)
pids=()
cleanup() {
    for p in "${pids[@]+"${pids[@]}"}"; do kill -9 "$p" 2>/dev/null; done
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip link del "$va" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -f "$out"
}
trap cleanup EXIT
if ! ip netns add "$ns" 2>/dev/null; then
    echo "SKIP: cannot create a network namespace here (ip netns add: no CAP_SYS_ADMIN?)"
    exit 77
fi
set -e
ip link add "$va" type veth peer name "$vb"
ip link set "$vb" netns "$ns"
ip addr add "$a_ip/30" dev "$va"
ip link set "$va" up
ip -n "$ns" link set "$vb" name "$va"
ip -n "$ns" addr add "$b_ip/30" dev "$va"
ip -n "$ns" link set "$va" up
ip -n "$ns" link set lo up
set +e
ino_a=$(stat -L -c %i /proc/self/ns/net)
ino_b=$(ip netns exec "$ns" stat -L -c %i /proc/self/ns/net)
echo "multihost.sh: node A = this namespace ($ino_a, $a_ip), node B = $ns ($ino_b, $b_ip)"

unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_RUN_STORE SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE SHMEM_BOOTSTRAP_ADDR
# Where the PEs run, for the program's own checks (shmem_ptr is NULL for the other node's PEs).
[ "$case" = inside-b ] || export MULTINODE_LAYOUT=2,2
export SHMEM_VERSION=1 UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$va}

fail() {
    cat "$out"
    echo "multihost.sh: FAILED: $*"
    exit 1
}

# by_hand NODE_OF_PE... -- ADDR: 4 PEs with Slurm's variables; NODE_OF_PE is a or b per PE.
statuses=()
by_hand() {
    local nodes=() i=0 addr
    while [ "$1" != -- ]; do
        nodes+=("$1")
        shift
    done
    addr=$2
    shift 2
    local n=${#nodes[@]} n_nodes=1
    [[ " ${nodes[*]} " == *" a "* && " ${nodes[*]} " == *" b "* ]] && n_nodes=2
    for ((i = 0; i < n; i++)); do
        local wrap=()
        [ "${nodes[i]}" = b ] && wrap=(ip netns exec "$ns")
        timeout -k 5 "$limit" "${wrap[@]+"${wrap[@]}"}" env SLURM_PROCID="$i" SLURM_NTASKS="$n" \
            SLURM_LOCALID="$i" SLURM_NNODES="$n_nodes" SLURM_STEP_NUM_NODES="$n_nodes" \
            SLURM_JOB_ID="mh-$$" SLURM_STEP_ID=0 SHMEM_BOOTSTRAP_ADDR="$addr" \
            SHMEM_TLS_DISABLE=1 "$@" >>"$out" 2>&1 &
        pids[i]=$!
    done
    for ((i = 0; i < n; i++)); do
        wait "${pids[i]}"
        statuses+=($?)
    done
    pids=()
}

# one_job: the output holds exactly one job's version line (PE 0's).
one_job() {
    local lines
    lines=$(grep -c 'shmem .* (OpenSHMEM 1\.5)' "$out")
    [ "$lines" -eq 1 ] || fail "wanted one job of 4 PEs (one version line), got $lines"
}

case $case in
split-shmemrun)
    timeout -k 5 "$limit" "$shmemrun" --store "tcp://$a_ip:0" -n 4 --timeout "$limit" \
        "$self" --pe "$ns" SHMEM_RUN_RANK "$@" >"$out" 2>&1
    status=$?
    [ "$status" -eq 0 ] || fail "wanted the job across two nodes to pass, got $status"
    one_job
    ;;
split-pmi1)
    # No store address: PE 0 serves the store at the root side of the veth and gives its
    # address, certificate fingerprint and secret to the others through the PMI-1 service.
    timeout -k 5 "$limit" python3 "$(dirname "$self")/pmi1_server.py" --timeout "$limit" \
        -e MPI_LOCALNRANKS=2 -e SHMEM_UID_SOCK_IFNAME="$va" -n 4 -- \
        "$self" --pe "$ns" PMI_RANK "$@" >"$out" 2>&1
    status=$?
    [ "$status" -eq 0 ] || fail "wanted the job across two nodes to pass, got $status"
    one_job
    ;;
split-slurm)
    by_hand a a b b -- "tcp://$a_ip:$((40000 + $$ % 20000))" "$@"
    [ "${statuses[*]}" = "0 0 0 0" ] || fail "wanted exit status 0 0 0 0, got ${statuses[*]}"
    one_job
    ;;
inside-b)
    by_hand b b b b -- "tcp://$b_ip:$((40000 + $$ % 20000))" "$@"
    [ "${statuses[*]}" = "0 0 0 0" ] || fail "wanted success, got ${statuses[*]}"
    one_job
    ;;
*)
    echo "multihost.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
cat "$out"
echo "multihost.sh: $case passed"
