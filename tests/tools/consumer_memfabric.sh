#!/usr/bin/env bash
# consumer_memfabric.sh <cc> <consumer-src> <work-dir> <stage-dir>
# Builds mf_general.c the way memfabric_hybrid's README builds a program: source set_env.sh,
# then -I$MEMFABRIC_HYBRID_HOME_PATH/<arch>-linux/include -L.../lib64 -lmf_smem; runs it with
# the environment set_env.sh gives (no other LD_LIBRARY_PATH).
set -euo pipefail
cc=${1:?}; src=${2:?}; work=${3:?}; stage=${4:?}

rm -rf "$work"
mkdir -p "$work"
unset LD_LIBRARY_PATH LD_PRELOAD MEMFABRIC_HYBRID_HOME_PATH
# shellcheck source=/dev/null
source "$stage/memfabric_hybrid/set_env.sh"
echo "MEMFABRIC_HYBRID_HOME_PATH=$MEMFABRIC_HYBRID_HOME_PATH"
[[ $MEMFABRIC_HYBRID_HOME_PATH -ef $stage/memfabric_hybrid ]] || {
    echo "FAIL: set_env.sh names $MEMFABRIC_HYBRID_HOME_PATH, not $stage/memfabric_hybrid"; exit 1; }
home=$MEMFABRIC_HYBRID_HOME_PATH/$(uname -m)-linux
for f in include/smem/host/smem.h include/smem/host/smem_bm.h include/smem/host/smem_bm_def.h \
         include/smem/host/smem_shm.h include/smem/host/smem_shm_def.h lib64/libmf_smem.so; do
    [[ -e $home/$f ]] || { echo "FAIL: $home lacks $f"; exit 1; }
done
"$cc" -O2 "$src/mf_general.c" -o "$work/mf_general" -I"$home/include" -L"$home/lib64" -lmf_smem
"$work/mf_general"
echo "OK: a program built as memfabric's README says runs"
