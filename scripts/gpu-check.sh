#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU tests and benchmarks on a machine with an NVIDIA GPU, in one
# command, for a GPU machine that has nvcc and cmake but no Rust toolchain: the library is built
# where Rust is and carried there.
#
# Usage:
#   scripts/gpu-check.sh --pack [DIR]   here (Rust, no GPU needed): build and install the library
#                                       (./build and scripts/build.sh's settings when ./build
#                                       exists, else scripts/build.sh -examples), and stage into
#                                       DIR (default .gpu, git-ignored) what must travel: the
#                                       install tree, stripped, and DIR/pack.txt (commit, sizes).
#                                       Checks that DIR and the source tree together stay under
#                                       $GPU_CHECK_MAX_MIB MiB (default 64), one small copy.
#   scripts/gpu-check.sh --run [DIR] [options]
#                                       there (GPU, nvcc, cmake; no cargo): configure tests/gpu as
#                                       a project of its own against DIR/install, build it with
#                                       every core into DIR/build, run `ctest -L gpu` (each test
#                                       at 2 and 4 PEs on the one GPU), the torch suites
#                                       (tests/torch/gpu.sh), then the benchmarks
#                                       against NVSHMEM (scripts/bench-cuda.sh --prefix
#                                       DIR/install), and print a summary. Everything it writes
#                                       for a reader goes to $OUT/gpu-check/ when OUT is set
#                                       (ctest's log and JUnit file, the bench results, the
#                                       summary), else to DIR/results/.
#     --no-bench      the tests only
#     --no-tests      the benchmarks only (with --quick: their short sweeps)
#     --no-torch      no torch suites (tests/torch/gpu.sh, run after ctest: libshmem_torch.so
#                     built there against that machine's torch, the torch suites with the heap
#                     on the GPU at 1, 2 and 4 PEs)
#     --quick         the benchmarks' short sweeps (scripts/bench-cuda.sh --quick)
#     --mps           run the tests under a private CUDA MPS daemon, so that the PEs' kernels
#                     share the GPU at once; without it they take turns (time slices), the
#                     shape a GPU without MPS gives (the benchmarks start their own daemon)
#     --build-only    configure and build the tests, then stop: no GPU needed (this is how CI's
#                     machine checks the half of --run it can)
#     -j N            build jobs (default: every core)
#     -- ARG...       the rest goes to scripts/bench-cuda.sh (e.g. -- --no-nvshmem --npes 4)
#   -h, --help        this text
#
# It stops at once, saying what is missing, when the pack is not there or not loadable on this
# machine (glibc, libstdc++), when no nvcc or cmake is found, or (for the tests and benchmarks)
# when NVIDIA's driver finds no GPU (tests/gpu/gpu_probe.c, compiled first with cc). On the GPU
# machine a skipped test is a failure: every gpu test must run there.
#
# nvcc, first found: $NVCC; `nvcc` on PATH; $CUDA_HOME/bin, /usr/local/cuda/bin; the
# nvidia-cuda-nvcc wheel (nvidia/cu*/bin/nvcc) in python3's site-packages or ./build/venv.
# CUDA architecture: $GPU_CHECK_CUDA_ARCH (default 90, the H100's).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
max_mib=${GPU_CHECK_MAX_MIB:-64}

note() { echo "gpu-check: $*" >&2; }
die() {
    echo "gpu-check: error: $*" >&2
    exit 1
}
# find_nvcc, mps_start, mps_stop.
source "$root/scripts/lib/cuda.sh"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

mode="" dir="" bench=1 tests=1 torch=1 quick=0 build_only=0 mps=0 bench_extra=() jobs=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
    case "$1" in
    --pack | --run)
        [ -z "$mode" ] || die "give one of --pack and --run"
        mode=${1#--}
        if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then dir=$2; shift; fi
        ;;
    --no-bench) bench=0 ;;
    --no-tests) tests=0 ;;
    --no-torch) torch=0 ;;
    --quick) quick=1 ;;
    --mps) mps=1 ;;
    --build-only) build_only=1 ;;
    -j)
        [ $# -gt 1 ] || die "-j needs a number"
        jobs=$2
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    --)
        shift
        bench_extra=("$@")
        break
        ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
[ -n "$mode" ] || { usage >&2; exit 2; }
case "$jobs" in '' | *[!0-9]*) die "-j $jobs: not a number" ;; esac
dir=$(realpath -m -- "${dir:-$root/.gpu}")

# Bytes of the files git tracks or would add: the source tree that goes with DIR.
source_bytes() {
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
}

# ---- --pack: here, where cargo builds the library ----------------------------------------------
if [ "$mode" = pack ]; then
    case "$dir" in
    "$root"/*) ;;
    *) note "DIR $dir is outside the repository: copy it with the source tree to the GPU machine" ;;
    esac
    build_dir=$root/build
    if [ -f "$build_dir/CMakeCache.txt" ]; then
        note "building the library in $build_dir"
        cmake --build "$build_dir" --target shmem -j "$jobs" >/dev/null ||
            die "cmake --build $build_dir --target shmem failed"
    else
        note "no $build_dir: scripts/build.sh -examples (the library, shmemrun, the demo)"
        "$root/scripts/build.sh" -examples || die "scripts/build.sh -examples failed"
    fi
    build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
    [ "$build_type" = Release ] ||
        note "$build_dir is a ${build_type:-default} build: the benchmarks want Release (scripts/build.sh)"
    rm -rf "$dir"
    mkdir -p "$dir"
    cmake --install "$build_dir" --prefix "$dir/install" >/dev/null ||
        die "cmake --install $build_dir --prefix $dir/install failed"
    # Symbols are for debuggers: the GPU machine needs the code only.
    while IFS= read -r -d '' f; do
        if [ "$(head -c 4 "$f" | tail -c 3)" = ELF ]; then strip --strip-unneeded "$f"; fi
    done < <(find "$dir/install" -type f \( -perm -u+x -o -name '*.so*' \) -print0)
    [ -x "$dir/install/bin/shmemrun" ] || die "the install tree has no bin/shmemrun"
    glibc=$(objdump -T "$dir"/install/lib/libshmem.so* "$dir/install/bin/shmemrun" 2>/dev/null |
        grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
    glibcxx=$(objdump -T "$dir"/install/lib/libshmem.so* 2>/dev/null |
        grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -n 1)
    pack_bytes=$(du -sb "$dir" | cut -f1)
    src_bytes=$(source_bytes)
    total_mib=$(((pack_bytes + src_bytes + 1048575) / 1048576))
    {
        echo "commit: $(git -C "$root" describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)"
        echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), ${build_type:-default} build"
        echo "needs: ${glibc:-?} and ${glibcxx:-?} (libc6, libstdc++6)"
        echo "size: pack $((pack_bytes / 1024)) KiB, source $((src_bytes / 1024)) KiB"
    } >"$dir/pack.txt"
    [ "$total_mib" -le "$max_mib" ] ||
        die "$dir ($((pack_bytes / 1048576)) MiB) and the source tree ($((src_bytes / 1048576)) MiB) exceed ${max_mib} MiB (GPU_CHECK_MAX_MIB)"
    rel=${dir#"$root"/}
    note "packed $dir: $(sed -n 's/^size: //p' "$dir/pack.txt"), ${total_mib} MiB with the source"
    note "on the GPU machine, from the repository root: scripts/gpu-check.sh --run $rel"
    note "(the tests alone: --run $rel --no-bench; the benchmarks' short sweeps alone: --run $rel --no-tests --quick)"
    exit 0
fi

# ---- --run: on the GPU machine ------------------------------------------------------------------
prefix=$dir/install
[ -x "$prefix/bin/shmemrun" ] ||
    die "no pack at $dir (no $prefix/bin/shmemrun): run scripts/gpu-check.sh --pack $dir where Rust is, and copy $dir here with the source tree"
[ -f "$dir/pack.txt" ] && note "pack: $(sed -n 's/^commit: //p' "$dir/pack.txt" | cut -c1-12), $(sed -n 's/^needs: //p' "$dir/pack.txt")"
if ! loaded=$("$prefix/bin/shmemrun" --version 2>&1); then
    die "the packed shmemrun does not run here: $loaded"
fi
missing_libs=$(ldd "$prefix"/lib/libshmem.so.0 2>&1 | grep -E 'not found|version .* not found' || true)
[ -z "$missing_libs" ] || die "the packed libshmem.so cannot load here: $missing_libs"

command -v cmake >/dev/null 2>&1 || die "cmake not found (pip install cmake, or the system's)"
nvcc=$(find_nvcc "$root")
[ -n "$nvcc" ] ||
    die "nvcc not found${NVCC:+ (NVCC=$NVCC is not executable)}: set NVCC, put CUDA's bin on PATH, or pip install nvidia-cuda-nvcc"
release=$("$nvcc" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)
note "nvcc: $nvcc (CUDA $release)"

out=${OUT:+$OUT/gpu-check}
out=${out:-$dir/results}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# The GPU, asked before anything slow: the probe compiled with cc, as its test builds it.
probe_line=""
if [ "$build_only" = 0 ]; then
    probe=$dir/gpu_probe
    c_compiler=${CC:-cc}
    command -v "$c_compiler" >/dev/null 2>&1 || c_compiler=gcc
    "$c_compiler" -O2 -DGPU_PROBE_CUDA_MAJOR="${release%%.*}" "$root/tests/gpu/gpu_probe.c" \
        -o "$probe" -ldl || die "cannot compile tests/gpu/gpu_probe.c with $c_compiler"
    if ! probe_line=$("$probe"); then
        die "no usable GPU: ${probe_line:-the probe failed}"
    fi
    say "$probe_line"
fi

# ---- build tests/gpu against the pack ------------------------------------------------------------
build=$dir/build
build_tests() {
    if [ -f "$build/CMakeCache.txt" ] &&
        ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root/tests/gpu" "$build/CMakeCache.txt"; then
        note "$build was configured for another tree: configuring afresh"
        rm -rf "$build"
    fi
    generator=()
    command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    note "configuring tests/gpu against $prefix in $build"
    cmake -S "$root/tests/gpu" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" \
        -DCMAKE_CUDA_ARCHITECTURES="${GPU_CHECK_CUDA_ARCH:-90}" >"$out/configure.log" 2>&1 ||
        { tail -n 30 "$out/configure.log" >&2; die "configuring tests/gpu failed (log: $out/configure.log)"; }
    note "building with $jobs jobs"
    cmake --build "$build" -j "$jobs" >"$out/build.log" 2>&1 ||
        { tail -n 40 "$out/build.log" >&2; die "building tests/gpu failed (log: $out/build.log)"; }
    n_tests=$(ctest --test-dir "$build" -N -L gpu | sed -n 's/^Total Tests: //p')
    say "built: $n_tests gpu tests in $build (CUDA $release, sm_${GPU_CHECK_CUDA_ARCH:-90})"
}
# The benchmarks build their own programs: the tests are built only to be run (or checked).
if [ "$tests" = 1 ] || [ "$build_only" = 1 ]; then build_tests; fi
if [ "$build_only" = 1 ]; then
    note "built; run the tests where the GPU is: scripts/gpu-check.sh --run ${dir#"$root"/}"
    exit 0
fi

status=0
# ---- tests ---------------------------------------------------------------------------------------
mps_dir=""
stop_mps() {
    if [ -n "$mps_dir" ]; then
        mps_stop
        rm -rf "$mps_dir"
        mps_dir=""
    fi
}
trap stop_mps EXIT
if [ "$tests" = 1 ]; then
    how="without MPS: the PEs' kernels take turns on the GPU"
    if [ "$mps" = 1 ]; then
        command -v nvidia-cuda-mps-control >/dev/null 2>&1 ||
            die "--mps: nvidia-cuda-mps-control not found"
        mps_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-mps.XXXXXX")
        mps_start "$mps_dir" || die "--mps: nvidia-cuda-mps-control -d failed"
        how="under CUDA MPS: the PEs' kernels share the GPU"
    fi
    note "ctest -L gpu, $how (log: $out/ctest.log)"
    rc=0
    ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error \
        --output-log "$out/ctest.log" --output-junit "$out/ctest.xml" -j 2 || rc=$?
    stop_mps
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    skipped=$(grep -c '\*\*\*Skipped' "$out/ctest.log" || true)
    line=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$out/ctest.log" | tail -n 1)
    say "tests: ${line:-no summary from ctest (exit $rc)}; $skipped skipped ($how)"
    if [ "$rc" != 0 ] || [ "$skipped" != 0 ]; then
        status=1
        grep -E '^[[:space:]]*[0-9]+ - gpu\.' "$out/ctest.log" | sed 's/^[[:space:]]*/  /' |
            tee -a "$summary" || true
    fi
    if [ "$torch" = 1 ]; then
        note "tests/torch/gpu.sh $prefix (the torch suites on the GPU)"
        rc=0
        OUT=$out "$root/tests/torch/gpu.sh" "$prefix" || rc=$?
        case $rc in
        0) say "torch: every suite passed ($out/torch-gpu)" ;;
        *) status=1; say "torch: failed or skipped (exit $rc; $out/torch-gpu; --no-torch leaves it out)" ;;
        esac
    fi
fi

# ---- benchmarks ------------------------------------------------------------------------------------
if [ "$bench" = 1 ]; then
    bench_args=(--prefix "$prefix" --out "$out/bench")
    [ "$quick" = 1 ] && bench_args+=(--quick)
    bench_args+=(${bench_extra[@]+"${bench_extra[@]}"})
    note "scripts/bench-cuda.sh ${bench_args[*]}"
    if NVCC=$nvcc "$root/scripts/bench-cuda.sh" "${bench_args[@]}"; then
        say "bench: $out/bench (table.md, raw.jsonl, run.log)"
        [ -f "$out/bench/table.md" ] && tee -a "$summary" <"$out/bench/table.md"
    else
        status=1
        say "bench: failed (scripts/bench-cuda.sh's lines above; $out/bench)"
    fi
fi

say "gpu-check: $([ "$status" = 0 ] && echo ok || echo FAILED) (summary: $summary)"
exit "$status"
