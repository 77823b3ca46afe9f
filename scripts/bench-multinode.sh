#!/usr/bin/env bash
# scripts/bench-multinode.sh: the benchmarks across nodes. "Nodes" are network namespaces on
# this machine (shmem-mn<pid>-n1..n3), each with one interface named mn0 on a bridge in this
# namespace (10.x.y.1..3/24; the bridge holds 10.x.y.254, where the launchers listen). In the
# same run and the same namespaces, alternating over rounds, it measures (bench/multinode.sweep):
#   perftest  ucx_perftest (Debian ucx-utils): server on node 2, client on node 1, over the
#             bridge: UCP put latency, get, fetch-add and put bandwidth, the transport's floor
#   oshmem    the bench/*.c programs built with /usr/bin/oshcc under Open MPI's oshrun
#             (--mca spml ucx): oshrun here, one orted per node started by an rsh agent that
#             runs `ip netns exec <node> sh -c ...` (the hostfile's names are the namespaces)
#   ours      the same programs built with this tree's oshcc, under
#             `shmemrun --store tcp://<bridge address>:0 -n N`; each PE enters its node's
#             namespace through this script's --pe wrapper
#   mf        bench/mf_bm_copy.c (memfabric_hybrid's smem_bm_copy over libmf_smem.so): one
#             process per rank started in its node's namespace (`--rank R --world N`), rank 0
#             hosting the store at its node's address, rank r pinned to CPU (r mod online
#             CPUs) as ucx_perftest's sides are; ucx_perftest's put_bw (H2G, G2G) and get
#             bandwidth (G2H) are its floor, measured size by size right beside it: for each
#             of the line's --sizes, an mf run at that size and ucx_perftest put_bw and get at
#             it, back to back (mf first in odd rounds, ucx_perftest first in even ones), so
#             both see the same state of the machine (records of bench "perftest-mf"); each
#             twice: as shipped, and with data in its buffers (bench/ucx_fill.c preloaded:
#             ucx_perftest never writes them, so it sends from the kernel's zero page; bench
#             "perftest-mf-data"), the floor the target is decided on, which runs next to mf
# then writes bench/results/<date>-<host>-multinode/ (raw JSON lines, table.md) and the
# "Across nodes (UCX)" section of docs/performance.md (bench/report_multinode.py).
#
# Usage: scripts/bench-multinode.sh [options]
#   (no option)       the "full" lines, 5 rounds
#   --quick           the "quick" lines, 2 rounds
#   --smoke           the "smoke" lines, 1 round, a few calls each; renders the table to a
#                     temporary folder and checks that every row is there (the bench.multinode
#                     ctest). With --bin-dir DIR (our prebuilt programs) and --shmemrun PATH.
#   --rounds N        rounds (each runs every sweep line once per variant)
#   --out DIR         result folder (default bench/results/<date>-<host>-multinode[-quick])
#   --prefix DIR      our library's install tree (default ./install)
#   --no-lib-build    do not rebuild/install the library first
#   --ucx-tls LIST    UCX_TLS for every side (default tcp,self: see below)
#   --variants LIST   only these of ours,oshmem,perftest,mf
#   --sweep FILE      another sweep file (default bench/multinode.sweep)
#   --no-docs         leave docs/performance.md alone
#   -h, --help        this text
# RUN_TIMEOUT=S in the environment: seconds one run may take (default 300, --smoke 30); a run
# that times out is tried up to twice more (the log says so).
#
# UCX_TLS: the namespaces share one kernel, one /dev/shm and one boot id, so UCX would pick
# its shared-memory transports between them and the figures would not be a network path. Every
# side gets the same UCX_TLS (default tcp,self) and UCX_NET_DEVICES=mn0, the node's bridge port.
# --ucx-tls sm,self,tcp shows the other case (the report names the UCX_TLS it ran with).
# UCX settings of the library: where the environment does not set them, our library applies
# UCX_TCP_TX_SEG_SIZE=256k and UCX_TCP_RX_SEG_SIZE=256k (UCX_DEFAULTS in
# rust/core/src/transport/ucx/mod.rs); ucx_perftest runs with the same values in its environment
# (the environment's own where set), so its figures are UCX's over the same settings, and the
# report says so. oshrun's OSHMEM keeps UCX's defaults: it is compared as its users run it.
# Pinning: each PE pins itself to CPU (PE mod online CPUs) after shmem_init (bench/common.h)
# under both launchers (oshrun gets --bind-to none so it does not pin first); ucx_perftest's
# client runs on CPU 0 and its server on CPU 1 (-c), the CPUs PEs 0 and 1 take.
# Alternation: inside a round every sweep line runs once per variant back to back, ours first in
# odd rounds and the others first in even ones.
# Needs root and iproute2 (network namespaces); otherwise exits with 77 (ctest's skip). A
# variant whose tools are missing (ucx_perftest, oshrun/oshcc) is installed first (Debian's
# ucx-utils, openmpi-bin and libopenmpi-dev; matplotlib from PyPI for the plots), except under
# --smoke, and otherwise left out with a note.
# Everything made here (namespaces, bridge, veths, processes in the namespaces, temporary
# files) is removed on exit, whatever happens. Every run has a time limit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
SELF=$ROOT/scripts/bench-multinode.sh
OSH_CC=/usr/bin/oshcc
OSH_RUN=/usr/bin/oshrun
PERFTEST=$(command -v ucx_perftest || true)
NS_IF=mn0 # the interface every node has, on the bridge

if [[ ${1:-} == --pe ]]; then
    # Per-PE wrapper under shmemrun: --pe PREFIX PPN PROGRAM ARGS... runs the PE in namespace
    # PREFIX<node>, node = rank / PPN + 1.
    prefix=$2 ppn=$3
    shift 3
    exec ip netns exec "$prefix$((${SHMEM_RUN_RANK:?not under shmemrun} / ppn + 1))" "$@"
fi

mode=full
rounds=
out=
prefix=$ROOT/install
lib_build=1
ucx_tls=tcp,self
variants_opt=ours,oshmem,perftest,mf
with_docs=1
sweep=$BENCH/multinode.sweep
bin_dir=
smoke_shmemrun=
cmdline="scripts/bench-multinode.sh${*:+ $*}"

# die, usage, log
source "$ROOT/scripts/lib/bench.sh"

while (($#)); do
    case $1 in
        --quick) mode=quick ;;
        --smoke) mode=smoke ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift ;;
        --out) out=$(realpath -m -- "${2:?--out needs a folder}"); shift ;;
        --prefix) prefix=$(realpath -m -- "${2:?--prefix needs a folder}"); shift ;;
        --no-lib-build) lib_build=0 ;;
        --ucx-tls) ucx_tls=${2:?--ucx-tls needs a list}; shift ;;
        --variants) variants_opt=${2:?--variants needs a list}; shift ;;
        --sweep) sweep=$(realpath -- "${2:?--sweep needs a file}"); shift ;;
        --no-docs) with_docs=0 ;;
        --bin-dir) bin_dir=$(realpath -m -- "${2:?}"); shift ;;
        --shmemrun) smoke_shmemrun=$(realpath -m -- "${2:?}"); shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done
case $mode in
    full) rounds=${rounds:-5} ;;
    quick) rounds=${rounds:-2} ;;
    smoke) rounds=1 with_docs=0 lib_build=0 ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, got '$rounds'"
IFS=, read -r -a VARIANTS <<<"$variants_opt"
for v in "${VARIANTS[@]}"; do
    [[ $v == ours || $v == oshmem || $v == perftest || $v == mf ]] ||
        die "--variants: '$v' is none of ours, oshmem, perftest, mf"
done
want() { [[ " ${VARIANTS[*]} " == *" $1 "* ]]; }

if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2's ip (network namespaces)"
    exit 77
fi
# Tools of the other sides: installed for a measuring run (Debian packages, as
# scripts/bench.sh does; matplotlib for the plots); in a --smoke run, or where they cannot be
# installed, their variant is left out with a note.
if [[ $mode != smoke ]]; then
    packages=()
    want perftest && packages+=(ucx-utils)
    want oshmem && packages+=(openmpi-bin libopenmpi-dev)
    if ((${#packages[@]})) && ! (install_packages "${packages[@]}"); then
        echo "note: could not install ${packages[*]}"
    fi
    ensure_matplotlib || echo "note: no matplotlib: the report has no plot"
    PERFTEST=$(command -v ucx_perftest || true)
fi
notes=()
drop() { # $1 variant, $2 why
    mapfile -t VARIANTS < <(printf '%s\n' "${VARIANTS[@]}" | grep -vx "$1")
    notes+=("$1 left out: $2")
    echo "note: $1 left out: $2"
}
if want perftest && [[ -z $PERFTEST ]]; then drop perftest "no ucx_perftest (Debian: apt-get install ucx-utils)"; fi
if want oshmem && ! [[ -x $OSH_CC && -x $OSH_RUN ]]; then
    drop oshmem "no $OSH_CC/$OSH_RUN (Debian: apt-get install openmpi-bin libopenmpi-dev)"
fi
((${#VARIANTS[@]})) || die "no variant left to run"

# --- the library and the programs ----------------------------------------------------------------

if [[ $mode == smoke ]]; then
    want ours && { [[ -n $bin_dir && -n $smoke_shmemrun ]] || die "--smoke needs --bin-dir and --shmemrun"; }
    want mf && { [[ -n $bin_dir ]] || die "--smoke needs --bin-dir"; }
    OURS_RUN=$smoke_shmemrun
else
    OURS_RUN=$prefix/bin/shmemrun
fi
host=$(hostname -s 2>/dev/null || hostname)
out_is_tmp=0
if [[ -z $out ]]; then
    case $mode in
        full) out=$BENCH/results/$(date +%F)-$host-multinode ;;
        quick) out=$BENCH/results/$(date +%F)-$host-multinode-quick ;;
        smoke) out=$(mktemp -d /tmp/shmem-bench-mn.XXXXXX) out_is_tmp=1 ;;
    esac
fi
raw=$out/raw
tmp=$out/raw-tmp
rm -rf "$raw" "$tmp"
mkdir -p "$raw" "$tmp"
: >"$raw/failures.jsonl"
LOG=$out/bench.log
: >"$LOG"

# A /24 of 10.0.0.0/8 picked from the pid; the ctest RESOURCE_LOCK netns keeps runs apart.
subnet=10.$((100 + $$ % 50)).$((($$ / 50) % 250))
bridge=smnbr$$
NS_PREFIX=shmem-mn$$-n
MAX_NODES=3
cleanup() {
    local i
    set +e
    [[ -n ${child:-} ]] && kill "$child" 2>/dev/null # a timeout(1): it stops its command
    [[ -n ${srv_pid:-} ]] && kill "$srv_pid" 2>/dev/null
    for ((i = 1; i <= MAX_NODES; i++)); do
        # Only processes in our own namespaces: orted daemons, PEs, perftest servers.
        ip netns pids "$NS_PREFIX$i" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$NS_PREFIX$i" 2>/dev/null
        ip link del "smn$$h$i" 2>/dev/null
    done
    ip link del "$bridge" 2>/dev/null
    rm -rf "$tmp"
    ((out_is_tmp)) && rm -rf "$out"
    trap - EXIT
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Programs the sweep needs (bench/*.c names) for ours and oshmem; mf's is mf_bm_copy.
mapfile -t PROGS < <(awk -v mode="$mode" '!/^[[:space:]]*(#|$)/ {
    n = split($1, m, ","); for (i = 1; i <= n; i++) if (m[i] == mode && $4 != "perftest" && $4 != "mf") print $5
}' "$sweep" | sort -u)

if { want ours || want mf; } && [[ $mode != smoke ]]; then
    if ((lib_build)); then
        log "library: build and install into $prefix"
        if [[ -d $ROOT/build ]]; then
            cmake --build "$ROOT/build" && cmake --install "$ROOT/build" --prefix "$prefix" >/dev/null
        else
            "$ROOT/scripts/build.sh" --prefix "$prefix"
        fi
    fi
    if want ours; then
        [[ -x $prefix/bin/oshcc && -x $OURS_RUN ]] || die "no $prefix/bin/oshcc or shmemrun (build and install the library, or --prefix)"
    fi
    if want mf; then
        [[ -f $prefix/lib/libmf_smem.so && -f $prefix/include/smem/host/smem_bm.h ]] ||
            die "no $prefix/lib/libmf_smem.so or include/smem/host/smem_bm.h (build and install the library, or --prefix)"
    fi
fi
OURS_BIN=$tmp/bin-ours
OSH_BIN=$tmp/bin-oshmem
mkdir -p "$OURS_BIN" "$OSH_BIN"
build_variant() { # $1 compiler wrapper, $2 output folder
    local prog
    for prog in "${PROGS[@]}"; do
        "$1" -O2 -Wall -Wextra -o "$2/$prog" "$BENCH/$prog.c"
    done
}
log "build (-O2): ${PROGS[*]}"
if want ours; then
    if [[ $mode == smoke ]]; then
        for prog in "${PROGS[@]}"; do
            [[ -x $bin_dir/$prog ]] || die "--bin-dir $bin_dir has no $prog"
            ln -s "$bin_dir/$prog" "$OURS_BIN/$prog"
        done
    else
        build_variant "$prefix/bin/oshcc" "$OURS_BIN"
    fi
fi
want oshmem && build_variant "$OSH_CC" "$OSH_BIN"
MF_BIN=$tmp/bin-mf/mf_bm_copy
FILL_LIB=$tmp/bin-mf/libucx_fill.so
if want mf; then
    mkdir -p "$(dirname "$MF_BIN")"
    # ucx_perftest with data in its buffers (bench/ucx_fill.c), beside it as shipped.
    cc -O2 -Wall -Wextra -shared -fPIC -o "$FILL_LIB" "$BENCH/ucx_fill.c" -ldl
    if [[ $mode == smoke ]]; then
        [[ -x $bin_dir/mf_bm_copy ]] || die "--bin-dir $bin_dir has no mf_bm_copy"
        ln -s "$bin_dir/mf_bm_copy" "$MF_BIN"
    else
        cc -O2 -Wall -Wextra "-I$prefix/include" -o "$MF_BIN" "$BENCH/mf_bm_copy.c" \
            "-L$prefix/lib" "-Wl,-rpath,$prefix/lib" -lmf_smem
    fi
fi

# --- the nodes -----------------------------------------------------------------------------------

if ! ip link add "$bridge" type bridge 2>/dev/null; then
    echo "SKIP: cannot create a bridge here (ip link add: no CAP_NET_ADMIN?)"
    exit 77
fi
ip addr add "$subnet.254/24" dev "$bridge"
ip link set "$bridge" up
for ((i = 1; i <= MAX_NODES; i++)); do
    ns=$NS_PREFIX$i
    ip netns add "$ns"
    ip link add "smn$$h$i" type veth peer name "$NS_IF" netns "$ns"
    ip link set "smn$$h$i" master "$bridge"
    ip link set "smn$$h$i" up
    ip -n "$ns" addr add "$subnet.$i/24" dev "$NS_IF"
    ip -n "$ns" link set "$NS_IF" up
    ip -n "$ns" link set lo up
done
LAUNCH_IP=$subnet.254
echo "nodes: ${NS_PREFIX}1..$MAX_NODES at $subnet.1..$MAX_NODES (interface $NS_IF), launchers at $LAUNCH_IP; UCX_TLS=$ucx_tls"

# oshrun's remote-launch agent: "agent HOST COMMAND..." runs COMMAND in namespace HOST.
AGENT=$tmp/netns-agent
cat >"$AGENT" <<'EOF'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
EOF
chmod +x "$AGENT"

unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_RUN_STORE SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE SHMEM_BOOTSTRAP_ADDR
export UCX_TLS=$ucx_tls UCX_NET_DEVICES=$NS_IF
# What our library applies where the environment does not set it (see the header).
LIB_UCX=("UCX_TCP_TX_SEG_SIZE=${UCX_TCP_TX_SEG_SIZE:-256k}" "UCX_TCP_RX_SEG_SIZE=${UCX_TCP_RX_SEG_SIZE:-256k}")
# Seconds a run may take (a hung one is tried up to twice more): RUN_TIMEOUT overrides.
case $mode in full | quick) RUN_TIMEOUT=${RUN_TIMEOUT:-300} ;; smoke) RUN_TIMEOUT=${RUN_TIMEOUT:-30} ;; esac
OSH_FLAGS=(--allow-run-as-root --oversubscribe --mca plm_rsh_agent "$AGENT"
    --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$subnet.0/24"
    --mca btl_tcp_if_include "$subnet.0/24" --mca spml ucx --mca osc ^rdma --bind-to none
    -x UCX_TLS -x UCX_NET_DEVICES)

# --- running ---------------------------------------------------------------------------------

# Runs a command with stdout and stderr to files, in the background so that a signal to this
# script is handled at once (cleanup stops the command): $1 stdout file, $2 stderr file.
child=
bounded() {
    local o=$1 e=$2 rc=0
    shift 2
    "$@" </dev/null >"$o" 2>"$e" &
    child=$!
    wait "$child" || rc=$?
    child=
    return "$rc"
}

record_failure() { # variant prog nodes ppn round rc args errfile
    printf '   FAILED (exit %s): %s %s at %sx%s %s\n' "$6" "$1" "$2" "$3" "$4" "$7" | tee -a "$LOG" >&2
    python3 - "$@" >>"$raw/failures.jsonl" <<'EOF'
import json, sys
v, prog, nodes, ppn, rnd, rc, args, errf = sys.argv[1:]
err = [l for l in open(errf, errors="replace").read().splitlines() if "VM_UNMAP" not in l]
print(json.dumps({"variant": v, "bench": prog, "nodes": int(nodes), "ppn": int(ppn),
                  "round": int(rnd), "rc": int(rc), "args": args, "stderr": "\n".join(err[-15:])}))
EOF
}

# One sweep line for one program variant: $1 variant, $2 prog, $3 nodes, $4 ppn, $5 round, args.
run_prog() {
    local variant=$1 prog=$2 nodes=$3 ppn=$4 round=$5
    shift 5
    local npes=$((nodes * ppn)) cmd=() rc=0 i
    case $variant in
        ours) cmd=(timeout -k 5 "$RUN_TIMEOUT" "$OURS_RUN" --store "tcp://$LAUNCH_IP:0" -n "$npes"
            --timeout "$RUN_TIMEOUT" "$SELF" --pe "$NS_PREFIX" "$ppn" "$OURS_BIN/$prog") ;;
        oshmem)
            : >"$tmp/hostfile"
            for ((i = 1; i <= nodes; i++)); do echo "$NS_PREFIX$i slots=$ppn" >>"$tmp/hostfile"; done
            cmd=(timeout -k 5 "$RUN_TIMEOUT" "$OSH_RUN" "${OSH_FLAGS[@]}" --hostfile "$tmp/hostfile"
                --map-by slot -np "$npes" "$OSH_BIN/$prog") ;;
    esac
    printf '[round %s] %-8s %sx%s %s\n' "$round" "$variant" "$nodes" "$ppn" "${cmd[*]} $*" >>"$LOG"
    bounded "$tmp/stdout" "$tmp/stderr" "${cmd[@]}" "$@" || rc=$?
    local tries=1
    while ((rc == 124 || rc == 137)) && ((tries < 3)); do
        # A run that hangs (Open MPI 4.1's OSHMEM now and then does across nodes, before its
        # first figure; twice in a row seen too) gets up to two more tries; the log keeps all.
        printf '   timed out after %s s; once more: %s %s at %sx%s\n' "$RUN_TIMEOUT" "$variant" "$prog" "$nodes" "$ppn" | tee -a "$LOG" >&2
        cat "$tmp/stderr" >>"$LOG"
        reap
        rc=0
        tries=$((tries + 1))
        bounded "$tmp/stdout" "$tmp/stderr" "${cmd[@]}" "$@" || rc=$?
    done
    sed -n "s/^{\"bench\"/{\"variant\":\"$variant\",\"round\":$round,\"nodes\":$nodes,\"ppn\":$ppn,\"bench\"/p" \
        "$tmp/stdout" >>"$raw/round$round.jsonl"
    grep -v 'UCX is unable to handle VM_UNMAP' "$tmp/stderr" >>"$LOG" || true
    ((rc == 0)) || record_failure "$variant" "$prog" "$nodes" "$ppn" "$round" "$rc" "$*" "$tmp/stderr"
    reap
}

# mf_bm_copy across nodes: $1 nodes, $2 ppn, $3 round, args. Rank r runs in namespace
# node r / ppn + 1 as its own process; rank 0 hosts the store at node 1's address; rank 0's
# records are kept. A failed rank ends the others (a rank exits on its watchdog otherwise).
mf_port=$((10000 + $$ % 9000)) # below the ephemeral ports (32768 and up), apart from perftest's
run_mf() {
    local nodes=$1 ppn=$2 round=$3
    shift 3
    local npes=$((nodes * ppn)) r node rc=0 pids=() failed=
    mf_port=$((mf_port + npes + 1))
    local url="tcp://$subnet.1:$mf_port"
    printf '[round %s] mf       %sx%s %s --store %s --world %s --rank R %s\n' "$round" "$nodes" "$ppn" "$MF_BIN" "$url" "$npes" "$*" >>"$LOG"
    for ((r = 0; r < npes; r++)); do
        node=$((r / ppn + 1))
        timeout -k 5 "$RUN_TIMEOUT" ip netns exec "$NS_PREFIX$node" taskset -c "$(cpu_of "$r")" "$MF_BIN" --store "$url" \
            --world "$npes" --rank "$r" --hcom "tcp://$subnet.$node/24:$((mf_port + 1 + r))" \
            --timeout "$RUN_TIMEOUT" "$@" </dev/null >"$tmp/mf.out.$r" 2>"$tmp/mf.err.$r" &
        pids+=($!)
    done
    local -A rank_of=()
    for ((r = 0; r < npes; r++)); do rank_of[${pids[r]}]=$r; done
    local running=("${pids[@]}") done_pid
    while ((${#running[@]})); do # the first to fail, whichever it is, ends the others
        rc=0 done_pid=
        wait -n -p done_pid "${running[@]}" || rc=$?
        [[ -n $done_pid ]] || break
        mapfile -t running < <(printf '%s\n' "${running[@]}" | grep -vx "$done_pid")
        if ((rc != 0)) && [[ -z $failed ]]; then
            failed=$rc r=${rank_of[$done_pid]}
            kill "${running[@]}" 2>/dev/null || true
            cat "$tmp/mf.err.$r" >"$tmp/stderr"
            printf 'rank %s exited with %s\n' "$r" "$rc" >>"$tmp/stderr"
        fi
    done
    sed -n "s/^{\"bench\"/{\"variant\":\"mf\",\"round\":$round,\"nodes\":$nodes,\"ppn\":$ppn,\"bench\"/p" \
        "$tmp/mf.out.0" >>"$raw/round$round.jsonl"
    cat "$tmp"/mf.err.* >>"$LOG"
    rm -f "$tmp"/mf.out.* "$tmp"/mf.err.*
    [[ -z $failed ]] || record_failure mf mf_bm_copy "$nodes" "$ppn" "$round" "$failed" "$*" "$tmp/stderr"
    reap
}

# An mf sweep line ($1 nodes, $2 ppn, $3 round, args with --sizes LIST), size by size, each
# size's run beside ucx_perftest's put_bw and get at that size (the order alternating by
# round); without ucx_perftest, the line as it is.
run_mf_beside_perftest() {
    local nodes=$1 ppn=$2 round=$3
    shift 3
    if ! want perftest; then
        run_mf "$nodes" "$ppn" "$round" "$@"
        return
    fi
    local args=() sizes= size
    while (($#)); do
        if [[ $1 == --sizes ]]; then
            sizes=$2
            shift 2
        else
            args+=("$1")
            shift
        fi
    done
    [[ -n $sizes ]] || die "an mf sweep line needs --sizes"
    local IFS=,
    for size in $sizes; do
        IFS=$' \t\n'
        # The floor with data, which decides the target, always runs right beside mf.
        if ((round % 2)); then
            run_mf "$nodes" "$ppn" "$round" --sizes "$size" "${args[@]}"
            perftest_floors "$size" "$round" perftest-mf-data "$FILL_LIB"
            perftest_floors "$size" "$round" perftest-mf
        else
            perftest_floors "$size" "$round" perftest-mf
            perftest_floors "$size" "$round" perftest-mf-data "$FILL_LIB"
            run_mf "$nodes" "$ppn" "$round" --sizes "$size" "${args[@]}"
        fi
    done
}

# The floors of mf_bm_copy at one size: ucx_perftest put_bw (H2G, G2G) and get (G2H). $1 size,
# $2 round, $3 the records' bench name, $4 (optional) the library to preload (run_perftest).
perftest_floors() {
    run_perftest ucp_put_bw "$@"
    run_perftest ucp_get_bw "$@"
}

# Whatever a run left in the namespaces (an orted after a killed oshrun) goes before the next.
reap() {
    local i
    for ((i = 1; i <= MAX_NODES; i++)); do
        ip netns pids "$NS_PREFIX$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    done
}

# ucx_perftest: $1 test, $2 size list, $3 round, $4 the records' bench name (default
# perftest), $5 (optional) a library both sides preload (FILL_LIB: its buffers hold data). One
# server/client pair per size, each on a fresh port; one record per size from the client's
# CSV line (-v).
perftest_port=$((20000 + $$ % 20000))
run_perftest() {
    local test=$1 sizes=$2 round=$3 bench=${4:-perftest} preload=() size bytes rc iters
    [[ -n ${5:-} ]] && preload=("LD_PRELOAD=$5")
    local IFS=,
    for size in $sizes; do
        IFS=$' \t\n'
        bytes=$(size_bytes "$size")
        # Bandwidth over TCP needs a long run: ucx_perftest's put_bw pays about half a second
        # whatever the count (64 x 1 MiB gave a third of 1000 x 1 MiB), so large messages get
        # at least 1000 (--quick 500) of them.
        # From 8 MiB a run moves about 2 GiB (--quick 1 GiB), at least 32 (16) messages.
        case $mode in
            full) iters=$((bytes >= 65536 ? 1000 : 20000))
                ((bytes >= 8 << 20)) && iters=$(((2 << 30) / bytes > 32 ? (2 << 30) / bytes : 32)) ;;
            quick) iters=$((bytes >= 65536 ? 500 : 5000))
                ((bytes >= 8 << 20)) && iters=$(((1 << 30) / bytes > 16 ? (1 << 30) / bytes : 16)) ;;
            smoke) iters=$((bytes >= 65536 ? 4 : 100)) ;;
        esac
        perftest_port=$((perftest_port + 1))
        local srv=(timeout -k 5 "$RUN_TIMEOUT" ip netns exec "${NS_PREFIX}2" env "${LIB_UCX[@]}" "${preload[@]}" "$PERFTEST" -p "$perftest_port" -c "$(cpu_of 1)")
        # "ucp_get_bw": ucp_get's bandwidth figure (the test reports latency and bandwidth).
        local ptest=$test outstanding=()
        [[ $test == ucp_get_bw ]] && ptest=ucp_get
        # put_bw with one put outstanding (-O 1): with no limit (its default) it posts them all
        # at once and, between these namespaces, one run in two or three at 16-64 MiB then
        # stalls for seconds at the end (0.2 GB/s where 3.5-4 go): no floor to compare with.
        [[ $test == ucp_put_bw ]] && outstanding=(-O 1)
        local cli=(timeout -k 5 "$RUN_TIMEOUT" ip netns exec "${NS_PREFIX}1" env "${LIB_UCX[@]}" "${preload[@]}" "$PERFTEST" "$subnet.2"
            -p "$perftest_port" -c "$(cpu_of 0)" -t "$ptest" -s "$bytes" -n "$iters" -w $((iters / 10 + 1)) "${outstanding[@]}" -v)
        printf '[round %s] perftest 2x1 %s & %s\n' "$round" "${srv[*]}" "${cli[*]}" >>"$LOG"
        "${srv[@]}" >"$tmp/perf-srv" 2>&1 &
        srv_pid=$!
        local tries=0
        # The client connects once: wait until the server listens.
        until ip netns exec "${NS_PREFIX}2" ss -Hltn "sport = :$perftest_port" 2>/dev/null | grep -q .; do
            tries=$((tries + 1))
            ((tries < 100)) || break
            sleep 0.05
        done
        rc=0
        bounded "$tmp/stdout" "$tmp/stderr" "${cli[@]}" || rc=$?
        wait "$srv_pid" 2>/dev/null || true
        srv_pid=
        cat "$tmp/stderr" "$tmp/perf-srv" >>"$LOG"
        if ((rc == 0)) && python3 "$BENCH/report_multinode.py" perftest "$tmp/stdout" --test "$test" \
            --size "$bytes" --round "$round" --iters "$iters" --bench "$bench" >>"$raw/round$round.jsonl" 2>>"$tmp/stderr"; then
            :
        else
            cat "$tmp/stdout" >>"$tmp/stderr"
            record_failure perftest "$test" 2 1 "$round" "${rc/#0/1}" "-s $bytes" "$tmp/stderr"
        fi
        reap
    done
}
ncpu=$(getconf _NPROCESSORS_ONLN)
cpu_of() { echo $(($1 % ncpu)); }
size_bytes() {
    local s=$1
    case $s in
        *K) echo $((${s%K} << 10)) ;;
        *M) echo $((${s%M} << 20)) ;;
        *) echo "$s" ;;
    esac
}

write_env() {
    local commit dirty ompi ucx
    commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$ROOT" status --porcelain -- cpp rust cmake CMakeLists.txt Cargo.toml Cargo.lock 2>/dev/null | grep -q . && echo true || echo false)
    ompi=$(dpkg-query -W -f='${Version}' libopenmpi3 2>/dev/null || echo unknown)
    ucx=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || echo unknown)
    python3 - "$raw/env.json" "$mode" "$rounds" "$cmdline" "$commit" "$dirty" "$ompi" "$ucx" \
        "$ucx_tls" "$host" "${VARIANTS[*]}" "$OURS_RUN --store tcp://$LAUNCH_IP:0 -n N" \
        "$OSH_RUN ${OSH_FLAGS[*]} --hostfile H --map-by slot -np N" "${notes[*]+${notes[*]}}" \
        "${LIB_UCX[*]}" <<'EOF'
import json, os, platform, subprocess, sys
(path, mode, rounds, command, commit, dirty, ompi, ucx, tls, host, variants, ours, osh,
 notes, lib_ucx) = sys.argv[1:]
def sh(c):
    return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
json.dump({
    "date": sh("date -u +%FT%TZ"), "host": host, "mode": mode, "rounds": int(rounds),
    "command": command, "cpu": sh("lscpu | sed -n 's/^Model name: *//p'"),
    "cpus_online": os.cpu_count(), "kernel": platform.release(), "load": sh("cat /proc/loadavg"),
    "thp": sh("cat /sys/kernel/mm/transparent_hugepage/enabled"),
    "thp_shmem": sh("cat /sys/kernel/mm/transparent_hugepage/shmem_enabled"),
    "shmem_commit": commit, "shmem_tree_dirty": dirty == "true",
    "openmpi_deb_version": ompi, "ucx_deb_version": ucx, "ucx_tls": tls,
    "ucx_net_devices": "mn0 (each node's port on the bridge)", "variants": variants.split(),
    "ucx_lib_settings": lib_ucx,
    "shmemrun": ours, "oshrun": osh, "notes": notes,
    "nodes": "network namespaces on this machine, one veth each on a Linux bridge",
    "pinning": "each PE: sched_setaffinity(PE mod online CPUs) after shmem_init; "
               "ucx_perftest client -c 0, server -c 1",
}, open(path, "w"), indent=1)
EOF
}
write_env

start=$EPOCHREALTIME
log "running $mode sweeps, $rounds round(s) -> $out"
for ((round = 1; round <= rounds; round++)); do
    log "round $round/$rounds"
    while read -r nodes ppn line_variants prog args; do
        IFS=, read -r -a vs <<<"$line_variants"
        ((round % 2 == 0)) && mapfile -t vs < <(printf '%s\n' "${vs[@]}" | tac)
        for v in "${vs[@]}"; do
            want "$v" || continue
            # shellcheck disable=SC2086 # args are the sweep line's words
            if [[ $v == perftest ]]; then
                run_perftest "$prog" "$args" "$round"
            elif [[ $v == mf ]]; then
                run_mf_beside_perftest "$nodes" "$ppn" "$round" $args
            else
                run_prog "$v" "$prog" "$nodes" "$ppn" "$round" $args
            fi
        done
    done < <(awk -v mode="$mode" '!/^[[:space:]]*(#|$)/ {
        n = split($1, m, ","); hit = 0
        for (i = 1; i <= n; i++) if (m[i] == mode) hit = 1
        if (hit) { $1 = ""; sub(/^[[:space:]]+/, ""); print }
    }' "$sweep")
    printf '   %.0f s so far\n' "$(python3 -c "print($EPOCHREALTIME - $start)")"
done

log "report"
docs=()
((with_docs)) && [[ $mode == full ]] && docs=(--docs "$ROOT/docs/performance.md")
report=(python3 "$BENCH/report_multinode.py" render "$out" "${docs[@]}")
if [[ $mode == smoke ]]; then
    # Every row of the tables is there for every variant that ran (values, not timings).
    report+=(--check "${VARIANTS[*]}")
fi
"${report[@]}"
if [[ $mode == smoke ]]; then
    fails=$(wc -l <"$raw/failures.jsonl")
    ((fails == 0)) || {
        cat "$raw/failures.jsonl" >&2
        die "$fails run(s) failed"
    }
    echo "smoke: passed"
fi
printf 'done in %.0f s: %s\n' "$(python3 -c "print($EPOCHREALTIME - $start)")" "$out"
