#!/usr/bin/env bash
# Runs the kv_shuffle operator the CANN way: golden data, the run, the exactness check.
#   run.sh -ranks N [-total T] [-bsize S] [-blocks B] [-seed N] [-bin PROGRAM] [-data DIR]
# -ranks: PEs (required); -total: KV blocks in all (default 64); -bsize: floats per KV block
# (default 256); -blocks: kernel blocks per PE (default 4); -seed: the mapping's seed (default 1);
# -bin: the program (default build/kv_shuffle_op here); -data: keep the files in DIR (default: a
# temporary folder, removed afterwards). The launcher: see
# ../common/run_op.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ranks='' total=64 bsize=256 blocks=4 seed=1 bin=$here/build/kv_shuffle_op data=''
while (($#)); do
    case $1 in
        -ranks) ranks=${2:?-ranks needs a number}; shift 2 ;;
        -total) total=${2:?-total needs a number}; shift 2 ;;
        -bsize) bsize=${2:?-bsize needs a number}; shift 2 ;;
        -blocks) blocks=${2:?-blocks needs a number}; shift 2 ;;
        -seed) seed=${2:?-seed needs a number}; shift 2 ;;
        -bin) bin=${2:?-bin needs a program}; shift 2 ;;
        -data) data=${2:?-data needs a directory}; shift 2 ;;
        *) echo "run.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
done
op=kv_shuffle_op
source "$here/../common/run_op.sh"
python3 "$here/utils/gen_data.py" --ranks "$ranks" --total "$total" --bsize "$bsize" \
    --seed "$seed" --out "$data"
"$launcher" -n "$ranks" --timeout 60 "$bin" --total "$total" --bsize "$bsize" --blocks "$blocks" \
    --seed "$seed" --data "$data"
python3 "$here/../common/verify_result.py" --ranks "$ranks" --dir "$data" --rtol 0 --atol 0
