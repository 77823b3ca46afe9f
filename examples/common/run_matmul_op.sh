#!/usr/bin/env bash
# The run.sh of the matmul operators (matmul_allreduce, matmul_reduce_scatter, allgather_matmul):
#   run_matmul_op.sh OPERATOR_DIR PROGRAM all|slice [run.sh options...]
# Golden data (the operator's utils/gen_data.py), the run under shmemrun, the precision check
# (verify_result.py against every PE's whole output, or with `slice` its row slice of C). The
# options are each operator's run.sh's (see the comment at its top).
set -euo pipefail
here=$(cd "${1:?run_matmul_op.sh: give the operator folder}" && pwd)
op=${2:?run_matmul_op.sh: give the program name}
check=${3:?run_matmul_op.sh: give all or slice}
shift 3
ranks='' m=64 k=32 n=128 blocks=4 tile=32,32 iters=1 bin=$here/build/$op data=''
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
source "$here/../common/run_op.sh"
python3 "$here/utils/gen_data.py" --ranks "$ranks" --m "$m" --k "$k" --n "$n" --out "$data"
"$launcher" -n "$ranks" --timeout 300 "$bin" --m "$m" --k "$k" --n "$n" --blocks "$blocks" \
    --tile-m "${tile%,*}" --tile-n "${tile#*,}" --iters "$iters" --data "$data"
slice=()
[[ $check == slice ]] && slice=(--slice-rows "$m")
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" "${slice[@]}" \
    --row-len "$n" --rtol 1e-4 --atol 1e-4
