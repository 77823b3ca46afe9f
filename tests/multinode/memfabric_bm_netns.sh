#!/usr/bin/env bash
# memfabric_bm_netns.sh SCENARIO RANKING N PROGRAM
#
# memfabric_hybrid's Big Memory pools (libmf_smem.so's smem_bm_*) across two network
# namespaces joined by a veth pair, data between them over UCX (UCX_TLS=tcp over the veth, named
# shmem0 in both): N processes of PROGRAM (tests/memfabric/bm_pool.c), each started on its own
# as `PROGRAM proc URL N RANKING INDEX SCENARIO SYNCDIR`, process i in namespace A when i is
# even and in B when odd, so that every rank's neighbours sit in the other namespace (at 3
# ranks, ranks 1 and 2 in different ones from theirs both ways). The store URL is A's address:
# rank 0 hosts it with explicit ranking, whichever process of A wins the bind with auto ranking.
# bm_pool's scenarios (basic: every copy type between neighbours, each rank checking what
# another wrote; late: the last rank joins while the others copy; kill: the last rank is
# killed and the others see it gone) run unchanged; its ranks meet through files in SYNCDIR,
# which both namespaces see. Passes when every process exits 0 (with kill: the victim ends by
# SIGKILL) and no process is left in either namespace.
# Watchdogs: bm_pool's own (alarm) and timeout(1) around each process (150 s); the first
# process to fail ends the others. Needs root, iproute2 (`ip netns`) and UCX; otherwise skipped:
# status 77, ctest's SKIP_RETURN_CODE. Everything made here (namespaces, links, processes,
# files) is removed on exit, whatever happens.
set -u
me=memfabric_bm_netns.sh
scenario=${1:?usage: $me SCENARIO RANKING N PROGRAM}
ranking=${2:?usage: $me SCENARIO RANKING N PROGRAM}
n=${3:?usage: $me SCENARIO RANKING N PROGRAM}
program=${4:?usage: $me SCENARIO RANKING N PROGRAM}
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
netns_require_ucx
netns_pair_up mb shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

url="tcp://$net.1:$((20000 + $$ % 20000))"
mkdir "$tmp/sync"
pids=()
for ((i = 0; i < n; i++)); do
    ns=$a
    ((i % 2)) && ns=$b
    timeout -k 5 150 ip netns exec "$ns" "$program" proc "$url" "$n" "$ranking" "$i" \
        "$scenario" "$tmp/sync" </dev/null >"$tmp/out.$i" 2>&1 &
    pids+=($!)
done

# The first process to fail ends the others; with kill, one SIGKILL (status 137) is the victim.
declare -A index_of=()
for ((i = 0; i < n; i++)); do index_of[${pids[i]}]=$i; done
victims=0
[ "$scenario" = kill ] && victims=1
running=("${pids[@]}")
failed=
while ((${#running[@]})); do
    rc=0 done_pid=
    wait -n -p done_pid "${running[@]}" || rc=$?
    [ -n "$done_pid" ] || break
    mapfile -t running < <(printf '%s\n' "${running[@]}" | grep -vx "$done_pid")
    if [ "$rc" -eq 137 ] && ((victims > 0)); then
        victims=$((victims - 1))
        continue
    fi
    if [ "$rc" -ne 0 ] && [ -z "$failed" ]; then
        failed="process ${index_of[$done_pid]} of $n exited with status $rc"
        kill "${running[@]}" 2>/dev/null
    fi
done

for ((i = 0; i < n; i++)); do
    sed "s/^/[process $i, $([ $((i % 2)) = 0 ] && echo "$a" || echo "$b")] /" "$tmp/out.$i"
done
if [ -n "$failed" ]; then
    echo "$me: FAILED: $failed"
    exit 1
fi
if ((victims > 0)); then
    echo "$me: FAILED: the kill scenario's victim did not end by SIGKILL"
    exit 1
fi
left=$( (ip netns pids "$a"; ip netns pids "$b") 2>/dev/null | wc -l)
if [ "$left" -ne 0 ]; then
    echo "$me: FAILED: $left process(es) left in the namespaces"
    exit 1
fi
echo "$me: bm_pool $scenario, $n ranks ($ranking ranking), split across $a and $b: passed"
