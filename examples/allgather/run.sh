#!/usr/bin/env bash
# Runs the allgather operator the CANN way: golden data, the run, the precision check.
#   run.sh -ranks N [-count C] [-blocks B] [-bin PROGRAM] [-data DIR]
# -ranks: PEs (required); -count: floats per PE (default 4096); -blocks: kernel blocks per PE
# (default 4); -bin: the program (default build/allgather_op here); -data: keep the files in
# DIR (default: a temporary folder, removed afterwards). The launcher is $SHMEMRUN, else
# $SHMEM_PREFIX/bin/shmemrun, else the source tree's install/bin/shmemrun, else shmemrun on PATH.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ranks='' count=4096 blocks=4 bin=$here/build/allgather_op data=''
while (($#)); do
    case $1 in
        -ranks) ranks=${2:?-ranks needs a number}; shift 2 ;;
        -count) count=${2:?-count needs a number}; shift 2 ;;
        -blocks) blocks=${2:?-blocks needs a number}; shift 2 ;;
        -bin) bin=${2:?-bin needs a program}; shift 2 ;;
        -data) data=${2:?-data needs a directory}; shift 2 ;;
        *) echo "run.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
done
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -ranks '$ranks': give a number of PEs" >&2; exit 2; }
[[ -x $bin ]] || { echo "run.sh: -bin $bin: not built (run build.sh)" >&2; exit 2; }
launcher=${SHMEMRUN:-}
if [[ -z $launcher ]]; then
    for c in "${SHMEM_PREFIX:-/nonexistent}/bin/shmemrun" "$here/../../install/bin/shmemrun"; do
        [[ -x $c ]] && { launcher=$c; break; }
    done
fi
launcher=${launcher:-$(command -v shmemrun || true)}
[[ -n $launcher ]] || { echo "run.sh: no shmemrun found: set SHMEMRUN or SHMEM_PREFIX" >&2; exit 2; }
if [[ -z $data ]]; then
    data=$(mktemp -d "${TMPDIR:-/tmp}/allgather_op.XXXXXX")
    trap 'rm -rf "$data"' EXIT
fi
python3 "$here/utils/gen_data.py" --ranks "$ranks" --count "$count" --out "$data"
"$launcher" -n "$ranks" --timeout 60 "$bin" --count "$count" --blocks "$blocks" --data "$data"
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" --rtol 0 --atol 0
