#!/usr/bin/env bash
# memfabric_bm_netns.sh RANKS[_auto] PROGRAM
#
# memfabric_hybrid's Big Memory (libmf_smem.so's smem_bm_*) across two network namespaces
# joined by a veth pair, data between them over UCX (UCX_TLS=tcp over the veth, named shmem0 in
# both): RANKS processes of PROGRAM (bench/mf_bm_copy, --mode ring), rank r in namespace A when
# r is even and in B when odd, each started on its own with memfabric's store URL at A's address
# (rank 0, or with _auto whichever process of A wins the bind, hosts the store), its rank
# (explicit, or none with _auto: memfabric's auto ranking) and its hcomUrl. Every rank writes
# into the next rank's host segment (H2G from a local buffer, G2G from its own segment), checks
# with CPU loads what the rank before wrote into its own segment, and reads back (G2H) what it
# wrote and what the rank before holds; with 3 ranks, ranks 1 and 2 sit in different namespaces
# from their neighbours both ways. Passes when every rank exits 0 having said it checked its
# ring and no process is left in either namespace.
# Watchdogs: each rank's own (--timeout 90) and timeout(1) around it (120 s); the first rank
# to fail ends the others. Needs root and iproute2 (`ip netns`) and UCX; otherwise skipped:
# status 77, ctest's SKIP_RETURN_CODE. Everything made here (namespaces, links, processes,
# files) is removed on exit, whatever happens.
set -u
me=memfabric_bm_netns.sh
case=${1:?usage: $me RANKS[_auto] PROGRAM}
program=${2:?usage: $me RANKS[_auto] PROGRAM}
ranks=${case%_auto}
auto=0
[ "$ranks" != "$case" ] && auto=1
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
if ! ldconfig -p 2>/dev/null | grep -q 'libucp\.so\.0 '; then
    echo "SKIP: UCX (libucp.so.0) is not installed here"
    exit 77
fi
netns_pair_up mb shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

port=$((20000 + $$ % 20000))
url="tcp://$net.1:$port"
pids=()
for ((r = 0; r < ranks; r++)); do
    if ((r % 2 == 0)); then ns=$a ip=$net.1; else ns=$b ip=$net.2; fi
    rank_arg=(--rank "$r")
    ((auto)) && rank_arg=()
    timeout -k 5 120 ip netns exec "$ns" "$program" --mode ring --store "$url" --world "$ranks" \
        "${rank_arg[@]}" --hcom "tcp://$ip/24:$((port + 1 + r))" --sizes 1M --timeout 90 \
        </dev/null >"$tmp/out.$r" 2>"$tmp/err.$r" &
    pids+=($!)
done

# The first process to fail ends the others.
declare -A index_of=()
for ((r = 0; r < ranks; r++)); do index_of[${pids[r]}]=$r; done
running=("${pids[@]}")
failed=
while ((${#running[@]})); do
    rc=0 done_pid=
    wait -n -p done_pid "${running[@]}" || rc=$?
    [ -n "$done_pid" ] || break
    mapfile -t running < <(printf '%s\n' "${running[@]}" | grep -vx "$done_pid")
    if [ "$rc" -ne 0 ] && [ -z "$failed" ]; then
        failed="process $((index_of[$done_pid])) (of $ranks) exited with status $rc"
        kill "${running[@]}" 2>/dev/null
    fi
done

for ((r = 0; r < ranks; r++)); do
    sed "s/^/[process $r] /" "$tmp/err.$r"
done
if [ -n "$failed" ]; then
    echo "$me: FAILED: $failed"
    exit 1
fi
checked=$(cat "$tmp"/err.* | grep -c 'ring checked')
if [ "$checked" -ne "$ranks" ]; then
    echo "$me: FAILED: $checked of $ranks ranks said they checked their ring"
    exit 1
fi
# Every rank of 0..RANKS-1 once (auto ranking hands each out once).
for ((r = 0; r < ranks; r++)); do
    if [ "$(cat "$tmp"/err.* | grep -c "rank $r of $ranks: ring checked")" -ne 1 ]; then
        echo "$me: FAILED: rank $r did not check its ring exactly once"
        exit 1
    fi
done
left=$( (ip netns pids "$a"; ip netns pids "$b") 2>/dev/null | wc -l)
if [ "$left" -ne 0 ]; then
    echo "$me: FAILED: $left process(es) left in the namespaces"
    exit 1
fi
echo "$me: $ranks ranks ($([ $auto = 1 ] && echo auto || echo explicit) ranking) checked their data across $a and $b"
