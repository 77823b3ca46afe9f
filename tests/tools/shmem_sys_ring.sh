#!/usr/bin/env bash
# shmem_sys_ring.sh <cargo> <shmemrun> <npes>
# Builds the shmem-sys crate's example ring_put against this build's libshmem.so
# (SHMEM_LIB_DIR, CARGO_TARGET_DIR from the cargo environment ctest passes) and runs it under
# shmemrun with <npes> PEs: each PE checks the put, AMO and get of its neighbours. The
# launcher's --timeout turns a hang into a failure.
set -euo pipefail
cargo=${1:?} shmemrun=${2:?} npes=${3:?}
: "${SHMEM_LIB_DIR:?}" "${CARGO_TARGET_DIR:?}"
here=$(cd "$(dirname "$0")/../.." && pwd)
"$cargo" build --locked --quiet --manifest-path "$here/Cargo.toml" -p shmem-sys --example ring_put
exec "$shmemrun" -n "$npes" --timeout 60 "$CARGO_TARGET_DIR/debug/examples/ring_put"
