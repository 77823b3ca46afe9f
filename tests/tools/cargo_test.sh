#!/usr/bin/env bash
# cargo_test.sh <log> <command>...
# Runs <command> (cargo test, for ctest's rust.cargo_test) with its output both on stdout, for
# ctest, and in <log>, from which scripts/build.sh -uttests shows cargo's own `test result:`
# lines: ctest counts the whole of cargo test as one test. Exits with the command's status.
set -euo pipefail
log=${1:?}
shift
mkdir -p "$(dirname "$log")"
"$@" 2>&1 | tee "$log"
