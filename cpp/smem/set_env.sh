#!/usr/bin/env bash
# set_env.sh: source it (`source <prefix>/memfabric_hybrid/set_env.sh`) to build and run
# programs written for memfabric_hybrid against this library: MEMFABRIC_HYBRID_HOME_PATH names
# the directory laid out as memfabric's (<arch>-linux/include/smem/host/,
# <arch>-linux/lib64/libmf_smem.so).
if [ -n "${BASH_SOURCE[0]:-}" ]; then
    _mf_home=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
else
    _mf_home=$(cd "$(dirname "$0")" && pwd)
fi
export MEMFABRIC_HYBRID_HOME_PATH=$_mf_home
_mf_lib=$_mf_home/$(uname -m)-linux/lib64
case ":${LD_LIBRARY_PATH:-}:" in
    *":$_mf_lib:"*) ;;
    *) export LD_LIBRARY_PATH=$_mf_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
unset _mf_home _mf_lib
