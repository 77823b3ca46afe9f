#!/usr/bin/env bash
# group_api_netns.sh CARGO...
#
# The group API (rust/core/src/group/) across two network namespaces joined by a veth pair,
# data moving over UCX (UCX_TLS=tcp over the veth, named shmem0 in both): the store (a store
# of groups, `Store::serve_or_join`) runs in namespace A, the tests of
# rust/core/tests/group.rs in namespace B, and every other member they start in A (the rest in
# B): four members and a fifth joining while they wait, one leaving and one SIGKILLed (the
# others see it down within the bound and go on, their data intact); eight racing for ranks
# and a newcomer taking a freed rank; a hundred joins and leaves with no growth of memory,
# descriptors, mappings or threads in the members and the store; members without UCX (the
# node path over the loopback) refused a member of the other namespace, naming UCX. Members
# of one namespace map each other's memory where the group allocated it. CARGO...: the cargo
# command (with the build's environment) that builds the test binary and names it.
# Needs root, iproute2 (`ip netns`) and UCX; otherwise skipped: status 77, ctest's
# SKIP_RETURN_CODE. Everything made here (namespaces, links, processes, files) is removed on
# exit, whatever happens.
set -u
me=group_api_netns.sh
. "$(dirname "$0")/netns_pair.sh"
netns_require_root
netns_require_ucx
bin=$(test_binary shmem-core group "$@")
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "$me: FAILED: cannot build or find the group test binary"
    exit 1
fi
netns_pair_up ga shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}

url="tcp://$net.1:$((20000 + $$ % 20000))"
# The store serves until its stdin closes: a FIFO this script holds open.
mkfifo "$tmp/store.in"
exec 3<>"$tmp/store.in"
GROUP_API_SERVE="$url" ip netns exec "$a" "$bin" --exact group_store_child --nocapture \
    --test-threads=1 <"$tmp/store.in" >"$tmp/store.out" 2>&1 &
store_pid=$!
disown "$store_pid"
wait_serving "$tmp/store.out" "$store_pid" "the store in namespace $a"
# Members of the test without UCX start with libucp hidden (a bind mount of /dev/null in a
# mount namespace of their own), so that the group's default worker finds it missing.
hide=
if command -v unshare >/dev/null; then
    hide=$(realpath "$(ldconfig -p | awk '/libucp\.so\.0 /{print $NF; exit}')" 2>/dev/null)
fi
GROUP_API_REMOTE="$url" GROUP_API_OTHER_NETNS="$a" GROUP_API_STORE_PID="$store_pid" \
    GROUP_API_HIDE_UCX="$hide" \
    timeout 600 ip netns exec "$b" "$bin" --exact \
    four_members_a_fifth_joins_one_leaves_one_is_killed \
    eight_racing_members_are_ranked_and_a_newcomer_takes_a_freed_rank \
    a_hundred_joins_and_leaves_leave_nothing_behind \
    without_ucx_a_member_of_another_node_is_refused_naming_ucx --nocapture --test-threads=1
status=$?
if [ "$status" -ne 0 ]; then
    echo "group_api_netns.sh: FAILED: the group tests (status $status)"
    exit 1
fi
echo "group_api_netns.sh: the group tests passed with the store in $a and the members split across $a and $b"
