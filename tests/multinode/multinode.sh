#!/usr/bin/env bash
# multinode.sh CASE START LAYOUT SHMEMRUN PROGRAM...
#
# A job spread over several "nodes" on this machine: each node is a network namespace of its
# own, and the namespaces are joined by a bridge (veth pairs, 10.x.y.0/24 picked from the pid:
# the bridge is .1, node k is .(10+k)). A node is (boot id, network namespace), so the library
# sees as many nodes as namespaces: PEs of one node map each other's memory, PEs of other nodes
# are reached through UCX over the veths. Inside every namespace the veth is named `shmem0`,
# so UCX_NET_DEVICES=shmem0 holds on every node; UCX_TLS is tcp unless the caller sets it.
#
# START: how the PEs are started
#   shmemrun   `shmemrun --store tcp://<bridge>:0` (TLS 1.3 with the job's CA); each PE enters
#              its node's namespace (`ip netns exec`)
#   slurm      Slurm's variables by hand, PE 0 serving the store at its node's address
#              (SHMEM_BOOTSTRAP_ADDR, plain TCP)
#   pmi1       tests/launchers/pmi1_server.py with no store address: PE 0 gives its store's
#              address, certificate fingerprint and secret through the PMI-1 key-value service
# LAYOUT: PEs per node, e.g. 2,2 (PEs 0-1 on node 0, 2-3 on node 1) or 2,2,1; PEs in blocks.
# CASE:
#   run        runs each PROGRAM as one job; every PE must exit 0
#   kill       PROGRAM is tests/launchers/launch_fault: the last PE (on the last node) kills
#              itself after init while the others wait in a barrier; every PE on every node
#              must end, with a message naming that PE (the launcher's, PE 0's as the store's
#              host, or that of a PE whose transfer to it failed first)
#   kill-put   PROGRAM is tests/launchers/launch_fault: every PE puts to every PE in a loop
#              and the last PE (on the last node) kills itself mid loop; $RUNS jobs (default 3).
#              In each, every other PE must end with status 1 (shmemrun: the launcher's 137),
#              one line must name the dead PE and no line another PE as the cause, and nothing
#              may come from UCX itself (its ERROR lines, a fatal error, a backtrace, SIGABRT)
#   cut        PROGRAM is tests/launchers/launch_fault: once every PE waits (in a barrier, the
#              last PE in shmem_wait_until), the last node's link goes down (`ip link set
#              shmem0 down` in its namespace). Every process on every node must end, with a
#              nonzero status and before the harness stops it, within
#              SHMEM_HEARTBEAT_TIMEOUT + $CUT_MARGIN s (default 6) of the cut, and a line must
#              name that node and its PEs as unreachable
#   cut-store  as cut, node 0 cut off: PE 0's node, whose PE 0 serves the store under Slurm's
#              variables and PMI-1; the PEs of the other nodes must say they lost that store
#   compute    PROGRAM is tests/launchers/launch_fault: the last PE computes for 3 times
#              SHMEM_HEARTBEAT_TIMEOUT without calling the library while the others wait in a
#              barrier; every PE must exit 0 (a PE busy that long is not taken for dead)
#   no-ucx     UCX cannot be loaded (libucp.so.0 hidden by a bind mount of /dev/null in a
#              mount namespace of this run): every PE ends, and a message names libucx0
# Needs root and iproute2 (`ip netns`); otherwise skipped: status 77, ctest's SKIP_RETURN_CODE.
# Everything made here (namespaces, bridge, veths, processes) is removed on exit, whatever
# happens; afterwards no process of the job may be left in any of the namespaces, and a run that
# passed checks that its namespaces and bridge are gone.
set -u
if [ "${1:-}" = --pe ]; then
    # Per-PE wrapper under a launcher: the launcher's rank variable picks the PE's node.
    nslist=$2 layout=$3 rank_var=$4
    shift 4
    rank=${!rank_var:-0}
    IFS=, read -r -a sizes <<<"$layout"
    IFS=, read -r -a spaces <<<"$nslist"
    k=0 first=0
    while [ $((first + sizes[k])) -le "$rank" ]; do
        first=$((first + sizes[k]))
        k=$((k + 1))
    done
    exec ip netns exec "${spaces[k]}" "$@"
fi
case=$1 start=$2 layout=$3 shmemrun=$4
shift 4
limit=${RUN_TIMEOUT:-90}
self=$(realpath "$0")
here=$(dirname "$self")

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2's ip (network namespaces)"
    exit 77
fi
IFS=, read -r -a sizes <<<"$layout"
n_nodes=${#sizes[@]}
n=0
for s in "${sizes[@]}"; do n=$((n + s)); done
node_of=()
for ((k = 0; k < n_nodes; k++)); do
    for ((j = 0; j < sizes[k]; j++)); do node_of+=("$k"); done
done

br="shmbr$$"
spaces=()
for ((k = 0; k < n_nodes; k++)); do spaces+=("shmem-mn-$$-$k"); done
# A /24 of 10.0.0.0/8 picked from the pid: the ctest RESOURCE_LOCK keeps these tests apart.
net="10.$((150 + $$ % 50)).$((($$ / 50) % 256))"
out=$(mktemp)
pids=()
cleanup() {
    for p in "${pids[@]+"${pids[@]}"}"; do kill -9 "$p" 2>/dev/null; done
    for ns in "${spaces[@]}"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    for ((k = 0; k < n_nodes; k++)); do ip link del "shmn$$-$k" 2>/dev/null; done
    ip link del "$br" 2>/dev/null
    rm -f "$out"
}
trap cleanup EXIT
fail() {
    cat "$out"
    echo "multinode.sh: FAILED: $*"
    exit 1
}
if ! ip netns add "${spaces[0]}" 2>/dev/null; then
    echo "SKIP: cannot create a network namespace here (ip netns add: no CAP_SYS_ADMIN?)"
    exit 77
fi
set -e
ip link add "$br" type bridge
ip addr add "$net.1/24" dev "$br"
ip link set "$br" up
for ((k = 0; k < n_nodes; k++)); do
    ns=${spaces[k]}
    [ "$k" -eq 0 ] || ip netns add "$ns"
    ip link add "shmn$$-$k" type veth peer name "shmp$$-$k"
    ip link set "shmn$$-$k" master "$br" up
    ip link set "shmp$$-$k" netns "$ns"
    ip -n "$ns" link set "shmp$$-$k" name shmem0
    ip -n "$ns" addr add "$net.$((10 + k))/24" dev shmem0
    ip -n "$ns" link set shmem0 up
    ip -n "$ns" link set lo up
done
set +e
for ((k = 0; k < n_nodes; k++)); do
    ino=$(ip netns exec "${spaces[k]}" stat -L -c %i /proc/self/ns/net)
    echo "multinode.sh: node $k = ${spaces[k]} ($ino, $net.$((10 + k)), ${sizes[k]} PEs)"
done
unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_RUN_STORE SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE SHMEM_BOOTSTRAP_ADDR \
    SHMEM_TEST_LOOPBACK SHMEM_TEST_UCX
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}
# Where the PEs run, for the tests' own checks (SHMEM_TEAM_SHARED, shmem_ptr): tests/unit's
# test_util.h reads it; the library never does.
export MULTINODE_LAYOUT=$layout
nslist=$(
    IFS=,
    echo "${spaces[*]}"
)
hide_ucx=()
if [ "$case" = no-ucx ]; then
    ucp=$(realpath /usr/lib/x86_64-linux-gnu/libucp.so.0 2>/dev/null)
    [ -n "$ucp" ] || {
        echo "SKIP: UCX (libucp.so.0) is not installed here, nothing to hide"
        exit 77
    }
    hide_ucx=(unshare -m sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$ucp")
fi

# job PROGRAM [ARGS...]: one job of n PEs started as START says; sets `statuses` (one exit
# status per PE, or the launcher's alone) and appends the output to $out.
statuses=()
job() {
    statuses=()
    case $start in
    shmemrun)
        timeout -k 5 "$limit" "${hide_ucx[@]+"${hide_ucx[@]}"}" "$shmemrun" \
            --store "tcp://$net.1:0" -n "$n" --timeout "$limit" \
            "$self" --pe "$nslist" "$layout" SHMEM_RUN_RANK "$@" >>"$out" 2>&1
        statuses=($?)
        ;;
    pmi1)
        timeout -k 5 "$limit" "${hide_ucx[@]+"${hide_ucx[@]}"}" \
            python3 "$here/../launchers/pmi1_server.py" --timeout "$limit" \
            -e MPI_LOCALNRANKS="${sizes[0]}" -e SHMEM_UID_SOCK_IFNAME=shmem0 -n "$n" -- \
            "$self" --pe "$nslist" "$layout" PMI_RANK "$@" >>"$out" 2>&1
        statuses=($?)
        ;;
    slurm)
        local i k local_id=0 prev=0
        for ((i = 0; i < n; i++)); do
            k=${node_of[i]}
            [ "$k" -eq "$prev" ] || local_id=0
            prev=$k
            timeout -k 5 "$limit" "${hide_ucx[@]+"${hide_ucx[@]}"}" \
                ip netns exec "${spaces[k]}" env SLURM_PROCID="$i" SLURM_NTASKS="$n" \
                SLURM_LOCALID="$local_id" SLURM_NNODES="$n_nodes" \
                SLURM_STEP_NUM_NODES="$n_nodes" SLURM_JOB_ID="mn-$$" SLURM_STEP_ID=0 \
                SHMEM_BOOTSTRAP_ADDR="tcp://$net.10:$((40000 + $$ % 20000))" \
                SHMEM_TLS_DISABLE=1 "$@" >>"$out" 2>&1 &
            pids[i]=$!
            local_id=$((local_id + 1))
        done
        for ((i = 0; i < n; i++)); do
            wait "${pids[i]}"
            statuses+=($?)
        done
        pids=()
        ;;
    *)
        echo "multinode.sh: unknown start '$start'" >&2
        exit 2
        ;;
    esac
}

# Nothing of the job may outlive it, on any node.
left_behind() {
    local ns
    for ns in "${spaces[@]}"; do
        [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || fail "processes left in $ns after the job"
    done
}

all() {
    local want=$1 s
    for s in "${statuses[@]}"; do [ "$s" = "$want" ] || return 1; done
}

# names_lost PE: how a PE says that PE is gone: PE 0 (the store's host) saw its connection
# close, or a PE whose transfer to it failed stopped the job first, naming it.
names_lost() {
    echo "PE $1 exited without shmem_finalize or died; ending the job|transport ucx: [a-z_ ]+: lost the connection to PE $1 "
}

case $case in
run)
    for prog in "$@"; do
        echo "multinode.sh: $start, $layout: $prog" >>"$out"
        began=$(date +%s%N)
        job "$prog"
        all 0 || fail "$(basename "$prog"): wanted every PE to pass, got ${statuses[*]}"
        echo "multinode.sh: $(basename "$prog") passed in $((($(date +%s%N) - began) / 1000000)) ms" >>"$out"
        left_behind
    done
    ;;
kill)
    last=$((n - 1))
    job "$1" kill_last
    case $start in
    shmemrun)
        # 137 when shmemrun sees the kill first; 1 when a PE whose transfer to the killed one
        # failed stopped the job first.
        [ "${statuses[0]}" -eq 137 ] || [ "${statuses[0]}" -eq 1 ] ||
            fail "wanted shmemrun's status 137 or 1, got ${statuses[0]}"
        grep -Eq "shmemrun: PE $last \(pid [0-9]+\) was killed by signal 9|$(names_lost "$last")" \
            "$out" || fail "nothing names PE $last"
        ;;
    pmi1)
        # The launcher reports the first copy to end: the killed one, or one PE 0 ended.
        [ "${statuses[0]}" -ne 0 ] || fail "wanted the job to fail, got ${statuses[0]}"
        grep -Eq "$(names_lost "$last")" "$out" || fail "no PE names PE $last"
        ;;
    slurm)
        [ "${statuses[last]}" -eq 137 ] || fail "wanted PE $last killed (137), got ${statuses[*]}"
        for s in "${statuses[@]}"; do
            [ "$s" -ne 0 ] || fail "a PE finished as if nothing happened: ${statuses[*]}"
        done
        grep -Eq "$(names_lost "$last")" "$out" || fail "no PE names PE $last"
        ;;
    esac
    left_behind
    ;;
kill-put)
    last=$((n - 1))
    for ((run = 1; run <= ${RUNS:-3}; run++)); do
        before=$(wc -l <"$out")
        echo "multinode.sh: $start, $layout: run $run" >>"$out"
        job "$1" put_loop_kill_last
        this=$(tail -n +"$((before + 1))" "$out")
        case $start in
        shmemrun)
            [ "${statuses[0]}" -eq 137 ] || fail "run $run: wanted shmemrun's 137, got ${statuses[0]}"
            lost="shmemrun: PE $last \(pid [0-9]+\) was killed by signal 9"
            ;;
        *)
            for ((i = 0; i < n; i++)); do
                want=1
                [ "$i" -ne "$last" ] || want=137
                [ "${statuses[i]}" -eq "$want" ] ||
                    fail "run $run: wanted PE $i to end with $want, got ${statuses[*]}"
            done
            lost="PE $last exited without shmem_finalize or died; ending the job"
            ;;
        esac
        [ "$(grep -Ec "$lost" <<<"$this")" -eq 1 ] || fail "run $run: not one line naming PE $last"
        ! grep -Eq "stopped the job|signal 6|status 134|transport ucx:" <<<"$this" ||
            fail "run $run: a line blames another PE or a transfer, not PE $last's death"
        ! grep -Eq "UCX +(ERROR|WARN)|Fatal|[Bb]acktrace|ucp_request|put to PE $last: put to PE" \
            <<<"$this" || fail "run $run: UCX printed its own lines"
        left_behind
    done
    ;;
cut | cut-store)
    bound=${SHMEM_HEARTBEAT_TIMEOUT:-15}
    cut_node=$((n_nodes - 1))
    [ "$case" = cut ] || cut_node=0
    cut_pes=()
    for ((i = 0; i < n; i++)); do
        [ "${node_of[i]}" -ne "$cut_node" ] || cut_pes+=("$i")
    done
    shm_before=$(ls /dev/shm)
    (
        job "$1" wait_cut
        echo "${statuses[*]}" >"$out.status"
    ) &
    runner=$!
    for ((i = 0; i < limit * 10; i++)); do
        grep -q "every PE waits in a barrier or shmem_wait_until" "$out" && break
        kill -0 "$runner" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "every PE waits in a barrier or shmem_wait_until" "$out" ||
        fail "the job did not get to its barrier"
    cut_at=$(date +%s%N)
    ip -n "${spaces[cut_node]}" link set shmem0 down
    echo "multinode.sh: cut node $cut_node off (PEs ${cut_pes[*]})" >>"$out"
    wait "$runner"
    took=$((($(date +%s%N) - cut_at) / 1000000))
    statuses=($(cat "$out.status"))
    rm -f "$out.status"
    echo "multinode.sh: every process ended $took ms after the cut: ${statuses[*]}" >>"$out"
    for s in "${statuses[@]}"; do
        [ "$s" -ne 0 ] || fail "a process finished as if nothing happened: ${statuses[*]}"
        [ "$s" -ne 124 ] && [ "$s" -ne 137 ] || fail "the job ran until the harness killed it"
    done
    [ "$took" -le $(((bound + ${CUT_MARGIN:-6}) * 1000)) ] ||
        fail "the job ended $took ms after the cut: over ${bound} s + ${CUT_MARGIN:-6} s"
    pes="PEs? $(
        IFS=,
        echo "${cut_pes[*]}" | sed 's/,/, /g'
    )"
    if [ "$cut_node" -eq 0 ] && [ "$start" != shmemrun ]; then
        # PE 0's store is on the node cut off: the others lost it.
        grep -Eq "lost the others: PE 0's store at [^ ]+ \(on node 0, " "$out" ||
            fail "no PE says it lost PE 0's store on node 0"
    else
        grep -Eq "node $cut_node, [^;]* is unreachable: its $pes " "$out" ||
            fail "no line names node $cut_node and its $pes as unreachable"
    fi
    left_behind
    [ "$(ls /dev/shm)" = "$shm_before" ] || fail "the job left files in /dev/shm"
    ;;
compute)
    bound=${SHMEM_HEARTBEAT_TIMEOUT:-15}
    job "$1" compute_last $((3 * bound))
    all 0 || fail "wanted every PE to pass while PE $((n - 1)) computed, got ${statuses[*]}"
    grep -q "computed for $((3 * bound)) s; the job went on" "$out" || fail "the job did not finish"
    left_behind
    ;;
no-ucx)
    job "$1"
    for s in "${statuses[@]}"; do
        [ "$s" -ne 0 ] && [ "$s" -ne 124 ] || fail "wanted every PE to fail at init, got ${statuses[*]}"
    done
    grep -q "libucx0" "$out" || fail "no message names the package libucx0"
    left_behind
    ;;
*)
    echo "multinode.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
cat "$out"
# What this run made must be gone once it has removed it.
cleanup
trap - EXIT
left=$(ip netns list | grep -E "^shmem-mn-$$-[0-9]+" || true)
[ -z "$left" ] || {
    echo "multinode.sh: FAILED: namespaces left behind: $left"
    exit 1
}
! ip link show "$br" >/dev/null 2>&1 || {
    echo "multinode.sh: FAILED: bridge $br left behind"
    exit 1
}
echo "multinode.sh: $case ($start, $layout) passed"
