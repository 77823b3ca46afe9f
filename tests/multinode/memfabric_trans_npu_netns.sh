#!/usr/bin/env bash
# memfabric_trans_npu_netns.sh TRANS_NPU
#
# memfabric_hybrid's transfer engine on the npu device (tests/memfabric/trans_npu.c, the program
# TRANS_NPU, over the ACL stand-in the environment names) with its two sides in two network
# namespaces joined by a veth pair, as on two nodes: the sender in one (serving the store on the
# veth's address there), the receiver in the other, each started as
# `trans_npu node <url> <id> <peer id> <role> <dir>`. Host memory and the sender's NPU memory go
# into the receiver's host memory over UCX (UCX_TLS=tcp over the veth, named shmem0 in both);
# the receiver's NPU memory is refused both ways, naming the other node. Addresses pass through
# files of a folder both see.
# Needs root, iproute2 (`ip netns`) and UCX; otherwise skipped: status 77, ctest's
# SKIP_RETURN_CODE. Everything made here (namespaces, links, processes, files) is removed on
# exit, whatever happens.
set -u
me=memfabric_trans_npu_netns.sh
bin=${1:?the trans_npu program}
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
netns_require_ucx
netns_pair_up mfn shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

netns_node_pair "$bin"
failed=0
wait "$sp" || failed=1
wait "$rp" || failed=1
grep -q "node sender: OK" "$tmp/sender.out" || failed=1
grep -q "node receiver: OK" "$tmp/receiver.out" || failed=1
[ "$failed" -eq 0 ] || netns_node_failed
grep 'node:' "$tmp/sender.out"
echo "$me: host and NPU memory of one namespace written into the other's host memory over" \
    "UCX; NPU memory of the other namespace refused, naming it"
