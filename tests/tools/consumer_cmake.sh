#!/usr/bin/env bash
# consumer_cmake.sh <cmake> <generator> <cc> <cxx> <consumer-src> <work-dir> <stage-dir>
# Configures and builds tests/consumer against the staged install with find_package(shmem),
# then runs both programs under the staged launcher on 2 PEs, and mf_general (shmem::mf_smem,
# memfabric's API) as a plain process.
set -euo pipefail
cmake=${1:?}; generator=${2:?}; cc=${3:?}; cxx=${4:?}; src=${5:?}; work=${6:?}; stage=${7:?}

rm -rf "$work"
"$cmake" -S "$src" -B "$work" -G "$generator" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$stage" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DSHMEM_EXPECTED_PREFIX="$stage"
"$cmake" --build "$work"

for prog in ring_c ring_cxx; do
    echo "--- shmemrun -n 2 $prog"
    "$stage/bin/shmemrun" -n 2 --timeout 60 "$work/$prog"
done
echo "--- mf_general"
"$work/mf_general"
echo "OK: find_package(shmem) consumer builds and runs"
