#!/usr/bin/env bash
# memfabric_shm_netns.sh MF_SHM
#
# memfabric_hybrid's Share Memory (tests/memfabric/mf_shm.c, the program MF_SHM) with its ranks
# in two network namespaces joined by a veth pair, as on two nodes: ranks 0 and 2 in one (rank
# 0 serves the store on the veth's address there), ranks 1 and 3 in the other, each started as
# `mf_shm rank <url> 4 <rank>`. Each rank sees the slots of the ranks of its namespace mapped
# (topology_can_reach: MTE) and the others not (RDMA), stores into its namespace peer's slot
# and sees that peer's store in its own; barriers, allgathers, subgroups, the atomic
# allocator and the exit handlers run through the store across the namespaces. Members reach
# each other over UCX where it loads (UCX_TLS=tcp over the veth, named shmem0 in both), and
# without it the job runs the same (no data crosses the namespaces but through the store).
# Needs root and iproute2 (`ip netns`); otherwise skipped: status 77, ctest's
# SKIP_RETURN_CODE. Everything made here (namespaces, links, processes, files) is removed on
# exit, whatever happens.
set -u
me=memfabric_shm_netns.sh
bin=${1:?the mf_shm program}
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
netns_pair_up mf shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

url="tcp://$net.1:$((20000 + $$ % 20000))"
pids=()
for r in 0 1 2 3; do
    ns=$a
    [ $((r % 2)) -eq 1 ] && ns=$b
    timeout 120 ip netns exec "$ns" "$bin" rank "$url" 4 "$r" >"$tmp/rank$r.out" 2>&1 &
    pids+=($!)
done
failed=0
for r in 0 1 2 3; do
    if ! wait "${pids[$r]}"; then
        failed=1
    fi
    if ! grep -q "rank $r: 2 of 4 ranks on this node" "$tmp/rank$r.out" ||
        ! grep -q "rank $r of 4: OK" "$tmp/rank$r.out"; then
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then
    for r in 0 1 2 3; do
        echo "--- rank $r"
        grep -v '^\[mf_smem\] ERROR' "$tmp/rank$r.out" | tail -20
    done
    echo "$me: FAILED"
    exit 1
fi
echo "$me: 4 ranks in 2 namespaces: each mapped its namespace's slots and passed"
