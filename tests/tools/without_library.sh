#!/usr/bin/env bash
# without_library.sh SONAME -- COMMAND...
# Runs COMMAND in a private mount namespace where the library SONAME (as the loader's cache
# finds it) is /dev/null, so loading it fails as on a machine without it. Needs root (for the
# namespace); exits 77 (skipped) otherwise or when the library is not installed here. Nothing
# is left behind: the mount lives and dies with the namespace.
set -u
soname=$1
shift
[ "${1:-}" = "--" ] && shift
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
    echo "without_library: skipped (needs root and unshare)"
    exit 77
fi
path=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$soname" '$1 == n { print $NF; exit }')
if [ -z "$path" ]; then
    echo "without_library: skipped ($soname is not installed here)"
    exit 77
fi
exec unshare --mount --propagation private -- \
    sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$(readlink -f "$path")" "$@"
