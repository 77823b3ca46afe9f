#!/usr/bin/env bash
# consumer_pkgconfig.sh <pkg-config> <cc> <consumer-src> <work-dir> <stage-dir> <libdir>
# Builds ring.c with only the flags `pkg-config --cflags --libs shmem` gives for the staged
# tree and runs it under the staged launcher on 2 PEs, with no LD_LIBRARY_PATH: the flags
# alone must let the program find libshmem.so.0 at run time. Then the same for mf_general.c with
# `pkg-config --cflags --libs mf_smem` (memfabric's API, libmf_smem.so), run as a plain process.
set -euo pipefail
pkgconfig=${1:?}; cc=${2:?}; src=${3:?}; work=${4:?}; stage=${5:?}; libdir=${6:?}

rm -rf "$work"
mkdir -p "$work"
libdir=$stage/$libdir
export PKG_CONFIG_PATH=$libdir/pkgconfig
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR

"$pkgconfig" --exists --print-errors shmem
echo "shmem $("$pkgconfig" --modversion shmem)"
flags=$("$pkgconfig" --cflags --libs shmem)
echo "pkg-config --cflags --libs shmem: $flags"
case $flags in *-lshmem*) ;; *) echo "FAIL: no -lshmem"; exit 1 ;; esac

# shellcheck disable=SC2086  # the flags are meant to be split
"$cc" -O2 "$src/ring.c" -o "$work/ring_c" $flags
unset LD_LIBRARY_PATH LD_PRELOAD
"$stage/bin/shmemrun" -n 2 --timeout 60 "$work/ring_c"

"$pkgconfig" --exists --print-errors mf_smem
flags=$("$pkgconfig" --cflags --libs mf_smem)
echo "pkg-config --cflags --libs mf_smem: $flags"
case $flags in *-lmf_smem*) ;; *) echo "FAIL: no -lmf_smem"; exit 1 ;; esac
# shellcheck disable=SC2086  # the flags are meant to be split
"$cc" -O2 "$src/mf_general.c" -o "$work/mf_general" $flags
"$work/mf_general"
echo "OK: pkg-config consumer builds and runs"
