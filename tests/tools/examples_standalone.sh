#!/usr/bin/env bash
# examples_standalone.sh <examples-dir> <work-dir> <stage-dir>
# Each operator example (every folder of examples/ with a build.sh) as its users take it: its
# build.sh against the staged install (find_package(shmem), shmem::device), then its run.sh at
# 2 PEs with its default shapes under the staged launcher (golden data, the run, the check).
set -euo pipefail
examples=${1:?}; work=${2:?}; stage=${3:?}

rm -rf "$work"
mkdir -p "$work"
count=0
for dir in "$examples"/*/; do
    op=$(basename "$dir")
    [[ -x $dir/build.sh && -x $dir/run.sh ]] || continue
    echo "--- $op: build.sh -prefix <stage>"
    bash "$dir/build.sh" -prefix "$stage" -build "$work/$op" 2>&1 | tee "$work/$op.log"
    prog=$work/$op/${op}_op
    if [[ ! -x $prog ]]; then
        # An operator whose dependency (CBLAS) is missing skips itself at configure time.
        grep -q "$op: skipped" "$work/$op.log" || { echo "$op: no $prog built" >&2; exit 1; }
        continue
    fi
    echo "--- $op: run.sh -ranks 2"
    SHMEMRUN=$stage/bin/shmemrun bash "$dir/run.sh" -ranks 2 -bin "$prog"
    count=$((count + 1))
done
((count > 0)) || { echo "no operator example was built and run" >&2; exit 1; }
echo "OK: $count operator examples build against the install and pass their check"
