#!/usr/bin/env bash
# memfabric_trans_netns.sh TRANS_ENGINE
#
# memfabric_hybrid's transfer engine (tests/memfabric/trans_engine.c, the program TRANS_ENGINE)
# with its two sides in two network namespaces joined by a veth pair, as on two nodes: the
# sender in one (serving the store on the veth's address there), the receiver in the other,
# each started as `trans_engine node <url> <id> <peer id> <role> <dir>`. The receiver registers
# its KV layers in one batch and mallocs a buffer; the sender writes every layer with one batch
# write over UCX (UCX_TLS=tcp over the veth, named shmem0 in both), writes the buffer, reads
# the layers back in one batch and is refused out of range; the receiver checks what arrived
# and reads the sender's registered memory. Then the receiver is killed (SIGKILL) and the
# sender's next batch write to it must fail in bounded time. Addresses pass through files of a
# folder both see.
# Needs root, iproute2 (`ip netns`) and UCX; otherwise skipped: status 77, ctest's
# SKIP_RETURN_CODE. Everything made here (namespaces, links, processes, files) is removed on
# exit, whatever happens.
set -u
me=memfabric_trans_netns.sh
bin=${1:?the trans_engine program}
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
netns_require_ucx
netns_pair_up mft shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

netns_node_pair "$bin" kill
failed=0
# Once the receiver checked everything, it is killed (SIGKILL, in its namespace): the sender's
# next transfer to it must fail in bounded time.
for _ in $(seq 600); do
    [ -e "$tmp/checked" ] && break
    sleep 0.1
done
if [ -e "$tmp/checked" ]; then
    ip netns pids "$b" | xargs -r kill -9
    # A message of the program's size (128 bytes), whole when it appears.
    head -c 128 /dev/zero >"$tmp/killed.tmp" && mv "$tmp/killed.tmp" "$tmp/killed"
else
    failed=1
fi
wait "$sp" || failed=1
wait "$rp" 2>/dev/null || true
grep -q "node sender: OK" "$tmp/sender.out" || failed=1
grep -q "failed after" "$tmp/sender.out" || failed=1
[ "$failed" -eq 0 ] || netns_node_failed
grep 'node:' "$tmp/sender.out"
echo "$me: a sender and a receiver in 2 namespaces moved and checked every layer over UCX; the" \
    "receiver killed, the sender's next transfer failed in bounded time"
