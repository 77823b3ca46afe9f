#!/usr/bin/env bash
# consumer_oshcc.sh <cc> <cxx> <consumer-src> <work-dir> <stage-dir>
# Builds the consumer programs with the staged oshcc/oshc++ (C: compile and link in two steps,
# C++: in one) and runs them under the staged oshrun and shmemrun on 2 PEs.
set -euo pipefail
cc=${1:?}; cxx=${2:?}; src=${3:?}; work=${4:?}; stage=${5:?}
export SHMEM_CC=$cc SHMEM_CXX=$cxx

rm -rf "$work"
mkdir -p "$work"

stage_real=$(cd "$stage" && pwd -P)   # the wrapper resolves its own location
show=$("$stage/bin/oshcc" -show -c x.c)
echo "oshcc -show -c x.c: $show"
case $show in
    *-lshmem*) echo "FAIL: a compile-only command has link flags"; exit 1 ;;
    *"-I$stage_real/include"*) ;;
    *) echo "FAIL: no -I$stage_real/include in: $show"; exit 1 ;;
esac

"$stage/bin/oshcc" -O2 -Wall -c "$src/ring.c" -o "$work/ring_c.o"
"$stage/bin/oshcc" "$work/ring_c.o" -o "$work/ring_c"
"$stage/bin/oshc++" -O2 -Wall "$src/ring.cpp" -o "$work/ring_cxx"

echo "--- oshrun -n 2 ring_c"
"$stage/bin/oshrun" -n 2 --timeout 60 "$work/ring_c"
echo "--- shmemrun -n 2 ring_cxx"
"$stage/bin/shmemrun" -n 2 --timeout 60 "$work/ring_cxx"
echo "OK: oshcc/oshc++ programs build and run"
