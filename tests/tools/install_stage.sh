#!/usr/bin/env bash
# install_stage.sh <cmake> <build-dir> <stage-dir> <libdir>
# Installs the build tree into a fresh stage dir (the tree the install.* tests build against)
# and checks its shape; <libdir> is CMAKE_INSTALL_LIBDIR, relative to the prefix.
set -euo pipefail
cmake=${1:?}; build=${2:?}; stage=${3:?}; libdir=${4:?}
rm -rf "$stage"
"$cmake" --install "$build" --prefix "$stage"
for f in bin/shmemrun bin/oshrun bin/oshcc bin/oshc++ include/shmem.h \
         "$libdir/libshmem.so" "$libdir/libshmem.so.0" \
         "$libdir/cmake/shmem/shmemConfig.cmake" "$libdir/cmake/shmem/shmemConfigVersion.cmake" \
         "$libdir/pkgconfig/shmem.pc" "$libdir/libmf_smem.so" "$libdir/pkgconfig/mf_smem.pc" \
         include/smem/host/smem.h include/smem/host/smem_bm.h include/smem/host/smem_bm_def.h \
         include/smem/host/smem_shm.h include/smem/host/smem_shm_def.h \
         memfabric_hybrid/set_env.sh "memfabric_hybrid/$(uname -m)-linux/include/smem/host/smem.h" \
         "memfabric_hybrid/$(uname -m)-linux/lib64/libmf_smem.so"; do
    [[ -e $stage/$f ]] || { echo "FAIL: stage lacks $f"; exit 1; }
done
# The installed library carries no build-tree RPATH (consumers choose their own).
so=$stage/$libdir/libshmem.so.0
if readelf -d "$so" | grep -Eq 'R(UN)?PATH'; then
    echo "FAIL: $so has an RPATH/RUNPATH:"; readelf -d "$so" | grep -E 'R(UN)?PATH'; exit 1
fi
if ! readelf -d "$so" | grep -q 'SONAME.*\[libshmem\.so\.0\]'; then
    echo "FAIL: $so has no SONAME libshmem.so.0"; exit 1
fi
# libmf_smem.so finds libshmem.so.0 beside itself, and only there.
mf=$stage/$libdir/libmf_smem.so
if ! readelf -d "$mf" | grep -Eq 'R(UN)?PATH.*\[\$ORIGIN\]'; then
    echo "FAIL: $mf has no run path \$ORIGIN:"; readelf -d "$mf" | grep -E 'R(UN)?PATH' || true; exit 1
fi
echo "OK: staged $build into $stage"
