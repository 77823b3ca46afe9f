#!/usr/bin/env bash
# expect_failure.sh STATUS REGEX [REGEX...] -- COMMAND...
# Runs COMMAND and passes only if it exits with STATUS ("nonzero" for any failure) and its
# combined output matches every extended REGEX (each on a line of its own). Used for the
# bad-input and failure tests, whose point is the message a user sees and the status the job
# ends with.
set -u
want=$1
shift
regexes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    regexes+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$want" = nonzero ]; then
    [ "$status" -ne 0 ] || { echo "expect_failure: wanted a failure, got status 0"; exit 1; }
elif [ "$status" -ne "$want" ]; then
    echo "expect_failure: wanted status $want, got $status"
    exit 1
fi
for regex in "${regexes[@]}"; do
    if ! grep -Eq -- "$regex" <<<"$out"; then
        echo "expect_failure: output does not match: $regex"
        exit 1
    fi
done
echo "expect_failure: status $status and message as expected"
