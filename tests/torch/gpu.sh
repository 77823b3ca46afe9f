#!/usr/bin/env bash
# tests/torch/gpu.sh: the torch suites on this machine's NVIDIA GPU (what ctest's torch.gpu.*
# run), against an installed library, for a GPU machine without a Rust toolchain. The classes
# must be compiled against the torch that loads them, so libshmem_torch.so is built here, from
# cpp/torch alone, against this machine's torch and the installed libshmem.so.
#
# Usage:
#   tests/torch/gpu.sh --pydeps DIR      where the library is built (network): installs pytest
#                                        and its pure-Python dependencies into DIR (for a GPU
#                                        machine whose Python has no pytest; carry DIR there)
#   tests/torch/gpu.sh PREFIX [PYDEPS]   on the GPU machine: PREFIX is the installed library
#                                        (e.g. .gpu/install, below);
#                                        PYDEPS, a --pydeps folder (default: pydeps beside
#                                        PREFIX, e.g. .gpu/pydeps), is used when this Python
#                                        cannot import pytest. Runs the suites with the heap on
#                                        the GPU (SHMEM_DEVICE=cuda) under shmemrun at 1, 2 and
#                                        4 PEs and torchrun at 2, and the torch.distributed
#                                        backend's dist/gpu.py under torchrun at 2 and 4, each
#                                        bounded (RUN_TIMEOUT, 240 s).
# Environment: PYTHON, the Python whose torch is used (default python3); OUT, a folder where
# each run's log and summary.txt go (under torch-gpu/; default a folder of mktemp).
#
# For example, with the folder .gpu carried to the GPU machine (about 50 MiB with the sources):
#   here:  cmake --install build --prefix .gpu/install --strip && tests/torch/gpu.sh --pydeps .gpu/pydeps
#   there: tests/torch/gpu.sh .gpu/install
#
# Exit status: 0 when every run passed; 1 when one failed or the build did; 77, after
# "SKIPPED: no GPU (...)", when torch sees no GPU; 2 on a usage error. shmem.torch's test needs
# the shmem wheel, built for this Python, on PYTHONPATH; without it that one test is skipped.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PYTHON:-python3}

die() {
    echo "gpu.sh: $*" >&2
    exit 1
}

if [[ ${1:-} == --pydeps ]]; then
    dir=${2:?gpu.sh --pydeps DIR}
    "$py" -m pip install --quiet --no-compile --target "$dir" pytest ||
        die "pip could not install pytest into $dir"
    echo "gpu.sh: pytest in $dir ($(du -sh "$dir" | cut -f1));" \
        "on the GPU machine: tests/torch/gpu.sh PREFIX $dir"
    exit 0
fi
[[ $# -ge 1 && $# -le 2 && ${1:0:1} != - ]] || {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
}
prefix=$(realpath -- "$1")
pydeps=$(realpath -m -- "${2:-$prefix/../pydeps}")
[[ -x $prefix/bin/shmemrun && -e $prefix/lib/libshmem.so.0 ]] ||
    die "$prefix is not an installed library (no bin/shmemrun, lib/libshmem.so.0)"

. "$here/no_gpu.sh"
if why=$(no_gpu "$py"); then
    echo "SKIPPED: no GPU ($why)"
    exit 77
fi
extra_path=
if ! "$py" -c 'import pytest' 2>/dev/null; then
    [[ -d $pydeps ]] || die "$py has no pytest and there is no $pydeps: run" \
        "tests/torch/gpu.sh --pydeps DIR where pip works, carry DIR, and pass it"
    extra_path=$pydeps:
fi

results=${OUT:+$OUT/torch-gpu}
results=${results:-$(mktemp -d)}
mkdir -p "$results"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

torch_version=$("$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
echo "gpu.sh: building libshmem_torch.so against torch $torch_version and $prefix"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! { cmake -S "$root/cpp/torch" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DSHMEM_TORCH_PYTHON="$(command -v "$py")" &&
    cmake --build "$work/build" -j "$(nproc)"; } >"$results/build.log" 2>&1; then
    tail -n 30 "$results/build.log" >&2
    die "libshmem_torch.so did not build (log: $results/build.log)"
fi

export SHMEM_DEVICE=cuda SHMEM_TORCH_TEST_GPU=1 PYTHONDONTWRITEBYTECODE=1
export SHMEM_TORCH_PYTHON=$py SHMEM_SHMEMRUN=$prefix/bin/shmemrun
export SHMEM_TORCH_LIBRARY=$work/build/libshmem_torch.so
export PYTHONPATH=$extra_path$root/python:$here${PYTHONPATH:+:$PYTHONPATH}
export RUN_TIMEOUT=${RUN_TIMEOUT:-240}
unset SHMEM_CUDA_LIBRARY
failed=0
: >"$results/summary.txt"
# run NAME DIR COMMAND...: COMMAND in DIR, its output in NAME.log, a line in summary.txt.
run() {
    local name=$1 dir=$2 start status counts
    shift 2
    start=$(date +%s)
    if (cd "$dir" && "$@") >"$results/$name.log" 2>&1; then
        status=passed
    else
        status="FAILED ($?)"
        failed=1
    fi
    counts=$(grep -aEo '[0-9]+ passed[^=]*|OK \([0-9]+ checks' "$results/$name.log" | tail -n 1 || true)
    echo "$name: $status in $(($(date +%s) - start)) s, $counts" | tee -a "$results/summary.txt"
    [[ $status == passed ]] || tail -n 40 "$results/$name.log" >&2
}
for run in "shmemrun 1" "shmemrun 2" "shmemrun 4" "torchrun 2"; do
    read -r launcher npes <<<"$run"
    run "torch.gpu.$launcher.np$npes" "$here" ./run.sh "$launcher" "$npes"
done
# The torch.distributed backend on CUDA tensors (dist/gpu.py), with the module built above
# (it needs this Python's Python.h).
c10d=$(compgen -G "$work/build/python/shmem_torch/_c10d*.so" | head -n 1 || true)
if [[ -n $c10d ]]; then
    export SHMEM_TORCH_C10D=$c10d
    for npes in 2 4; do
        run "torch.dist.gpu.torchrun.np$npes" "$here/dist" ./run.sh torchrun "$npes" gpu.py
    done
else
    echo "torch.dist.gpu: FAILED: shmem_torch._c10d did not build (no Python.h for $py?; see" \
        "$results/build.log)" | tee -a "$results/summary.txt"
    failed=1
fi
echo "gpu.sh: logs in $results"
exit $failed
