#!/usr/bin/env bash
# scripts/format-check.sh [--fix]
# Formatting is by tools, never by hand: cargo fmt for Rust, clang-format (.clang-format at the
# repo root; Debian 12's clang-format 14 is the reference) for C/C++ under cpp/, device/,
# tests/, examples/ and bench/: the files git tracks there (outside a git checkout, all but
# those under build folders). Without --fix it only checks and fails on any difference; with
# --fix it rewrites the files in place. CLANG_FORMAT may name another binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
fix=0
case ${1:-} in
    --fix) fix=1 ;;
    "") ;;
    -h | --help)
        sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) echo "format-check.sh: unknown argument '$1' (use --fix or nothing)" >&2; exit 2 ;;
esac

if ! command -v cargo >/dev/null 2>&1 && [[ -x $HOME/.cargo/bin/cargo ]]; then
    PATH=$HOME/.cargo/bin:$PATH
fi
clang_format=${CLANG_FORMAT:-clang-format}

status=0

echo "== cargo fmt"
if ((fix)); then
    cargo fmt --all
elif ! cargo fmt --all --check; then
    echo "cargo fmt: Rust sources are not formatted; run scripts/format-check.sh --fix" >&2
    status=1
fi
# fuzz/ is its own workspace (scripts/fuzz-store.sh); rustfmt alone needs none of its crates.
fuzz_sources=(fuzz/fuzz_targets/*.rs)
if [[ -e ${fuzz_sources[0]} ]]; then
    if ((fix)); then
        rustfmt --edition 2021 "${fuzz_sources[@]}"
    elif ! rustfmt --edition 2021 --check "${fuzz_sources[@]}"; then
        echo "rustfmt: fuzz targets are not formatted; run scripts/format-check.sh --fix" >&2
        status=1
    fi
fi

echo "== $clang_format ($("$clang_format" --version | sed 's/.*version //'))"
dirs=()
for d in cpp device tests examples bench; do
    [[ -d $d ]] && dirs+=("$d")
done
files=()
if ((${#dirs[@]})); then
    # Only the sources the project owns: in a git checkout the files git tracks (never generated
    # files under a git-ignored build folder, such as CMake's CMakeCCompilerId.c in
    # examples/<op>/build/); outside one (an unpacked tarball), every source file but those under
    # a build folder or CMake's own.
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        mapfile -d '' files < <(git ls-files -z -- "${dirs[@]}" |
            grep -zE '\.(c|h|cc|cpp|hpp|cu|cuh)$' | sort -z)
    else
        mapfile -d '' files < <(find "${dirs[@]}" \( -name build -o -name 'build-*' \
            -o -name CMakeFiles \) -prune -o -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' \
            -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 | sort -z)
    fi
fi
if ((${#files[@]} == 0)); then
    echo "no C/C++ files"
elif ((fix)); then
    "$clang_format" -i "${files[@]}"
elif ! "$clang_format" --dry-run --Werror "${files[@]}"; then
    echo "clang-format: C/C++ sources are not formatted; run scripts/format-check.sh --fix" >&2
    status=1
else
    echo "${#files[@]} files formatted"
fi

exit $status
