# netns_pair.sh: sourced by the scripts of tests/multinode that run a store in one network
# namespace and members in another (store_groups_netns.sh, group_api_netns.sh: a cargo test
# binary; memfabric_bm_netns.sh: the ranks of a Big Memory program; memfabric_trans_netns.sh and
# memfabric_trans_npu_netns.sh: the two sides of a transfer-engine program). Defines:
#   netns_require_root         exits 77 (ctest's SKIP_RETURN_CODE) without root or `ip`
#   netns_require_ucx          exits 77 without UCX (libucp.so.0)
#   test_binary PKG TEST CARGO...
#                              builds the integration test TEST of crate PKG with the cargo
#                              command CARGO... and prints its executable's path
#   netns_pair_up PREFIX IF    makes namespaces $a and $b joined by a veth pair whose ends are
#                              named IF in both, addresses $net.1 (in $a) and $net.2 (in $b),
#                              a scratch folder $tmp, and an EXIT trap that removes all of it,
#                              killing every process left in the namespaces and $store_pid
#   wait_serving FILE PID WHAT waits (30 s) until FILE says "serving"; fails naming WHAT
#   netns_node_pair BIN [ARG...]
#                              starts `BIN node <url> <id> <peer id> <role> $tmp` twice, each
#                              for at most 120 s: a sender in $a serving the store there (ARGs
#                              after its "serve"), a receiver in $b; pids in $sp and $rp, output
#                              in $tmp/sender.out and $tmp/receiver.out
#   netns_node_failed          after netns_node_pair: prints the last 20 lines of each side's
#                              output and "$me: FAILED", and exits 1
# The caller sets `set -u` and its own name in $me.

netns_require_root() {
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
        echo "SKIP: needs root and iproute2's ip (network namespaces)"
        exit 77
    fi
}

netns_require_ucx() {
    if ! ldconfig -p 2>/dev/null | grep -q 'libucp\.so\.0 '; then
        echo "SKIP: UCX (libucp.so.0) is not installed here"
        exit 77
    fi
}

test_binary() {
    local pkg=$1 test=$2 root
    shift 2
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    "$@" test --locked --manifest-path "$root/Cargo.toml" -p "$pkg" --test "$test" \
        --no-run --message-format=json 2>/dev/null |
        TEST_NAME="$test" python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == os.environ["TEST_NAME"]:
        print(m["executable"])'
}

netns_pair_up() {
    local prefix=$1 ifname=$2
    a="shmem-$prefix-$$-a" b="shmem-$prefix-$$-b"
    net="10.$((200 + $$ % 50)).$((($$ / 50) % 256))"
    tmp=$(mktemp -d)
    store_pid=
    veth="${prefix}a$$"
    trap netns_pair_down EXIT
    if ! ip netns add "$a" 2>/dev/null; then
        echo "SKIP: cannot create a network namespace here (ip netns add: no CAP_SYS_ADMIN?)"
        exit 77
    fi
    set -e
    ip netns add "$b"
    ip link add "$veth" type veth peer name "${prefix}b$$"
    ip link set "$veth" netns "$a"
    ip link set "${prefix}b$$" netns "$b"
    ip -n "$a" link set "$veth" name "$ifname"
    ip -n "$b" link set "${prefix}b$$" name "$ifname"
    ip -n "$a" addr add "$net.1/24" dev "$ifname"
    ip -n "$b" addr add "$net.2/24" dev "$ifname"
    for ns in "$a" "$b"; do
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "$ifname" up
    done
    set +e
}

netns_pair_down() {
    [ -n "${store_pid:-}" ] && kill -9 "$store_pid" 2>/dev/null
    for ns in "$a" "$b"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "$veth" 2>/dev/null
    rm -rf "$tmp"
}

wait_serving() {
    local file=$1 pid=$2 what=$3
    for _ in $(seq 1 300); do
        grep -q serving "$file" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$file"
    echo "$me: FAILED: $what did not start"
    exit 1
}

netns_node_pair() {
    local bin=$1 port=$((20000 + $$ % 20000))
    shift
    local url="tcp://$net.1:$port" sender="$net.1:$((port + 1))" receiver="$net.2:$((port + 2))"
    timeout 120 ip netns exec "$a" "$bin" node "$url" "$sender" "$receiver" sender "$tmp" serve \
        "$@" >"$tmp/sender.out" 2>&1 &
    sp=$!
    timeout 120 ip netns exec "$b" "$bin" node "$url" "$receiver" "$sender" receiver "$tmp" \
        >"$tmp/receiver.out" 2>&1 &
    rp=$!
}

netns_node_failed() {
    local side
    for side in sender receiver; do
        echo "--- $side"
        tail -20 "$tmp/$side.out"
    done
    echo "$me: FAILED"
    exit 1
}
