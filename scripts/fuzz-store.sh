#!/usr/bin/env bash
# scripts/fuzz-store.sh [SECONDS]
# Fuzzes the control store's frame decoder (rust/store/src/wire.rs: read_frame,
# Request/Reply decode and encode) with cargo-fuzz and libFuzzer for SECONDS (default 60).
# The target is fuzz/fuzz_targets/store_frame.rs, in its own crate (fuzz/, not a workspace
# member). Seeds come from rust/store/tests/corpus/store_frames.txt; the growing corpus and any
# crashing input are kept under build/fuzz/. Installs cargo-fuzz when missing. Runs on stable
# Rust through RUSTC_BOOTSTRAP=1 (libFuzzer needs -Z flags). Exits non-zero on a crash, a
# failed property or a build error. Not part of ctest.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
case $seconds in
    -h | --help)
        sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *[!0-9]* | "" | 0)
        echo "fuzz-store.sh: invalid argument SECONDS='$seconds': want a whole number above 0" >&2
        exit 2
        ;;
esac

if ! command -v cargo >/dev/null 2>&1 && [[ -x $HOME/.cargo/bin/cargo ]]; then
    PATH=$HOME/.cargo/bin:$PATH
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== cargo install cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
work=build/fuzz
corpus=$work/corpus/store_frame
artifacts=$work/artifacts/store_frame
mkdir -p "$corpus" "$artifacts"

# One seed a corpus line: hex bytes; a line starting with 'h ' is sent after a valid HELLO,
# which the seed then starts with too.
hello=110000000153484b56020000000000000002000000
n=0
while IFS= read -r line; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [[ -z $line ]] && continue
    if [[ $line == h* ]]; then
        line=$hello${line#h}
    fi
    if [[ ! $line =~ ^([0-9a-fA-F]{2})+$ ]]; then
        echo "fuzz-store.sh: rust/store/tests/corpus/store_frames.txt: not hex: '$line'" >&2
        exit 2
    fi
    n=$((n + 1))
    printf '%b' "$(sed 's/../\\x&/g' <<<"$line")" >"$corpus/seed-$n"
done <rust/store/tests/corpus/store_frames.txt
echo "== $n seeds from rust/store/tests/corpus/store_frames.txt"

echo "== cargo fuzz build store_frame"
cargo fuzz build --fuzz-dir fuzz --target-dir "$work/target" store_frame

echo "== cargo fuzz run store_frame for ${seconds} s"
log=$work/store_frame.log
status=0
cargo fuzz run --fuzz-dir fuzz --target-dir "$work/target" store_frame "$corpus" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 2>&1 | tee "$log" || status=$?
if ((status != 0)); then
    echo "fuzz-store.sh: store_frame failed (status $status); inputs in $artifacts/, log $log" >&2
    exit "$status"
fi
rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -n 1 || true)
runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -n 1 || true)
echo "== store_frame: no crash in ${seconds} s (${runs:-? runs}, ${rate:-exec/s unknown})"
