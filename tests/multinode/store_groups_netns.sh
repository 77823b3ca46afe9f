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
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2's ip (network namespaces)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$("$@" test --locked --manifest-path "$root/Cargo.toml" -p shmem-store --test store_groups \
    --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "store_groups":
        print(m["executable"])')
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "store_groups_netns.sh: FAILED: cannot build or find the store_groups test binary"
    exit 1
fi

a="shmem-sg-$$-a" b="shmem-sg-$$-b"
net="10.$((200 + $$ % 50)).$((($$ / 50) % 256))"
tmp=$(mktemp -d)
store_pid=
cleanup() {
    [ -n "$store_pid" ] && kill -9 "$store_pid" 2>/dev/null
    for ns in "$a" "$b"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "sga$$" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
if ! ip netns add "$a" 2>/dev/null; then
    echo "SKIP: cannot create a network namespace here (ip netns add: no CAP_SYS_ADMIN?)"
    exit 77
fi
set -e
ip netns add "$b"
ip link add "sga$$" type veth peer name "sgb$$"
ip link set "sga$$" netns "$a"
ip link set "sgb$$" netns "$b"
ip -n "$a" addr add "$net.1/24" dev "sga$$"
ip -n "$b" addr add "$net.2/24" dev "sgb$$"
for ns in "$a" "$b"; do
    ip -n "$ns" link set lo up
done
ip -n "$a" link set "sga$$" up
ip -n "$b" link set "sgb$$" up
set +e

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
for _ in $(seq 1 300); do
    grep -q serving "$tmp/store.out" && break
    kill -0 "$store_pid" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q serving "$tmp/store.out"; then
    cat "$tmp/store.out"
    echo "store_groups_netns.sh: FAILED: the store did not start in namespace $a"
    exit 1
fi
env "${member_env[@]}" timeout 240 ip netns exec "$b" "$bin" --exact remote_members \
    --nocapture --test-threads=1
status=$?
if [ "$status" -ne 0 ]; then
    echo "store_groups_netns.sh: FAILED: the members in namespace $b (status $status)"
    exit 1
fi
echo "store_groups_netns.sh: the group tests passed with the store in $a and the members in $b ($mode)"
