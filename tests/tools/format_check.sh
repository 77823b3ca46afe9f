#!/usr/bin/env bash
# format_check.sh <source-dir> <work-dir>
# scripts/format-check.sh checks the sources the project owns and nothing else: in a copy of the
# tracked files (a git checkout of its own),
#   1. a badly formatted C file under a git-ignored build folder (CMake's CMakeCCompilerId.c,
#      as an operator example's own build leaves it in examples/<op>/build/) is not checked;
#   2. the same file tracked by git fails the check, naming it;
#   3. outside a git checkout (the same copy without .git), build folders are skipped too.
set -euo pipefail
src=${1:?}; work=${2:?}
command -v clang-format >/dev/null 2>&1 || { echo "SKIP: no clang-format"; exit 77; }
command -v git >/dev/null 2>&1 || { echo "SKIP: no git"; exit 77; }

rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
copy=$work/src
mkdir -p "$copy"
# The tracked files as they are in the source tree now (edits included, nothing generated).
git -C "$src" ls-files -z --cached | (cd "$src" && tar --null -T - -cf - 2>/dev/null) | tar -C "$copy" -xf -
git -C "$copy" init -q
git -C "$copy" add -A

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
bad='int    main( void ){return 0 ;}'
generated=examples/allgather/build/CMakeFiles/3.25.1/CompilerIdC/CMakeCCompilerId.c
mkdir -p "$copy/$(dirname "$generated")"
printf '%s\n' "$bad" >"$copy/$generated"
git -C "$copy" check-ignore -q "$generated" || fail "$generated is not git-ignored: the test no longer tests"

run() {
    rc=0
    (cd "$copy" && scripts/format-check.sh) >"$work/out" 2>&1 || rc=$?
    sed 's/^/    | /' "$work/out"
}

echo "--- 1. a generated file under a git-ignored build folder is not checked"
run
((rc == 0)) || fail "format-check.sh failed (exit $rc) on a file under a git-ignored build folder"

echo "--- 2. the same file, tracked, fails the check"
git -C "$copy" add -f "$generated"
run
((rc != 0)) || fail "format-check.sh passed a badly formatted tracked file"
grep -q CMakeCCompilerId.c "$work/out" || fail "the failure does not name the badly formatted file"
git -C "$copy" rm -q --cached "$generated"

echo "--- 3. outside a git checkout, build folders are skipped"
rm -rf "$copy/.git"
run
((rc == 0)) || fail "format-check.sh failed (exit $rc) outside git on a file under a build folder"

((failures == 0)) || { echo "$failures failure(s)"; exit 1; }
echo "format-check.sh: checks what git tracks, skips build folders"
