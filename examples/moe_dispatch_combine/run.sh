#!/usr/bin/env bash
# Runs the moe_dispatch_combine operator the CANN way: golden data, the run, the precision check.
#   run.sh -ranks N [-tokens T] [-hidden H] [-experts E] [-topk K] [-blocks B] [-iters I]
#          [-seed S] [-bin PROGRAM] [-data DIR]
# -ranks: PEs (required); -tokens: tokens per PE (default 64); -hidden: hidden size (default
# 128); -experts: experts in all, a multiple of N (default 8); -topk: experts per token
# (default 2); -blocks: kernel blocks per PE (default 4); -iters: launches, best time printed
# (default 1); -seed: the data's seed (default 1); -bin: the program (default
# build/moe_dispatch_combine_op here); -data: keep the files in DIR (default: a temporary
# folder, removed afterwards). The launcher: see ../common/run_op.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ranks='' tokens=64 hidden=128 experts=8 topk=2 blocks=4 iters=1 seed=1
bin=$here/build/moe_dispatch_combine_op data=''
while (($#)); do
    case $1 in
        -ranks) ranks=${2:?-ranks needs a number}; shift 2 ;;
        -tokens) tokens=${2:?-tokens needs a number}; shift 2 ;;
        -hidden) hidden=${2:?-hidden needs a number}; shift 2 ;;
        -experts) experts=${2:?-experts needs a number}; shift 2 ;;
        -topk) topk=${2:?-topk needs a number}; shift 2 ;;
        -blocks) blocks=${2:?-blocks needs a number}; shift 2 ;;
        -iters) iters=${2:?-iters needs a number}; shift 2 ;;
        -seed) seed=${2:?-seed needs a number}; shift 2 ;;
        -bin) bin=${2:?-bin needs a program}; shift 2 ;;
        -data) data=${2:?-data needs a directory}; shift 2 ;;
        *) echo "run.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
done
op=moe_dispatch_combine_op
source "$here/../common/run_op.sh"
python3 "$here/utils/gen_data.py" --ranks "$ranks" --tokens "$tokens" --hidden "$hidden" \
    --experts "$experts" --topk "$topk" --seed "$seed" --out "$data"
"$launcher" -n "$ranks" --timeout 60 "$bin" --tokens "$tokens" --hidden "$hidden" \
    --experts "$experts" --topk "$topk" --blocks "$blocks" --iters "$iters" --seed "$seed" \
    --data "$data"
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" --row-len "$hidden" \
    --rtol 1e-4 --atol 1e-5
