#!/usr/bin/env bash
# Runs the allgather operator the CANN way: golden data, the run, the precision check.
#   run.sh -ranks N [-count C] [-blocks B] [-bin PROGRAM] [-data DIR]
# -ranks: PEs (required); -count: floats per PE (default 4096); -blocks: kernel blocks per PE
# (default 4); -bin: the program (default build/allgather_op here); -data: keep the files in
# DIR (default: a temporary folder, removed afterwards). The launcher: see
# ../common/run_op.sh.
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
op=allgather_op
source "$here/../common/run_op.sh"
python3 "$here/utils/gen_data.py" --ranks "$ranks" --count "$count" --out "$data"
"$launcher" -n "$ranks" --timeout 60 "$bin" --count "$count" --blocks "$blocks" --data "$data"
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" --rtol 0 --atol 0
