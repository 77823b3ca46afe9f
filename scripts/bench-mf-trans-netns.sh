#!/usr/bin/env bash
# bench-mf-trans-netns.sh PYTHON [ARGS...]
#
# bench/mf_trans_vs_mooncake.py with its receiver and sender in two network namespaces joined
# by a veth pair (tests/multinode/netns_pair.sh), as on two nodes: our engine over UCX
# (UCX_TLS=tcp over the veth, named shmem0 in both), Mooncake's over its TCP transport. PYTHON
# is the interpreter holding both engines (e.g. ~/.cache/shmem/mooncake-venv/bin/python); ARGS
# go to the script (--rounds, --json, --engines, ...). Between the same namespaces,
# ucx_perftest's ucp_put_bw (server on the receiver's side) runs right beside every round of
# the single writes from 1 MiB (the script's --perftest-beside: before the engines in odd
# rounds, after them in even ones, so both see the same state of the machine; each such write
# gets the median in-round ratio of ours to it), unless PERFTEST=0 or there is no ucx_perftest.
# PERFTEST_BESIDE=0 runs it after the whole comparison instead, at 1, 4, 16 and 64 MiB, as many
# runs a size as --rounds says (5 by default): a line of GB/s each (the median over the runs
# and their range), added to the --json file as "perftest". Both sides are pinned alike: the
# sender (every thread of it) and ucx_perftest's client on CPU 0, the receiver and
# ucx_perftest's server on CPU 1 (--pin; -c 0 and -c 1). Needs root and iproute2 (status 77
# otherwise); the namespaces and their processes are removed on exit, whatever happens.
set -u
me=bench-mf-trans-netns.sh
python=${1:?usage: $me PYTHON [ARGS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/multinode/netns_pair.sh"
netns_require_root
netns_require_ucx
netns_pair_up mfb shmem0
export UCX_TLS=${UCX_TLS:-tcp} UCX_NET_DEVICES=${UCX_NET_DEVICES:-shmem0}
# UCX's TCP segments as our library sets them where the environment does not (UCX_DEFAULTS in
# rust/core/src/transport/ucx/mod.rs): ucx_perftest's figures are UCX's over the same settings.
export UCX_TCP_TX_SEG_SIZE=${UCX_TCP_TX_SEG_SIZE:-256k} UCX_TCP_RX_SEG_SIZE=${UCX_TCP_RX_SEG_SIZE:-256k}
perftest=$(command -v ucx_perftest) || perftest=
[ "${PERFTEST:-1}" = 0 ] && perftest=
beside=()
[ -n "$perftest" ] && [ "${PERFTEST_BESIDE:-1}" = 1 ] && beside=(--perftest-beside "$perftest")
"$python" "$root/bench/mf_trans_vs_mooncake.py" --netns "$b,$a" --hosts "$net.2,$net.1" --pin \
    "${beside[@]}" "$@" || exit
# ucx_perftest ran beside each round of the single writes (or is not wanted): done
if [ -z "$perftest" ] || [ ${#beside[@]} -gt 0 ]; then exit 0; fi
port=$((20000 + $$ % 20000))
# The rounds and the JSON file the Python side was given, for ucx_perftest's runs and figures.
rounds=5 json=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --rounds) rounds=${args[i + 1]:-5} ;;
        --rounds=*) rounds=${args[i]#--rounds=} ;;
        --json) json=${args[i + 1]:-} ;;
        --json=*) json=${args[i]#--json=} ;;
    esac
done
: >"$tmp/perftest.jsonl"
for mib in 1 4 16 64; do
    bytes=$((mib << 20))
    # Over TCP a put_bw run pays about half a second whatever its count: 512 MiB at least.
    iters=$(((512 << 20) / bytes > 16 ? (512 << 20) / bytes : 16))
    for ((run = 1; run <= rounds; run++)); do
        port=$((port + 1))
        timeout 120 ip netns exec "$b" "$perftest" -p "$port" -c $((1 % $(nproc))) >"$tmp/perf-srv" 2>&1 &
        srv=$!
        for _ in $(seq 100); do
            ip netns exec "$b" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
            sleep 0.05
        done
        timeout 120 ip netns exec "$a" "$perftest" "$net.2" -p "$port" -c 0 -t ucp_put_bw -s "$bytes" \
            -n "$iters" -w $((iters / 10 + 1)) -v >"$tmp/perf-cli" 2>&1
        wait "$srv"
        python3 "$root/bench/report_multinode.py" perftest "$tmp/perf-cli" --test ucp_put_bw \
            --size "$bytes" --round "$run" --iters "$iters" >>"$tmp/perftest.jsonl"
    done
done
# The median over the runs per size (and their range), printed, and added to the JSON file.
python3 - "$tmp/perftest.jsonl" "$json" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["size"], []).append(r["median"])
figs = [{"test": "ucp_put_bw", "size": n, "gbps": statistics.median(g), "gbps_min": min(g),
         "gbps_max": max(g), "runs": len(g)} for n, g in sorted(runs.items())]
for f in figs:
    print("ucx_perftest ucp_put_bw %d MiB: %.3f GB/s (%.3f-%.3f over %d runs)"
          % (f["size"] >> 20, f["gbps"], f["gbps_min"], f["gbps_max"], f["runs"]))
if sys.argv[2]:
    with open(sys.argv[2]) as f:
        saved = json.load(f)
    saved["perftest"] = figs
    with open(sys.argv[2], "w") as f:
        json.dump(saved, f, indent=1)
PY
