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
# (Results of earlier runs kept ucx_perftest's runs after the whole comparison in the --json
# file's "perftest"; --table-from still reads them.) Both sides are pinned alike: the
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
[ -n "$perftest" ] && beside=(--perftest-beside "$perftest")
"$python" "$root/bench/mf_trans_vs_mooncake.py" --netns "$b,$a" --hosts "$net.2,$net.1" --pin \
    "${beside[@]}" "$@"
