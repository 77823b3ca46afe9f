#!/usr/bin/env bash
# scripts/bench-torch-dist.sh: the torch.distributed backend "shmem" against gloo on ordinary
# CPU tensors (bench/torch_dist.py). For each round it runs one torchrun job per rank count (2
# then 4 ranks in odd rounds, 4 then 2 in even ones); in each job every figure is measured by
# the same processes, one backend after the other:
#   collectives  all_reduce, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single
#                (float32, bytes per rank from 4 KiB to 64 MiB, times 4 each step): the median
#                time per call of "shmem", of gloo and of torch's own floor (a backend that
#                returns at once, which bounds any ratio at small sizes)
#   DDP          a training step of a 10.2M-parameter MLP (4 x Linear(1600, 1600)) with each
#                backend: step time and the share beyond the floor's step (communication)
# then writes bench/results/<date>-<host>-torch-dist/ (raw/round<R>.jsonl, raw/env.json,
# raw/failures.jsonl, logs/, table.md, summary.json, torch_dist.png) and the "torch.distributed
# backend against gloo" section of docs/performance.md (bench/report_torch_dist.py).
#
# Usage: scripts/bench-torch-dist.sh [options]
#   (no option)       3 rounds, 4 KiB..64 MiB, 20 DDP steps per backend (~5 min on 2 cores)
#   --quick           1 round of 4 KiB, 64 KiB, 1 MiB and 16 MiB, 5 DDP steps (~2 min)
#   --smoke           1 round of 4 KiB, a few calls each, a tiny MLP; renders the table to a
#                     temporary folder and checks that every row is there (the
#                     bench.torch_dist ctest: rows, not timings)
#   --rounds N        rounds
#   --ranks LIST      rank counts, comma-separated (default 2,4)
#   --out DIR         result folder (default bench/results/<date>-<host>-torch-dist[-quick])
#   --prefix DIR      the library's install tree: DIR/python/shmem_torch (with _c10d) and
#                     DIR/lib/libshmem_torch.so (default ./install)
#   --build DIR       a build tree instead: DIR/cpp/torch/{libshmem_torch.so,python/shmem_torch},
#                     with this tree's python/ (default ./build when ./install has no shmem_torch)
#   --from-env        use PYTHONPATH, SHMEM_TORCH_LIBRARY and SHMEM_TORCH_C10D as set (ctest)
#   --python PATH     the Python with torch (default $SHMEM_TORCH_PYTHON, else
#                     ~/.cache/shmem/venv/bin/python, the one scripts/build.sh -torch makes)
#   --no-docs         leave docs/performance.md alone
#   -h, --help        this text
# RUN_TIMEOUT=S in the environment: seconds one torchrun job may take (default 2400, --quick
# 900, --smoke 150); a job that fails or times out is recorded in raw/failures.jsonl and its
# figures are missing from the tables. THP_MEM_ALLOC_ENABLE=1 (torch's: tensors of 2 MiB and
# more in huge pages, for both backends) turns on the backend's single-copy path for large
# collectives where the kernel's THP mode is madvise; SHMEM_TORCH_DIRECT=0/1 forces either path.
# env.json and the report's header record them.
# Without a Python that imports torch, exits with 77 (ctest's skip). Other backends: torch from
# PyPI is built without MPI (torch.distributed.is_mpi_available() is False) and oneCCL's torch
# binding is not on PyPI; env.json records what this run's torch has.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench

mode=full
rounds=
ranks_opt=2,4
out=
prefix=
build=
from_env=0
py=${SHMEM_TORCH_PYTHON:-$HOME/.cache/shmem/venv/bin/python}
with_docs=1
cmdline="scripts/bench-torch-dist.sh${*:+ $*}"

# die, usage, log
source "$ROOT/scripts/lib/bench.sh"

while (($#)); do
    case $1 in
        --quick) mode=quick ;;
        --smoke) mode=smoke ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift ;;
        --ranks) ranks_opt=${2:?--ranks needs a list}; shift ;;
        --out) out=$(realpath -m -- "${2:?--out needs a folder}"); shift ;;
        --prefix) prefix=$(realpath -m -- "${2:?--prefix needs a folder}"); shift ;;
        --build) build=$(realpath -m -- "${2:?--build needs a folder}"); shift ;;
        --from-env) from_env=1 ;;
        --python) py=${2:?--python needs a path}; shift ;;
        --no-docs) with_docs=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done
# mode: rounds, torch_dist.py's arguments, the job time limit
case $mode in
    full)
        rounds=${rounds:-3} limit=${RUN_TIMEOUT:-2400}
        ARGS=(--min-bytes 4K --max-bytes 64M --step 4 --budget 0.3 --ddp-steps 20) ;;
    quick)
        rounds=${rounds:-1} limit=${RUN_TIMEOUT:-900}
        ARGS=(--min-bytes 4K --max-bytes 16M --step 16 --budget 0.1 --ddp-steps 5) ;;
    smoke)
        rounds=${rounds:-1} limit=${RUN_TIMEOUT:-150} with_docs=0
        ARGS=(--min-bytes 4K --max-bytes 4K --budget 0.01 --ddp-steps 1 --ddp-width 64) ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, got '$rounds'"
IFS=, read -r -a RANKS <<<"$ranks_opt"
((${#RANKS[@]})) || die "--ranks: no rank count given"
for n in "${RANKS[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ && $n -ge 2 ]] || die "--ranks: '$n' is not a rank count of 2 or more"
done
((from_env + (${#prefix} > 0) + (${#build} > 0) <= 1)) ||
    die "--prefix, --build and --from-env each name where shmem_torch is: give one"

if ! [[ -x $py ]] || ! "$py" -c 'import torch.distributed' 2>/dev/null; then
    echo "SKIP: no Python that imports torch at '$py' (scripts/build.sh -torch makes one; or --python)"
    exit 77
fi

# --- where shmem_torch is ------------------------------------------------------------------------

if ((from_env)); then
    [[ -n ${SHMEM_TORCH_C10D:-} && -n ${PYTHONPATH:-} ]] ||
        die "--from-env: PYTHONPATH and SHMEM_TORCH_C10D must be set"
    where="PYTHONPATH=$PYTHONPATH, SHMEM_TORCH_C10D=$SHMEM_TORCH_C10D"
else
    if [[ -z $prefix && -z $build ]]; then
        if [[ -d $ROOT/install/python/shmem_torch ]]; then
            prefix=$ROOT/install
        elif [[ -d $ROOT/build/cpp/torch/python/shmem_torch ]]; then
            build=$ROOT/build
        else
            die "no shmem_torch in $ROOT/install/python or $ROOT/build/cpp/torch/python" \
                "(scripts/build.sh -torch builds it; or --prefix/--build)"
        fi
    fi
    if [[ -n $prefix ]]; then
        [[ -d $prefix/python/shmem_torch ]] || die "--prefix $prefix: no python/shmem_torch there"
        export PYTHONPATH=$prefix/python${PYTHONPATH:+:$PYTHONPATH}
        unset SHMEM_TORCH_C10D SHMEM_TORCH_LIBRARY
        where="install tree $prefix"
    else
        c10d=$(compgen -G "$build/cpp/torch/python/shmem_torch/_c10d*.so" | head -n 1 || true)
        [[ -n $c10d && -f $build/cpp/torch/libshmem_torch.so ]] ||
            die "--build $build: no cpp/torch/libshmem_torch.so and python/shmem_torch/_c10d*.so"
        export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
        export SHMEM_TORCH_LIBRARY=$build/cpp/torch/libshmem_torch.so SHMEM_TORCH_C10D=$c10d
        where="build tree $build"
    fi
fi
export PYTHONDONTWRITEBYTECODE=1

host=$(hostname -s 2>/dev/null || hostname)
out_is_tmp=0
if [[ -z $out ]]; then
    case $mode in
        full) out=$BENCH/results/$(date +%F)-$host-torch-dist ;;
        quick) out=$BENCH/results/$(date +%F)-$host-torch-dist-quick ;;
        smoke) out=$(mktemp -d /tmp/shmem-bench-torch-dist.XXXXXX) out_is_tmp=1 ;;
    esac
fi
raw=$out/raw
logs=$out/logs
rm -rf "$raw" "$logs"
mkdir -p "$raw" "$logs"
: >"$raw/failures.jsonl"
child=
cleanup() {
    [[ -n $child ]] && kill "$child" 2>/dev/null # a timeout(1): it stops torchrun and the ranks
    ((out_is_tmp)) && rm -rf "$out"
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the run's environment -----------------------------------------------------------------------

commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
[[ -n $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]] && dirty=true
"$py" - "$raw/env.json" "$mode" "$rounds" "$cmdline" "$commit" "$dirty" "$host" "$where" \
    "${RANKS[*]}" <<'EOF'
import json, os, platform, subprocess, sys
import torch
import torch.distributed as dist
path, mode, rounds, command, commit, dirty, host, where, ranks = sys.argv[1:]
def sh(c):
    return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
try:
    import oneccl_bindings_for_pytorch  # noqa: F401
    ccl = "oneccl_bindings_for_pytorch is installed but not measured by this run"
except ImportError:
    ccl = ("oneCCL: oneccl_bindings_for_pytorch is not installed (not on PyPI; PyPI has only "
           "Intel's oneccl runtime, without torch's binding)")
mpi = dist.is_mpi_available()
thp = sh("cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null") or "unknown"
data_path = ("transparent huge pages `%s`, THP_MEM_ALLOC_ENABLE=%s, SHMEM_TORCH_DIRECT=%s, "
             "SHMEM_TORCH_DIRECT_MIN=%s (docs/pytorch.md, \"Single copy on one node\")" % (
                 thp, *(os.environ.get(v, "unset") for v in (
                     "THP_MEM_ALLOC_ENABLE", "SHMEM_TORCH_DIRECT", "SHMEM_TORCH_DIRECT_MIN"))))
json.dump({
    "date": sh("date -u +%FT%TZ"), "host": host, "mode": mode, "rounds": int(rounds),
    "command": command, "cpu": sh("lscpu | sed -n 's/^Model name: *//p'"),
    "cpus_online": os.cpu_count(), "kernel": platform.release(), "load": sh("cat /proc/loadavg"),
    "shmem_commit": commit, "shmem_tree_dirty": dirty == "true", "shmem_torch": where,
    "torch": torch.__version__, "python": platform.python_version(),
    "ranks": [int(n) for n in ranks.split()], "mpi_available": mpi, "data_path": data_path,
    "other_backends": "Open MPI's `mpi` backend: torch.distributed.is_mpi_available() is %s in "
                      "torch %s%s; %s." % (mpi, torch.__version__,
                                          "" if mpi else " (built without MPI)", ccl),
}, open(path, "w"), indent=1)
EOF

# --- the rounds ----------------------------------------------------------------------------------

run_job() { # $1 round, $2 ranks
    local round=$1 n=$2 rc=0 logf=$logs/round$1-np$2.log
    log "round $round, $n ranks"
    timeout -k 10 "$limit" "$py" -m torch.distributed.run --standalone --nproc-per-node "$n" \
        "$BENCH/torch_dist.py" "${ARGS[@]}" --json "$raw/round$round.jsonl" --round "$round" \
        >"$logf" 2>&1 &
    child=$!
    wait "$child" || rc=$?
    child=
    grep -v '^W[0-9]\{4\} \|OMP_NUM_THREADS\|^\*\+$' "$logf" || true
    if ((rc)); then
        echo "round $round, $n ranks: exit status $rc (log: $logf)"
        "$py" - "$n" "$round" "$rc" "$logf" >>"$raw/failures.jsonl" <<'EOF'
import json, sys
n, rnd, rc, logf = sys.argv[1:]
lines = [l.strip() for l in open(logf, errors="replace") if l.strip()]
errors = [l for l in lines if "Error" in l or "error" in l]
why = (errors or lines or ["(no output)"])[-1]
if rc in ("124", "137"):
    why = "timed out (RUN_TIMEOUT): " + why
print(json.dumps({"ranks": int(n), "round": int(rnd), "rc": int(rc), "why": why}))
EOF
    fi
}

start=$SECONDS
log "$mode run, $rounds round(s), ranks ${RANKS[*]}, shmem_torch from $where -> $out"
for ((round = 1; round <= rounds; round++)); do
    order=("${RANKS[@]}")
    if ((round % 2 == 0)); then
        mapfile -t order < <(printf '%s\n' "${RANKS[@]}" | tac)
    fi
    for n in "${order[@]}"; do
        run_job "$round" "$n"
    done
done
log "measured in $((SECONDS - start)) s"

# --- the report ----------------------------------------------------------------------------------

# matplotlib for the plot: the system python3's, else the torch Python's; without it, no plot.
report_py=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && "$py" -c 'import matplotlib' 2>/dev/null; then
    report_py=$py
fi
report=("$report_py" "$BENCH/report_torch_dist.py" render "$out")
((with_docs)) && report+=(--docs "$ROOT/docs/performance.md")
[[ $mode == smoke ]] && report+=(--check)
"${report[@]}"
if [[ $mode == smoke ]]; then
    cat "$out/table.md"
fi
