#!/usr/bin/env bash
# scripts/fresh-check.sh: the README's two commands, run as a new user runs them, on a fresh
# Debian 12 machine made for the purpose.
#
# Usage: scripts/fresh-check.sh [options]
#   --only demo|tests  run only the README's demo command or only its test command (default both)
#   --rev REV          the commit to clone into the fresh root (default HEAD; uncommitted changes
#                      are not seen, and the script says so)
#   --cache DIR        what may be reused between runs: the debootstrap base (base-bookworm.tar),
#                      pip's and cargo's download caches (default /var/cache/shmem-fresh-check)
#   --work DIR         where the fresh roots are made, one at a time, each removed after its
#                      command (default /var/tmp/shmem-fresh-check; about 15 GB free needed)
#   --new-base         make the debootstrap base again instead of reusing the cached one
#   -h, --help         this text
#
# For each command it unpacks the Debian 12 base (debootstrap from Debian's packages, with this
# machine's apt sources and apt settings) into a root of its own, clones the commit into
# /root/shmem there, brings in only what the README names (rustup's default toolchain, read-only,
# with cargo's proxies and a writable cargo home) and this site's network trust anchors and pip
# settings (see site_trust), and runs the command exactly as the README writes it, as root, from /root/shmem, with a clean environment (bash -l, HOME=/root, Debian's
# PATH plus what rustup's ~/.cargo/env adds). The root gets /proc, /sys, /dev, /dev/pts and fresh
# /dev/shm and /run. It prints each command's wall time and result and exits non-zero if one
# failed; each command's whole output is also kept in <work>/<name>.log.
#
# Nothing is left behind: every command runs in private mount and PID namespaces (unshare), so
# its mounts and processes end with it, also when this script is killed (the namespace's first
# process has the parent-death signal); the root is removed only after checking that nothing is
# mounted under it (rm --one-file-system), and roots left by an interrupted run are removed at
# the next start. Installed packages, virtual environments and build outputs are never reused.
# Needs root, debootstrap, unshare/setpriv (util-linux) and a network to Debian's mirror,
# crates.io and PyPI.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUITE=bookworm

die() {
    printf 'fresh-check.sh: error: %s\n' "$*" >&2
    exit 1
}
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
hms() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# --- inside the namespaces: mount what a machine has, run one command, report its status --------
# Called by this script itself through unshare: --inside ROOTFS CMD.
if [[ ${1:-} == --inside ]]; then
    rootfs=$2
    cmd=$3
    # The root a mount point of its own, as a machine's / is: tests that make their own mount
    # namespaces change the propagation of / (mount --make-rslave /), which needs one. Recursive:
    # the caches and the toolchain are already mounted under it.
    mount --rbind "$rootfs" "$rootfs"
    mount -t proc proc "$rootfs/proc"
    mount --rbind /sys "$rootfs/sys"
    mount --bind /dev "$rootfs/dev"
    mount --bind /dev/pts "$rootfs/dev/pts"
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$rootfs/dev/shm"
    mount -t tmpfs -o mode=0755,nosuid,nodev run "$rootfs/run"
    mkdir -p "$rootfs/run/lock"
    chmod 1777 "$rootfs/run/lock"
    exec chroot "$rootfs" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash \
        TERM="${TERM:-dumb}" LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -lc "cd /root/shmem && $cmd"
fi

only=""
rev=HEAD
cache=/var/cache/shmem-fresh-check
work=/var/tmp/shmem-fresh-check
new_base=0
while (($#)); do
    case $1 in
        --only)
            (($# >= 2)) || die "--only needs 'demo' or 'tests'"
            only=$2
            shift
            ;;
        --rev)
            (($# >= 2)) || die "--rev needs a commit"
            rev=$2
            shift
            ;;
        --cache)
            (($# >= 2)) || die "--cache needs a directory"
            cache=$(realpath -m -- "$2")
            shift
            ;;
        --work)
            (($# >= 2)) || die "--work needs a directory"
            work=$(realpath -m -- "$2")
            shift
            ;;
        --new-base) new_base=1 ;;
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
case $only in
    "" | demo | tests) ;;
    *) die "--only: '$only' is neither 'demo' nor 'tests'" ;;
esac

((EUID == 0)) || die "run as root: it makes a Debian root with debootstrap and mounts /proc, /dev, ... into it"
for tool in debootstrap unshare setpriv chroot git tar findmnt; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "'$tool' not found (Debian: apt-get install debootstrap util-linux git tar)"
done
sha=$(git -C "$ROOT" rev-parse --verify "$rev^{commit}") || die "--rev: '$rev' is not a commit of $ROOT"
if [[ $rev == HEAD && -n $(git -C "$ROOT" status --porcelain --untracked-files=no) ]]; then
    echo "fresh-check.sh: note: $ROOT has uncommitted changes; they are not part of the check (commit $sha is)"
fi

# The README's two commands: the first sh block's command lines, comments dropped.
mapfile -t readme_cmds < <(awk '/^```sh$/ { inblock = 1; next } inblock && /^```/ { exit }
    inblock { sub(/[ \t]*#.*$/, ""); if ($0 != "") print }' "$ROOT/README.md")
((${#readme_cmds[@]} == 2)) ||
    die "README.md's first sh block should hold two commands (the demo, the tests), found ${#readme_cmds[@]}"
names=(demo tests)

# --- removing a root safely --------------------------------------------------------------------
# Mounts made for a command live in its own mount namespace and end with it; this checks anyway,
# and never deletes across a mount point.
remove_root() {
    local dir=$1 mounted
    [[ -e $dir ]] || return 0
    mounted=$(findmnt -rn -o TARGET | awk -v p="$dir/" 'index($0 "/", p) == 1')
    if [[ -n $mounted ]]; then
        echo "fresh-check.sh: still mounted under $dir (left as it is, unmount by hand):" >&2
        printf '  %s\n' $mounted >&2
        return 1
    fi
    rm -rf --one-file-system -- "$dir"
}

mkdir -p "$cache/pip" "$cache/cargo-registry" "$work"
exec 9>"$work/.lock"
flock -n 9 || die "another fresh-check.sh runs in $work (lock $work/.lock)"
for old in "$work"/root.*; do
    [[ -e $old ]] || continue
    echo "fresh-check.sh: removing $old, left by an interrupted run"
    remove_root "$old" || die "could not remove $old"
done

# --- the Debian 12 base ------------------------------------------------------------------------
base=$cache/base-$SUITE.tar
mirror=$(awk '/^URIs:/ { print $2; exit } /^deb / { print $2; exit }' \
    /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
if ((new_base)) || [[ ! -f $base ]]; then
    echo "== Debian $SUITE base: debootstrap from $mirror (a few minutes, about 100 MB)"
    start=$SECONDS
    tmp=$work/root.base
    # Its own mount namespace: debootstrap's /proc and /sys mounts end with it, even if killed.
    setpriv --pdeathsig KILL -- unshare --mount --propagation private --fork --kill-child=KILL -- \
        debootstrap --arch=amd64 "$SUITE" "$tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        {
            tail -n 20 "$work/debootstrap.log" >&2
            remove_root "$tmp" || true
            die "debootstrap failed (whole log: $work/debootstrap.log)"
        }
    # This machine's apt sources and apt settings, as a machine of this site would have them.
    rm -f "$tmp"/etc/apt/sources.list
    cp -a /etc/apt/sources.list.d/. "$tmp/etc/apt/sources.list.d/"
    [[ -f /etc/apt/sources.list ]] && cp -a /etc/apt/sources.list "$tmp/etc/apt/"
    cp -a /etc/apt/apt.conf.d/. "$tmp/etc/apt/apt.conf.d/"
    tar -C "$tmp" -cf "$base.part" . && mv "$base.part" "$base"
    remove_root "$tmp"
    echo "base ready in $(hms $((SECONDS - start))): $base"
fi

# --- one fresh root per command ----------------------------------------------------------------
toolchain=$(rustup default 2>/dev/null | awk '{ print $1 }') ||
    die "rustup not found: the README's commands need rustup's cargo (https://rustup.rs)"
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin
[[ -d $rustup_home/toolchains/$toolchain && -x $cargo_bin/rustup ]] ||
    die "rustup's default toolchain '$toolchain' is not in $rustup_home/toolchains or no $cargo_bin/rustup"

current=""
child=""
cleanup() {
    if [[ -n $child ]]; then
        kill -KILL "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    [[ -n $current ]] && remove_root "$current"
    return 0
}
trap cleanup EXIT
trap 'echo "fresh-check.sh: interrupted" >&2; exit 130' INT TERM HUP

# site_trust ROOTFS: this site's own trust anchors (an HTTPS proxy's CA, say): the certificates
# this machine's bundle holds beyond those of Debian's ca-certificates, put where
# update-ca-certificates adds them to the fresh root's bundle when ca-certificates is installed
# there (as on any machine of this site), and pip's site settings (/etc/pip.conf). Nothing else
# of this machine's configuration goes in.
site_trust() {
    local bundle=/etc/ssl/certs/ca-certificates.crt dest=$1/usr/local/share/ca-certificates
    [[ -r $bundle ]] || return 0
    mkdir -p "$dest"
    awk -v dest="$dest" '
        /-----BEGIN CERTIFICATE-----/ { body = ""; pem = $0 "\n"; inside = 1; next }
        /-----END CERTIFICATE-----/ {
            inside = 0
            pem = pem $0 "\n"
            if (FILENAME == bundle) {
                if (!(body in debian)) { n++; printf "%s", pem > (dest "/site-" n ".crt") }
            } else {
                debian[body] = 1
            }
            next
        }
        inside { body = body $0; pem = pem $0 "\n" }
    ' bundle="$bundle" /usr/share/ca-certificates/*/*.crt "$bundle"
    if [[ -x $1/usr/sbin/update-ca-certificates ]]; then
        chroot "$1" /usr/sbin/update-ca-certificates >/dev/null
    fi
    # pip trusts its own certificate list unless told otherwise; this site's pip settings say.
    if [[ -f /etc/pip.conf ]]; then
        cp /etc/pip.conf "$1/etc/pip.conf"
    fi
}

make_root() {
    local dir=$1
    mkdir -p "$dir"
    tar -C "$dir" -xf "$base"
    cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
    # The machine's name resolves, as Debian's installer leaves it (torchrun's rendezvous
    # looks it up).
    local name
    name=$(cat "$dir/etc/hostname" 2>/dev/null || hostname)
    if [[ -n $name ]] && ! grep -qw -- "$name" "$dir/etc/hosts"; then
        printf '127.0.1.1\t%s\n' "$name" >>"$dir/etc/hosts"
    fi
    site_trust "$dir"
    git clone --quiet --no-local "$ROOT" "$dir/root/shmem"
    git -C "$dir/root/shmem" checkout --quiet --detach "$sha"
    # rustup's toolchain as rustup-init leaves it: the proxies in ~/.cargo/bin, ~/.cargo/env
    # sourced by the login shell, the default toolchain in ~/.rustup (mounted read-only when
    # the command runs, so nothing of this machine can be changed from inside).
    mkdir -p "$dir/root/.cargo/bin" "$dir/root/.rustup/toolchains/$toolchain" "$dir/root/.cargo/registry"
    cp -a "$cargo_bin/rustup" "$dir/root/.cargo/bin/"
    local proxy
    for proxy in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt rust-gdb rust-lldb; do
        ln -s rustup "$dir/root/.cargo/bin/$proxy"
    done
    printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "default"\nauto_self_update = "disable"\n' \
        "$toolchain" >"$dir/root/.rustup/settings.toml"
    cat >"$dir/root/.cargo/env" <<'EOF'
case ":${PATH}:" in
    *:"$HOME/.cargo/bin":*) ;;
    *) export PATH="$HOME/.cargo/bin:$PATH" ;;
esac
EOF
    echo '. "$HOME/.cargo/env"' >>"$dir/root/.profile"
    echo '. "$HOME/.cargo/env"' >>"$dir/root/.bashrc"
}

results=()
status=0
for i in 0 1; do
    name=${names[$i]}
    cmd=${readme_cmds[$i]}
    [[ -z $only || $only == "$name" ]] || continue
    current=$work/root.$name
    echo
    echo "== $name: a fresh Debian $SUITE root ($current), commit ${sha:0:12}"
    make_root "$current"
    echo "== $name: $cmd   (output also in $work/$name.log)"
    start=$SECONDS
    rc=0
    # The download caches are the only things kept between runs; the toolchain is read-only.
    setpriv --pdeathsig KILL -- unshare --mount --pid --propagation private --fork --kill-child=KILL -- \
        bash -c 'set -e
            mkdir -p "$1/root/.cache/pip"
            mount --bind "$2" "$1/root/.cache/pip"
            mount --bind "$3" "$1/root/.cargo/registry"
            tc=$1/root/.rustup/toolchains/$5
            mount --bind "$4" "$tc"
            mount -o remount,bind,ro "$tc"
            exec bash "$6" --inside "$1" "$7"' \
        _ "$current" "$cache/pip" "$cache/cargo-registry" "$rustup_home/toolchains/$toolchain" \
        "$toolchain" "${BASH_SOURCE[0]}" "$cmd" > >(tee "$work/$name.log") 2>&1 &
    child=$!
    wait "$child" || rc=$?
    child=""
    took=$(hms $((SECONDS - start)))
    if ((rc == 0)); then
        results+=("$name: '$cmd' passed in $took")
    else
        results+=("$name: '$cmd' FAILED (exit $rc) after $took; log: $work/$name.log")
        status=1
    fi
    remove_root "$current" || status=1
    current=""
done

echo
echo "== fresh-check (Debian $SUITE, commit ${sha:0:12})"
printf '%s\n' "${results[@]}"
exit $status
