# scripts/lib/bench.sh: what the benchmark drivers (bench.sh, bench-multinode.sh,
# bench-torch-dist.sh) share, sourced by them: their messages, their usage text and the
# installation of what they need. Defines functions only; sets nothing and runs nothing when
# sourced.

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

# install_packages PACKAGE...: the Debian packages of the list not installed yet, with apt-get
# (through sudo when not root); dies where there is no apt-get.
install_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]}; install them (Debian packages)"
    local sudo=()
    ((EUID == 0)) || sudo=(sudo)
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}"
}

# ensure_matplotlib: matplotlib for python3 (the plots), from PyPI where it is missing.
ensure_matplotlib() {
    python3 -c 'import matplotlib' 2>/dev/null && return 0
    log "installing matplotlib (PyPI)"
    python3 -m pip install --quiet matplotlib ||
        python3 -m pip install --quiet --break-system-packages matplotlib
}
