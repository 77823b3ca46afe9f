#!/usr/bin/env bash
# scripts/bench-cuda.sh: the GPU benchmarks in one command. Builds every bench/cuda/*.cu twice
# from the same source, against this library's kernel-side API (shmem/device.h, CUDA
# architecture; host calls through bench/cuda/host_shmem.cpp) and against NVSHMEM's
# (-DBENCH_NVSHMEM), plus the device-to-device copy floor (bench/cuda/floor.cu); runs them side
# by side on this node's GPU, ours under shmemrun with SHMEM_DEVICE=cuda, NVSHMEM's as processes
# started here with its unique-id bootstrap (the id handed over through a file: no MPI, no
# launcher of NVSHMEM's); writes raw JSON lines and a table to bench/results/<date>-<gpu>/ and
# prints the targets (>= 0.9x the copy floor at 256 MiB and above with enough blocks; each
# figure against NVSHMEM's).
#
# Usage: scripts/bench-cuda.sh [options]
#   --quick            short sweeps (a few sizes and block counts, 3 trials): a few minutes
#   --out DIR          result folder (default bench/results/<UTC date>-<gpu>, e.g. -h100)
#   --prefix DIR       this library's install tree (default ./install; built and installed from
#                      ./build first when it lacks bin/shmemrun)
#   --bin-dir DIR      take the programs already built in DIR (by --build-only) instead of
#                      building: for a machine with a GPU but no nvcc
#   --build-only       build into --bin-dir (default build/bench-cuda) and stop: no GPU needed
#   --pack FILE        with --build-only: also copy shmemrun and libshmem (stripped) into
#                      <bin-dir>/install and write <bin-dir> as the gzipped tar FILE, about
#                      50 MB, to carry to a GPU machine that has no nvcc; there,
#                      `tar xzf FILE -C build && scripts/bench-cuda.sh --bin-dir build/bench-cuda`
#   --npes N           PEs of the 2-PE-or-more programs' jobs (default 2; put_bw, pingpong and
#                      onstream need exactly 2, barrier takes any)
#   --no-nvshmem       our library and the floor only
#   --no-mps           do not start CUDA MPS even where nvidia-cuda-mps-control is there
#   --timeout S        seconds each program may run (default 900); a hang is killed, reported
#                      and counted as a failure
#   -h, --help         this text
#
# Found on the way (each missing one is named, and the script exits 1 before running anything):
#   nvcc       $NVCC, else `nvcc` on PATH, else $CUDA_HOME/bin, /usr/local/cuda/bin, else the
#              nvidia-cuda-nvcc wheel in python3's site-packages or in build/venv (where
#              scripts/build.sh -uttests puts it). The wheel is CUDA 13, whose programs need a
#              driver of the 580 series or later: with an older driver the probe below says
#              "driver version is insufficient", and a CUDA 12 toolkit's nvcc (NVCC=...) is
#              the way
#   NVSHMEM    $NVSHMEM_HOME (include/, lib/), else the Python package nvidia.nvshmem (the
#              nvidia-nvshmem-cu12 wheel, a dependency of torch's CUDA builds)
#   the GPU    bench/cuda/floor.cu --probe: without a usable GPU the script says why and exits 1
# Target architecture: sm_90 (H100); BENCH_CUDA_ARCH=sm_XX for another.
#
# Several PEs on one GPU: the only shape a one-GPU machine gives. The PEs' kernels run at the
# same time only under CUDA MPS; without it the GPU time-slices between the processes, and
# NVSHMEM runs in its "limited MPG" mode (no MPS: some of its device APIs refuse to run). So
# where nvidia-cuda-mps-control exists the script starts a private MPS daemon for the run
# (its pipe and log folders under the result folder, stopped on exit) and sets
# NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 so that NVSHMEM gives full MPG support
# without capping each PE's SMs. Every JSON line says shared_gpu and mps.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command_line="scripts/bench-cuda.sh $*"

quick=0 out="" prefix="$root/install" bin_dir="" build_only=0 npes=2 nvshmem=1 mps=1 pack=""
timeout_s=900
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --prefix) prefix=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --build-only) build_only=1 ;;
    --pack) pack=$2; shift ;;
    --npes) npes=$2; shift ;;
    --no-nvshmem) nvshmem=0 ;;
    --no-mps) mps=0 ;;
    --timeout) timeout_s=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-cuda: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$npes" in '' | *[!0-9]*) echo "bench-cuda: --npes $npes: not a number" >&2; exit 2 ;; esac
case "$timeout_s" in '' | *[!0-9]*) echo "bench-cuda: --timeout $timeout_s: not seconds" >&2; exit 2 ;; esac

missing=()
note() { echo "bench-cuda: $*" >&2; }
arch=${BENCH_CUDA_ARCH:-sm_90}
programs=(put_bw onstream pingpong barrier)
# find_nvcc, mps_start, mps_stop.
source "$root/scripts/lib/cuda.sh"

# ---- What the build needs ------------------------------------------------------------------
find_nvshmem() {
    if [ -n "${NVSHMEM_HOME:-}" ]; then echo "$NVSHMEM_HOME"; return; fi
    python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' \
        2>/dev/null || true
}

if [ -z "$bin_dir" ] || [ "$build_only" = 1 ]; then
    bin_dir=${bin_dir:-$root/build/bench-cuda}
    nvcc=$(find_nvcc "$root")
    [ -n "$nvcc" ] ||
        missing+=("nvcc${NVCC:+ (NVCC=$NVCC is not executable)} (set NVCC, put CUDA's bin on PATH, or python3 -m pip install nvidia-cuda-nvcc)")
    if [ "$nvshmem" = 1 ]; then
        nv_home=$(find_nvshmem)
        nv_lib=""
        if [ -z "$nv_home" ] || [ ! -f "$nv_home/include/nvshmem.h" ]; then
            missing+=("NVSHMEM (set NVSHMEM_HOME, or python3 -m pip install nvidia-nvshmem-cu12; or --no-nvshmem)")
        else
            nv_lib=$nv_home/lib
            nv_host=$(ls "$nv_lib"/libnvshmem_host.so* 2>/dev/null | head -n 1)
            if [ -z "$nv_host" ] || [ ! -f "$nv_lib/libnvshmem_device.a" ]; then
                missing+=("NVSHMEM's libnvshmem_host.so and libnvshmem_device.a under $nv_lib")
            fi
        fi
    fi
    if [ ! -x "$prefix/bin/shmemrun" ]; then
        if [ -d "$root/build" ] && [ "$prefix" = "$root/install" ]; then
            note "building and installing the library into $prefix"
            cmake --build "$root/build" && cmake --install "$root/build" --prefix "$prefix" >/dev/null
        fi
        [ -x "$prefix/bin/shmemrun" ] ||
            missing+=("this library's install tree at $prefix (scripts/build.sh, or --prefix DIR)")
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        note "cannot build the GPU benchmarks; missing:"
        for m in "${missing[@]}"; do note "  - $m"; done
        exit 1
    fi

    mkdir -p "$bin_dir"
    flags=(-std=c++17 -O3 -arch="$arch" -lineinfo -Ibench/cuda)
    note "nvcc: $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*')), $arch, into $bin_dir"
    "$nvcc" "${flags[@]}" bench/cuda/floor.cu -o "$bin_dir/floor"
    for p in "${programs[@]}"; do
        note "building $p (shmem)"
        "$nvcc" "${flags[@]}" -I"$prefix/include" "bench/cuda/$p.cu" bench/cuda/host_shmem.cpp \
            -L"$prefix/lib" -lshmem -Xlinker -rpath,"$prefix/lib" -o "$bin_dir/$p.shmem"
        if [ "$nvshmem" = 1 ]; then
            note "building $p (nvshmem)"
            "$nvcc" "${flags[@]}" -rdc=true -DBENCH_NVSHMEM -I"$nv_home/include" "bench/cuda/$p.cu" \
                -L"$nv_lib" -l:"$(basename "$nv_host")" -lnvshmem_device \
                -Xlinker -rpath,"$nv_lib" -o "$bin_dir/$p.nvshmem"
        fi
    done
    printf '%s\n' "$prefix" >"$bin_dir/prefix"
    if [ -n "$pack" ]; then
        rm -rf "$bin_dir/install"
        mkdir -p "$bin_dir/install/bin" "$bin_dir/install/lib"
        strip -o "$bin_dir/install/bin/shmemrun" "$prefix/bin/shmemrun"
        strip -o "$bin_dir/install/lib/libshmem.so.0" "$(readlink -f "$prefix/lib/libshmem.so.0")"
        tar czf "$pack" -C "$(dirname "$bin_dir")" "$(basename "$bin_dir")"
        note "packed $bin_dir into $pack ($(du -h "$pack" | cut -f1))"
    fi
    if [ "$build_only" = 1 ]; then
        note "built into $bin_dir; run with --bin-dir $bin_dir where the GPU is"
        exit 0
    fi
else
    [ -x "$bin_dir/floor" ] || { note "--bin-dir $bin_dir: no floor program there (build it with --build-only)"; exit 1; }
    # The install tree packed beside the programs (--pack), else the one they were built with
    # where it is on this machine too.
    if [ "$prefix" = "$root/install" ] && [ -x "$bin_dir/install/bin/shmemrun" ]; then
        prefix=$bin_dir/install
    elif [ -f "$bin_dir/prefix" ] && [ "$prefix" = "$root/install" ] &&
        [ -x "$(cat "$bin_dir/prefix")/bin/shmemrun" ]; then
        prefix=$(cat "$bin_dir/prefix")
    fi
    [ -x "$prefix/bin/shmemrun" ] || { note "no shmemrun under $prefix (--prefix DIR)"; exit 1; }
    nv_home=$(find_nvshmem)
    nv_lib=${nv_home:+$nv_home/lib}
    nvshmem_found=0
    for p in "${programs[@]}"; do [ -x "$bin_dir/$p.nvshmem" ] && nvshmem_found=1; done
    [ "$nvshmem_found" = 1 ] || nvshmem=0
fi

# ---- The GPU ---------------------------------------------------------------------------------
if ! probe=$(timeout 60 "$bin_dir/floor" --probe 2>&1); then
    note "no GPU to run on: $probe"
    note "(the programs are built in $bin_dir; run this script again where a CUDA GPU is)"
    exit 1
fi
note "$probe"
gpu_tag=$(printf '%s' "$probe" | grep -o 'H100\|H200\|A100\|B200\|GB200\|L40S\|L4\b' | head -n 1 |
    tr 'A-Z' 'a-z')
gpu_tag=${gpu_tag:-gpu}
if [ -z "$out" ]; then
    out=$root/bench/results/$(date -u +%Y-%m-%d)-$gpu_tag
    if [ "$quick" = 1 ]; then out=$out-quick; fi
fi
mkdir -p "$out"
raw=$out/raw.jsonl log=$out/run.log
: >"$raw"
: >"$log"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/bench-cuda.XXXXXX")

# ---- CUDA MPS ------------------------------------------------------------------------------
mps_on=0
cleanup() {
    if [ "$mps_on" = 1 ]; then mps_stop; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
if [ "$mps" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    if mps_start "$scratch/mps"; then
        mps_on=1
        note "CUDA MPS started for this run (the PEs' kernels run concurrently)"
    else
        note "nvidia-cuda-mps-control -d failed: running without MPS"
    fi
else
    note "no CUDA MPS: PEs sharing the GPU are time-sliced; NVSHMEM runs in limited MPG mode"
fi
export BENCH_MPS=$mps_on

# ---- Running -------------------------------------------------------------------------------
if [ "$quick" = 1 ]; then
    floor_args=(--sizes 1M:1G --blocks "1,16,132,264" --trials 3)
    put_args=(--sizes 1M:1G --blocks "1,16,132,264" --trials 3)
    onstream_args=(--sizes 8:1G --trials 3 --iters 20)
    pingpong_args=(--sizes 8:4K --trials 3 --iters 200)
    barrier_args=(--trials 3 --iters 200)
else
    floor_args=() put_args=() onstream_args=() pingpong_args=() barrier_args=()
fi
heap=3G
failures=()

run_shmem() { # program args...
    local p=$1; shift
    env SHMEM_DEVICE=cuda SHMEM_SYMMETRIC_SIZE=$heap LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" \
        timeout -k 10 "$((timeout_s + 30))" "$prefix/bin/shmemrun" --timeout "$timeout_s" \
        -n "$np" "$bin_dir/$p.shmem" "$@" >>"$raw" 2>>"$log"
}

run_nvshmem() { # program args...
    local p=$1; shift
    local uid=$scratch/uid.$p pids=() rc=0 pe
    rm -f "$uid"
    for ((pe = 0; pe < np; pe++)); do
        env BENCH_PE=$pe BENCH_NPES="$np" BENCH_UID_FILE="$uid" NVSHMEM_SYMMETRIC_SIZE=$heap \
            NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME="${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}" \
            NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 \
            LD_LIBRARY_PATH="${nv_lib:+$nv_lib:}${LD_LIBRARY_PATH:-}" \
            timeout -k 10 "$timeout_s" "$bin_dir/$p.nvshmem" "$@" >>"$raw" 2>>"$log" &
        pids+=($!)
    done
    # One PE that fails leaves the others waiting in a bootstrap or a barrier: stop them all.
    for pid in "${pids[@]}"; do
        if ! wait "$pid"; then
            rc=1
            kill "${pids[@]}" 2>/dev/null || true
        fi
    done
    return $rc
}

run_pair() { # program args...
    local p=$1
    np=$npes
    case "$p" in put_bw | onstream | pingpong) np=2 ;; esac
    echo "== $p (shmem, $np PEs)" >>"$log"
    note "$p: shmem"
    run_shmem "$@" || failures+=("$p (shmem): exit $? - see $log")
    if [ "$nvshmem" = 1 ] && [ -x "$bin_dir/$p.nvshmem" ]; then
        echo "== $p (nvshmem, $np PEs)" >>"$log"
        note "$p: nvshmem"
        run_nvshmem "$@" || failures+=("$p (nvshmem): failed - see $log")
    fi
}

note "floor: cudaMemcpyAsync device to device and a copy kernel"
echo "== floor" >>"$log"
timeout -k 10 "$timeout_s" "$bin_dir/floor" ${floor_args[@]+"${floor_args[@]}"} >>"$raw" 2>>"$log" ||
    failures+=("floor: exit $? - see $log")
run_pair put_bw ${put_args[@]+"${put_args[@]}"}
run_pair onstream ${onstream_args[@]+"${onstream_args[@]}"}
run_pair pingpong ${pingpong_args[@]+"${pingpong_args[@]}"}
run_pair barrier ${barrier_args[@]+"${barrier_args[@]}"}

{
    echo "device: $probe"
    echo "mps: $mps_on"
    echo "command: $command_line"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$out/device.txt"
python3 bench/cuda/report.py "$raw" --device "$probe" --table "$out/table.md" || failures+=("report")

if [ ${#failures[@]} -gt 0 ]; then
    note "failed:"
    for f in "${failures[@]}"; do note "  - $f"; done
    note "results so far: $out"
    exit 1
fi
note "results: $out (raw.jsonl, table.md, run.log)"
