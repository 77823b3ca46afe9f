#!/usr/bin/env bash
# Builds this operator against an installed shmem:
#   build.sh [-prefix DIR] [-build DIR] [-type Release|Debug]
# -prefix: where shmem is installed (default: $SHMEM_PREFIX, else the source tree's install/);
# -build: the build folder (default: build/ here). The program lands in <build>/.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/../common/build_op.sh" "$here" "$@"
