#!/usr/bin/env bash
# bench-mf-trans-netns.sh PYTHON [ARGS...]
#
# bench/mf_trans_vs_mooncake.py with its receiver and sender in two network namespaces joined
# by a veth pair (tests/multinode/netns_pair.sh), as on two nodes: our engine over UCX
# (UCX_TLS=tcp over the veth, named shmem0 in both), Mooncake's over its TCP transport. PYTHON
# is the interpreter holding both engines (e.g. ~/.cache/shmem/mooncake-venv/bin/python); ARGS
# go to the script (--rounds, --json, --engines, ...). Needs root and iproute2 (status 77
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
"$python" "$root/bench/mf_trans_vs_mooncake.py" --netns "$b,$a" --hosts "$net.2,$net.1" "$@"
