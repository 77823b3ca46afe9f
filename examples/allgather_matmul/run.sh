#!/usr/bin/env bash
# Runs the allgather_matmul operator the CANN way: golden data, the run, the precision check.
#   run.sh -ranks N [-m M] [-k K] [-n N] [-blocks B] [-tile TM,TN] [-iters I] [-bin PROGRAM]
#          [-data DIR]
# -ranks: PEs (required); -m/-k/-n: the shapes (default 64, 32, 128; A's rows are split over
# the PEs, unevenly when -ranks does not divide M); -blocks: kernel blocks per PE (default 4);
# -tile: rows per pushed chunk of A and columns per output tile (default 32,32); -iters:
# launches, best time printed (default 1); -bin: the program (default build/allgather_matmul_op
# here); -data: keep the files in DIR (default: a temporary folder, removed afterwards). The
# launcher: see ../common/run_op.sh.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/../common/run_matmul_op.sh" "$here" allgather_matmul_op all "$@"
