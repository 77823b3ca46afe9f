#!/usr/bin/env bash
# cargo_results.sh <log>
# Shows cargo test's own counts from <log>, the output of rust.cargo_test (kept by
# cargo_test.sh): each test binary's `Running` (or `Doc-tests`) line with its `test result:`
# line, then the totals. ctest counts the whole of cargo test as one test; this is what
# scripts/build.sh -uttests prints after ctest, and what the test rust.cargo_results checks.
# Fails when the log is missing, holds no result, or a binary started without a result.
set -euo pipefail
log=${1:?}
if [[ ! -f $log ]]; then
    echo "FAIL: no $log: rust.cargo_test did not run"
    exit 1
fi
awk '
    /^ *(Running|Doc-tests) / { print; started++; next }
    /^test result: / {
        print
        results++
        for (i = 1; i <= NF; i++) {
            if ($(i) ~ /^(passed|failed|ignored);?$/) {
                word = $(i); sub(/;$/, "", word)
                total[word] += $(i - 1)
            }
        }
    }
    END {
        if (results == 0) { print "FAIL: no \"test result:\" line: cargo test did not finish"; exit 1 }
        printf "cargo test: %d passed, %d failed, %d ignored, in %d test binaries\n",
            total["passed"], total["failed"], total["ignored"], results
        if (results < started) {
            printf "FAIL: %d test binaries started, %d gave a result\n", started, results
            exit 1
        }
    }
' "$log"
