#!/usr/bin/env bash
# install_stage.sh <cmake> <build-dir> <stage-dir>
# Installs the build tree into a fresh stage dir: the tree the install.* tests build against.
set -euo pipefail
cmake=${1:?}; build=${2:?}; stage=${3:?}
rm -rf "$stage"
"$cmake" --install "$build" --prefix "$stage"
for f in bin/shmemrun bin/oshrun bin/oshcc bin/oshc++ include/shmem.h \
         lib*/cmake/shmem/shmemConfig.cmake lib*/pkgconfig/shmem.pc; do
    # shellcheck disable=SC2086  # the glob in lib* is meant
    ls "$stage"/$f >/dev/null 2>&1 || { echo "FAIL: stage lacks $f"; exit 1; }
done
# The installed library carries no build-tree RPATH (consumers choose their own).
for so in "$stage"/lib*/libshmem.so.0; do
    if readelf -d "$so" | grep -Eq 'R(UN)?PATH'; then
        echo "FAIL: $so has an RPATH/RUNPATH:"; readelf -d "$so" | grep -E 'R(UN)?PATH'; exit 1
    fi
done
echo "OK: staged $build into $stage"
