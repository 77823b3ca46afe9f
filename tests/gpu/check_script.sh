#!/usr/bin/env bash
# ctest scripts.gpu_check: scripts/gpu-check.sh on a machine without a GPU, its --run half
# against the staged install tree (ctest install.stage) as a pack:
#   - the script parses (bash -n; shellcheck too where it is installed) and --help answers;
#   - --run on a folder with no pack exits 1 at once, saying so;
#   - --run --build-only configures tests/gpu as a project of its own against the pack with this
#     build's nvcc and builds every gpu test program (what the GPU machine does first);
#   - where NVIDIA's driver finds no GPU, --run exits 1 naming why, before building anything.
# Usage: check_script.sh <source tree> <stage dir> <scratch dir> <nvcc>
set -u
src=$1 stage=$2 work=$3 nvcc=$4
script=$src/scripts/gpu-check.sh
rm -rf "$work" && mkdir -p "$work"
unset OUT
fails=0 passes=0
fail() { echo "scripts.gpu_check: FAILED: $*"; fails=$((fails + 1)); }
ok() { echo "scripts.gpu_check: ok: $*"; passes=$((passes + 1)); }

bash -n "$script" && ok "bash -n" || fail "bash -n $script"
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -S warning "$script" "$0" && ok "shellcheck" || fail "shellcheck"
else
    echo "scripts.gpu_check: shellcheck not installed: bash -n only"
fi
bash "$script" --help | grep -q -- '--pack \[DIR\]' && ok "--help" || fail "--help"

out=$(timeout 60 bash "$script" --run "$work/empty" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q "no pack at $work/empty" <<<"$out"; then
    ok "no pack: exit 1, said so"
else
    fail "no pack: exit $rc, said: $out"
fi

# The staged tree stands for a pack.
mkdir -p "$work/pack"
ln -s "$stage" "$work/pack/install"
out=$(env NVCC="$nvcc" timeout 600 bash "$script" --run "$work/pack" --build-only -j 2 2>&1)
rc=$?
programs="gpu_kernels gpu_examples gpu_on_stream gpu_strict matmul_allreduce_cuda"
programs="$programs allgather_matmul_cuda matmul_reduce_scatter_cuda moe_dispatch_combine_cuda"
built=1
for p in $programs; do [ -x "$work/pack/build/$p" ] || built=0; done
if [ $rc -eq 0 ] && grep -q '^built: 18 gpu tests' <<<"$out" && [ $built = 1 ]; then
    ok "--run --build-only: tests/gpu built alone against the pack"
else
    fail "--run --build-only: exit $rc, said: $out"
    cat "$work/pack/results/configure.log" "$work/pack/results/build.log" 2>/dev/null | tail -n 40
fi

if "$work/pack/build/gpu_probe" >/dev/null 2>&1; then
    echo "scripts.gpu_check: this machine has a GPU: --run is not tried here (scripts/gpu-check.sh)"
else
    rm -rf "$work/pack/build"
    out=$(env NVCC="$nvcc" timeout 120 bash "$script" --run "$work/pack" --no-bench 2>&1)
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'no usable GPU: SKIPPED: no GPU (' <<<"$out" &&
        [ ! -d "$work/pack/build" ]; then
        ok "no GPU: exit 1 before building, naming why"
    else
        fail "no GPU: exit $rc, said: $out"
    fi
fi

echo "scripts.gpu_check: $passes passed, $fails failed"
[ $fails -eq 0 ]
