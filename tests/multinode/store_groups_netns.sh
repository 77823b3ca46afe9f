#!/usr/bin/env bash
# store_groups_netns.sh MODE CARGO...
#
# The store's groups across two network namespaces joined by a veth pair: the store (a store
# of groups, `Store::serve_or_join`) runs in one, every member in the other, and the group
# tests of rust/store/tests/store_groups.rs (`remote_members`: WATCH; a fifth member joining
# while four are blocked, one leaving, one SIGKILLed, one SIGSTOPped; auto ranking with eight
# racing members; members SIGKILLed or SIGSTOPped during a change, which ends without waiting
# for them) run against it. MODE: plain or tls. CARGO...: the cargo command (with the
# build's environment) that builds the test binary and names it.
# Needs root and iproute2 (`ip netns`); otherwise skipped: status 77, ctest's SKIP_RETURN_CODE.
# Everything made here (namespaces, links, processes, files) is removed on exit, whatever
# happens.
set -u
mode=${1:?plain or tls}
shift
me=store_groups_netns.sh
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
bin=$(test_binary shmem-store store_groups "$@")
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "$me: FAILED: cannot build or find the store_groups test binary"
    exit 1
fi
netns_pair_up sg shmem0

url="tcp://$net.1:$((20000 + $$ % 20000))"
store_env=(SHMEM_GROUP_SERVE="$url")
member_env=(SHMEM_GROUP_REMOTE="$url")
if [ "$mode" = tls ]; then
    store_env+=(SHMEM_GROUP_SERVE_TLS="$tmp/bundle.pem")
    member_env+=(SHMEM_GROUP_REMOTE_TLS="$tmp/bundle.pem")
fi
env "${store_env[@]}" ip netns exec "$a" "$bin" --exact store_child --nocapture \
    --test-threads=1 >"$tmp/store.out" 2>&1 &
store_pid=$!
disown "$store_pid"
wait_serving "$tmp/store.out" "$store_pid" "the store in namespace $a"
env "${member_env[@]}" timeout 240 ip netns exec "$b" "$bin" --exact remote_members \
    --nocapture --test-threads=1
status=$?
if [ "$status" -ne 0 ]; then
    echo "store_groups_netns.sh: FAILED: the members in namespace $b (status $status)"
    exit 1
fi
echo "store_groups_netns.sh: the group tests passed with the store in $a and the members in $b ($mode)"
