# scripts/lib/bench.sh: what the benchmark drivers (bench.sh, bench-multinode.sh,
# bench-torch-dist.sh) share, sourced by them: their messages and their usage text. Defines
# functions only; sets nothing and runs nothing when sourced.

# die MESSAGE...: "<script>: error: MESSAGE" on stderr, then exit status 1.
die() {
    printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2
    exit 1
}

# usage: the script's header comment (from its second line to the first line that is not a
# comment), without the leading "# ".
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# log MESSAGE...: a progress line.
log() { printf '== %s\n' "$*"; }
