#!/usr/bin/env bash
# scripts/build.sh: the one entry point to build, install and test shmem.
#
# Usage: scripts/build.sh [options]
#   (no mode)          check dependencies, configure, build, install
#   -uttests           ... then format checks (cargo fmt, clang-format), cargo clippy, and every
#                      test: ctest --output-on-failure -j2 (gtest multi-PE, cargo test, ABI,
#                      install/consumer checks, examples)
#   -examples          ... then run the main demo (examples/allgather.c) on 4 PEs with the
#                      freshly built shmemrun
#   -debug             Debug build (cargo dev profile); default Release
#   --prefix DIR       install prefix (default: ./install)
#   --build-dir DIR    build directory (default: ./build)
#   -j N               parallel build jobs (default: number of cores)
#   -h, --help         this text
#
# On Debian it installs the missing system packages with apt-get (as root, or with sudo).
# The Rust toolchain comes from rustup (~/.cargo/bin); this script never downloads one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MAIN_DEMO=allgather
DEMO_NPES=4
SYSTEM_PACKAGES=(cmake ninja-build g++ libgtest-dev pkg-config clang-format
    ca-certificates # ca-certificates: cargo fetches crates over https
    openmpi-bin     # openmpi-bin: /usr/bin/mpirun for the tests in tests/launchers
    iproute2)       # iproute2: ip netns, for the two-node tests in tests/launchers

build_type=Release
prefix=$ROOT/install
build_dir=$ROOT/build
jobs=$(nproc 2>/dev/null || echo 2)
do_tests=0
do_examples=0

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
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
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

# --- configure, build, install -----------------------------------------------------------------

log "configure ($build_type) in $build_dir"
if [[ -f $build_dir/CMakeCache.txt ]] &&
    ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build_dir/CMakeCache.txt"; then
    die "$build_dir was configured with another generator: remove it or pick --build-dir"
fi
cmake -S "$ROOT" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="$build_type" \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DSHMEM_BUILD_TESTS=ON \
    -DSHMEM_BUILD_EXAMPLES=ON

log "build (-j $jobs)"
cmake --build "$build_dir" -j "$jobs"

log "install to $prefix"
cmake --install "$build_dir" --prefix "$prefix"

# The cargo environment of this build (target dir, compilers) and the launcher's path.
# shellcheck source=/dev/null
source "$build_dir/cargo-env.sh"

# --- checks and tests --------------------------------------------------------------------------

if ((do_tests)); then
    log "format"
    "$ROOT/scripts/format-check.sh"

    log "cargo clippy"
    (cd "$ROOT" && "$SHMEM_CARGO" clippy --locked --workspace --all-targets -- -D warnings)

    log "tests"
    ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "${CTEST_JOBS:-2}"
fi

if ((do_examples)); then
    demo=$build_dir/examples/$MAIN_DEMO
    [[ -x $demo ]] || die "no $demo: is examples/$MAIN_DEMO.c there?"
    log "$MAIN_DEMO on $DEMO_NPES PEs"
    "$SHMEM_SHMEMRUN" -n "$DEMO_NPES" --timeout 120 "$demo"
fi

log "done: installed in $prefix"
