#!/usr/bin/env bash
# Builds this operator against an installed shmem:
#   build.sh [-prefix DIR] [-build DIR] [-type Release|Debug]
# -prefix: where shmem is installed (default: $SHMEM_PREFIX, else the source tree's install/);
# -build: the build folder (default: build/ here). The program lands in <build>/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=${SHMEM_PREFIX:-$here/../../install}
build=$here/build
type=Release
while (($#)); do
    case $1 in
        -prefix) prefix=${2:?-prefix needs a directory}; shift 2 ;;
        -build) build=${2:?-build needs a directory}; shift 2 ;;
        -type) type=${2:?-type needs Release or Debug}; shift 2 ;;
        *) echo "build.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
    esac
done
[[ -d $prefix ]] || { echo "build.sh: -prefix $prefix: no such directory (install shmem first)" >&2; exit 2; }
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_PREFIX_PATH="$(cd "$prefix" && pwd)"
cmake --build "$build"
