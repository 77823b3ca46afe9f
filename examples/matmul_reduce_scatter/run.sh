#!/usr/bin/env bash
# Runs the matmul_reduce_scatter operator the CANN way: golden data, the run, the precision
# check.
#   run.sh -ranks N [-m M] [-k K] [-n N] [-blocks B] [-tile TM,TN] [-iters I] [-bin PROGRAM]
#          [-data DIR]
# -ranks: PEs (required); -m/-k/-n: the shapes (default 64, 32, 128); -blocks: kernel blocks
# per PE (default 4); -tile: output tile (default 32,32); -iters: launches, best time printed
# (default 1); -bin: the program (default build/matmul_reduce_scatter_op here); -data: keep the
# files in DIR (default: a temporary folder, removed afterwards). The launcher: see
# ../common/run_op.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ranks='' m=64 k=32 n=128 blocks=4 tile=32,32 iters=1 data=''
bin=$here/build/matmul_reduce_scatter_op
while (($#)); do
    case $1 in
        -ranks) ranks=${2:?-ranks needs a number}; shift 2 ;;
        -m) m=${2:?-m needs a number}; shift 2 ;;
        -k) k=${2:?-k needs a number}; shift 2 ;;
        -n) n=${2:?-n needs a number}; shift 2 ;;
        -blocks) blocks=${2:?-blocks needs a number}; shift 2 ;;
        -tile) tile=${2:?-tile needs TM,TN}; shift 2 ;;
        -iters) iters=${2:?-iters needs a number}; shift 2 ;;
        -bin) bin=${2:?-bin needs a program}; shift 2 ;;
        -data) data=${2:?-data needs a directory}; shift 2 ;;
        *) echo "run.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
done
[[ $tile =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]] || { echo "run.sh: -tile '$tile': give TM,TN" >&2; exit 2; }
op=matmul_reduce_scatter_op
source "$here/../common/run_op.sh"
python3 "$here/utils/gen_data.py" --ranks "$ranks" --m "$m" --k "$k" --n "$n" --out "$data"
"$launcher" -n "$ranks" --timeout 300 "$bin" --m "$m" --k "$k" --n "$n" --blocks "$blocks" \
    --tile-m "${tile%,*}" --tile-n "${tile#*,}" --iters "$iters" --data "$data"
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" --slice-rows "$m" \
    --row-len "$n" --rtol 1e-4 --atol 1e-4
