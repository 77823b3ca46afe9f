#!/usr/bin/env bash
# scripts/build.sh: the one entry point to build, install and test shmem.
#
# Usage: scripts/build.sh [options]
#   (no mode)          check dependencies, configure, build everything (tests too), install
#   -uttests           ... then format checks (cargo fmt, clang-format), cargo clippy,
#                      cargo doc (no broken or private links), and every test: ctest
#                      --output-on-failure -j2 (gtest multi-PE, cargo test, ABI,
#                      install/consumer checks, examples), then cargo's own result lines
#                      and one line on the GPU tests (label gpu: Skipped without a GPU;
#                      scripts/gpu-check.sh runs them on one);
#                      nvcc comes from PyPI into <build>/venv first when a network is there
#                      (ctest cuda.compile compiles the CUDA kernels with it)
#   -examples          build only what the main demo needs (the library, shmemrun, the demo),
#                      install, then run the demo (examples/allgather.c) on 4 PEs with the
#                      freshly built shmemrun. A new build dir is configured without tests
#                      (no googletest needed); one configured with tests keeps them.
#   -python_extension  also build the `shmem` Python wheel (maturin; SHMEM_BUILD_PYTHON=ON) into
#                      <build>/python/wheels and install it into the build's virtual environment
#                      <build>/venv (scripts/python-env.sh: maturin, numpy, pytest), which the
#                      Python tests use; `pip install` that wheel anywhere after the install.
#                      Alone, it builds the library, shmemrun and the wheel (no tests); -uttests
#                      implies it, so the Python tests run with the others.
#   -torch             also build libshmem_torch.so (PyTorch symmetric memory) against torch
#                      from PyPI, installed once into the shared virtual environment
#                      $SHMEM_TORCH_VENV (default ~/.cache/shmem/venv, about 5 GB, reused by
#                      every checkout), then run the torch tests (ctest -L torch). -uttests
#                      includes it unless -no-torch is given.
#   -cann              a build for Ascend NPUs that requires CANN: ASCEND_HOME_PATH must be set
#                      (`source <CANN>/set_env.sh` first, e.g.
#                      /usr/local/Ascend/ascend-toolkit/set_env.sh), and the AscendC kernels
#                      (examples/ascendc/, tests/ascendc/) are built for the AI core with CANN's
#                      bisheng (SHMEM_BUILD_CANN=ON; docs/kernel-api.md, "AscendC kernels"). Without it, a
#                      CANN found through ASCEND_HOME_PATH is used and a missing one is skipped.
#   -debug             Debug build (cargo dev profile); default Release
#   --prefix DIR       install prefix (default: ./install)
#   --build-dir DIR    build directory (default: ./build)
#   -j N               parallel build jobs (default: number of cores)
#   --apt-wait SECONDS how long apt-get waits for another apt or dpkg to release its lock
#                      (default 600)
#   --deps-only        check and install the dependencies of the mode given, then stop
#   -h, --help         this text
#
# On Debian it installs the missing system packages with apt-get (as root, or with sudo): for
# -examples only the compilers and build tools; googletest, pkg-config, OpenBLAS, MPI's headers
# and make to build the tests (no mode, -uttests); clang-format, git, Open MPI, iproute2, UCX and
# python3 to run them (-uttests);
# python3 and python3-venv for the Python wheel's virtual environment (-python_extension,
# -uttests).
# The Rust toolchain comes from rustup (~/.cargo/bin); this script never downloads one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MAIN_DEMO=allgather
DEMO_NPES=4
# Debian packages, by what needs them.
BUILD_PACKAGES=(cmake ninja-build g++
    ca-certificates) # ca-certificates: cargo fetches crates over https
TEST_BUILD_PACKAGES=(libgtest-dev # the gtest units (tests/unit)
    pkg-config                    # the pkg-config consumer test (install.pkgconfig)
    libopenblas-dev               # CBLAS for the fused operators (examples/matmul_allreduce)
    libopenmpi-dev                # MPI's headers for the matmul benchmark (bench/matmul_mpi.c)
    make)                         # the operator examples' own build.sh (CMake's default generator)
TEST_RUN_PACKAGES=(clang-format # scripts/format-check.sh
    git                         # scripts/format-check.sh checks the files git tracks
    openmpi-bin                 # /usr/bin/mpirun for the tests in tests/launchers
    iproute2                    # ip netns, for the tests across nodes (launchers, multinode)
    libucx0                     # UCX, the transport between nodes (tests ucx.*, multinode.*)
    python3)                    # gen_data.py, verify_result.py of the operators (examples/*/)
PYTHON_PACKAGES=(python3 # the shmem wheel: maturin, numpy and pytest come from PyPI into
    python3-venv)        # <build>/venv (scripts/python-env.sh)
TORCH_PACKAGES=(python3 python3-venv # the virtual environment torch is installed into
    python3-dev)                      # Python.h, for the torch.distributed backend's module

build_type=Release
prefix=$ROOT/install
build_dir=$ROOT/build
jobs=$(nproc 2>/dev/null || echo 2)
do_tests=0
do_examples=0
do_python=0
do_torch=0
no_torch=0
do_cann=0
deps_only=0
apt_wait=600

if [[ -t 1 ]]; then
    log() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
    log() { printf '\n== %s\n' "$*"; }
fi
die() {
    printf 'build.sh: error: %s\n' "$*" >&2
    exit 1
}
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
abspath() { realpath -m -- "$1"; }

while (($#)); do
    case $1 in
        -uttests | --uttests) do_tests=1 ;;
        -examples | --examples) do_examples=1 ;;
        -python_extension | --python_extension | --python-extension) do_python=1 ;;
        -torch | --torch) do_torch=1 ;;
        -no-torch | --no-torch) no_torch=1 ;;
        -cann | --cann) do_cann=1 ;;
        -debug | --debug) build_type=Debug ;;
        --prefix)
            (($# >= 2)) || die "--prefix needs a directory"
            prefix=$(abspath "$2")
            shift
            ;;
        --prefix=*) prefix=$(abspath "${1#*=}") ;;
        --build-dir)
            (($# >= 2)) || die "--build-dir needs a directory"
            build_dir=$(abspath "$2")
            shift
            ;;
        --build-dir=*) build_dir=$(abspath "${1#*=}") ;;
        -j)
            (($# >= 2)) || die "-j needs a number"
            jobs=$2
            shift
            ;;
        -j*) jobs=${1#-j} ;;
        --apt-wait)
            (($# >= 2)) || die "--apt-wait needs a number of seconds"
            apt_wait=$2
            shift
            ;;
        --apt-wait=*) apt_wait=${1#*=} ;;
        --deps-only) deps_only=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            usage >&2
            die "unknown option '$1'"
            ;;
    esac
    shift
done
[[ $apt_wait =~ ^[0-9]+$ ]] || die "--apt-wait: '$apt_wait' is not a number of seconds"
# -cann needs CANN's environment before anything is built.
if ((do_cann)); then
    [[ -n ${ASCEND_HOME_PATH:-} ]] ||
        die "-cann: ASCEND_HOME_PATH is not set: run 'source <CANN>/set_env.sh' (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) first"
    [[ -d $ASCEND_HOME_PATH ]] ||
        die "-cann: ASCEND_HOME_PATH=$ASCEND_HOME_PATH is not a directory: run 'source <CANN>/set_env.sh' of an installed CANN"
fi

# The README's test command runs the Python tests too.
if ((do_tests)); then
    do_python=1
fi
# Tests are built unless the demo or the wheel alone was asked for.
build_tests=1
if (((do_examples || do_python) && !do_tests && !do_torch)); then
    build_tests=0
fi
torch_tests_only=$((do_torch && !do_tests))
if ((do_tests && !no_torch)); then
    do_torch=1
fi
((do_torch && no_torch)) && die "-torch and -no-torch contradict each other"
SYSTEM_PACKAGES=("${BUILD_PACKAGES[@]}")
if ((build_tests)); then
    SYSTEM_PACKAGES+=("${TEST_BUILD_PACKAGES[@]}")
fi
if ((do_tests)); then
    SYSTEM_PACKAGES+=("${TEST_RUN_PACKAGES[@]}")
fi
if ((do_python)); then
    SYSTEM_PACKAGES+=("${PYTHON_PACKAGES[@]}")
fi
if ((do_torch)); then
    SYSTEM_PACKAGES+=("${TORCH_PACKAGES[@]}")
fi

# --- dependencies ------------------------------------------------------------------------------

install_system_packages() {
    if [[ ! -r /etc/debian_version ]] || ! command -v dpkg-query >/dev/null 2>&1; then
        echo "not Debian: make sure these (or their equivalents) are installed: ${SYSTEM_PACKAGES[*]}"
        return
    fi
    local missing=() pkg
    for pkg in "${SYSTEM_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if ((${#missing[@]} == 0)); then
        echo "system packages present: ${SYSTEM_PACKAGES[*]}"
        return
    fi
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 ||
            die "missing packages (${missing[*]}) and not root, no sudo: install them first"
        sudo=(sudo)
    fi
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_get update
    apt_get install -y --no-install-recommends "${missing[@]}"
}

# apt_get ARGS...: apt-get as root, waiting up to --apt-wait seconds for another apt or dpkg
# (unattended-upgrades or cloud-init on a fresh machine) to release its lock. apt waits for
# dpkg's lock itself (DPkg::Lock::Timeout); a run that still fails on a lock (older apt, or the
# package lists' lock of `apt-get update`) is tried again every 5 s until the same deadline.
apt_get() {
    local deadline=$((SECONDS + apt_wait)) rc errors
    while :; do
        rc=0
        # stdout goes through as is; stderr is kept to see why it failed, then shown.
        { errors=$("${sudo[@]}" apt-get -o DPkg::Lock::Timeout="$apt_wait" "$@" 2>&1 1>&3 3>&-) || rc=$?; } 3>&1
        [[ -n $errors ]] && printf '%s\n' "$errors" >&2
        ((rc == 0)) && return 0
        if ! grep -qiE 'could not get lock|unable to lock|unable to acquire the dpkg' <<<"$errors"; then
            die "apt-get $1 failed (exit $rc): see apt's message above; or install these packages yourself and run this script again: ${missing[*]}"
        fi
        if ((SECONDS >= deadline)); then
            die "apt-get $1: another apt or dpkg process still holds its lock after ${apt_wait}s (see 'ps -C apt,apt-get,dpkg,unattended-upgr'). Let it finish and run this script again, or wait longer with --apt-wait SECONDS."
        fi
        echo "apt-get $1: another apt or dpkg process holds its lock; trying again in 5 s (until ${apt_wait}s have passed)"
        sleep 5
    done
}

find_cargo() {
    # rustup's toolchain first: Debian's packaged cargo/rustc are too old for cxx.
    if [[ -x $HOME/.cargo/bin/cargo ]]; then
        PATH=$HOME/.cargo/bin:$PATH
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo not found in PATH or ~/.cargo/bin.
  shmem's core is Rust and needs a recent stable toolchain from rustup
  (https://rustup.rs; then 'rustup component add rustfmt clippy'). Debian 12's own
  rustc/cargo packages are too old. Install it, then run this script again."
    echo "$(cargo --version) at $(command -v cargo)"
    if ((do_tests)); then
        cargo fmt --version >/dev/null 2>&1 || die "rustfmt missing: rustup component add rustfmt"
        cargo clippy --version >/dev/null 2>&1 || die "clippy missing: rustup component add clippy"
    fi
}

log "dependencies"
install_system_packages
find_cargo
if ((deps_only)); then
    log "done: dependencies present"
    exit 0
fi

# --- configure, build, install -----------------------------------------------------------------

cache=$build_dir/CMakeCache.txt
if [[ -f $cache ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    die "$build_dir was configured with another generator: remove it or pick --build-dir"
fi
# -examples alone leaves a build dir's tests as they are (a full build keeps them) and
# configures a new one without: googletest is then not needed.
tests_option=(-DSHMEM_BUILD_TESTS=ON)
if ((!build_tests)); then
    if [[ -f $cache ]] && grep -q '^SHMEM_BUILD_TESTS:BOOL=ON$' "$cache"; then
        tests_option=()
    else
        tests_option=(-DSHMEM_BUILD_TESTS=OFF)
    fi
fi
# The wheel is asked for, or kept as the build dir has it.
python_option=()
if ((do_python)); then
    python_option=(-DSHMEM_BUILD_PYTHON=ON)
fi
# torch comes from PyPI into one virtual environment shared by every checkout (about 5 GB):
# installed the first time, reused after.
torch_options=()
if ((do_torch)); then
    log "torch (virtual environment ${SHMEM_TORCH_VENV:-$HOME/.cache/shmem/venv}; the first time about 3 GB from PyPI, 5.4 GB installed, minutes; reused after)"
    torch_python=$(SHMEM_VENV= "$ROOT/scripts/python-env.sh" \
        --venv "${SHMEM_TORCH_VENV:-$HOME/.cache/shmem/venv}" torch) ||
        die "could not make the torch virtual environment (see pip's message above)"
    torch_options=(-DSHMEM_BUILD_TORCH=ON -DSHMEM_TORCH_PYTHON="$torch_python")
elif ((no_torch)); then
    torch_options=(-DSHMEM_BUILD_TORCH=OFF)
fi
# nvcc from PyPI (NVIDIA's wheels: nvcc with cicc and ptxas, the CUDA runtime's and CCCL's
# headers; CUDA 13, the 12.x wheels carry no nvcc) into the build's virtual environment, where
# CMake finds it for ctest cuda.compile: the CUDA kernels compile with no GPU and no CUDA
# install. Only when a network is there: without one, cuda.compile reports SKIPPED.
CUDA_WHEELS=("nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cuda-cccl>=13,<14")
if ((do_tests)); then
    log "nvcc from PyPI (into $build_dir/venv, for ctest cuda.compile; the first time about 55 MB)"
    if ! PIP_TIMEOUT=15 PIP_RETRIES=1 SHMEM_VENV= "$ROOT/scripts/python-env.sh" \
        --venv "$build_dir/venv" "${CUDA_WHEELS[@]}" >/dev/null; then
        echo "nvcc not installed (no network, or pip failed above): ctest cuda.compile will report SKIPPED"
    fi
fi
# -cann makes CANN required (CMake stops without it); otherwise it is used when found.
cann_option=(-DSHMEM_BUILD_CANN=OFF)
if ((do_cann)); then
    cann_option=(-DSHMEM_BUILD_CANN=ON)
fi
log "configure ($build_type) in $build_dir"
cmake -S "$ROOT" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    "${tests_option[@]}" "${python_option[@]}" \
    "${torch_options[@]}" "${cann_option[@]}" \
    -DSHMEM_BUILD_EXAMPLES=ON

if ((build_tests)); then
    log "build (-j $jobs)"
    cmake --build "$build_dir" -j "$jobs"
else
    # The libraries (libshmem.so, libmf_smem.so), shmemrun (built with libshmem by cargo), and
    # the demo or the wheel: all the install, the demo and the wheel need; the other examples,
    # tests and benchmarks are left out.
    targets=(shmem mf_smem)
    ((do_examples)) && targets+=("shmem_example_$MAIN_DEMO")
    ((do_python)) && targets+=(shmem_python_wheel)
    log "build ${targets[*]} (-j $jobs)"
    cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
fi

log "install to $prefix"
cmake --install "$build_dir" --prefix "$prefix"

# The cargo environment of this build (target dir, compilers) and the launcher's path.
# shellcheck source=/dev/null
source "$build_dir/cargo-env.sh"

# --- checks and tests --------------------------------------------------------------------------

# The GPU tests (ctest label gpu, tests/gpu) run only where NVIDIA's driver finds a GPU; each
# reports Skipped elsewhere. One line says how many ran or were skipped, and how to run them.
gpu_tests_line() {
    local probe=$build_dir/tests/gpu/gpu_probe n why
    n=$(ctest --test-dir "$build_dir" -N -L gpu 2>/dev/null | sed -n 's/^Total Tests: //p')
    if [[ ! -x $probe ]]; then
        echo "gpu: the GPU tests are not built (no nvcc: ctest gpu.build says SKIPPED)"
    elif why=$("$probe"); then
        echo "gpu: ${n:-0} GPU tests ran on this machine's GPU (${why#GPU: })"
    else
        echo "gpu: ${n:-0} GPU tests skipped (${why#SKIPPED: }); to run them on a machine with an" \
            "NVIDIA GPU: scripts/gpu-check.sh --pack .gpu here, scripts/gpu-check.sh --run .gpu there"
    fi
}

if ((do_tests)); then
    log "format"
    "$ROOT/scripts/format-check.sh"

    log "cargo clippy"
    (cd "$ROOT" && "$SHMEM_CARGO" clippy --locked --workspace --all-targets -- -D warnings)

    log "cargo doc"
    # The crates' docs build without a broken or private link.
    (cd "$ROOT" && RUSTDOCFLAGS="-D warnings" "$SHMEM_CARGO" doc --locked --no-deps --workspace)

    log "tests"
    # rust.cargo_test keeps cargo's output in this file; cargo's own counts are shown after
    # ctest's summary, which sees the whole of cargo test as one test (ctest's
    # rust.cargo_results checks them too).
    cargo_log=$build_dir/tests/cargo_test.log
    rm -f "$cargo_log"
    status=0
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "${CTEST_JOBS:-2}" ||
        status=$?
    log "cargo test (ctest rust.cargo_test), per test binary"
    "$ROOT/tests/tools/cargo_results.sh" "$cargo_log" || true
    gpu_tests_line
    ((status == 0)) || die "ctest failed (exit $status): see the failed tests above"
fi

if ((do_python)); then
    wheel=$(ls "$build_dir"/python/wheels/shmem-*.whl)
    log "python: $wheel"
    echo "installed in $build_dir/venv; elsewhere: pip install $wheel (it loads $prefix's libshmem.so)"
fi

if ((torch_tests_only)); then
    log "torch tests"
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "${CTEST_JOBS:-2}" \
        -L torch || die "torch tests failed: see the failed tests above"
fi

if ((do_examples)); then
    demo=$build_dir/examples/$MAIN_DEMO
    [[ -x $demo ]] || die "no $demo: is examples/$MAIN_DEMO.c there?"
    log "$MAIN_DEMO on $DEMO_NPES PEs"
    "$SHMEM_SHMEMRUN" -n "$DEMO_NPES" --timeout 120 "$demo"
fi

log "done: installed in $prefix"
