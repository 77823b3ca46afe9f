#!/usr/bin/env bash
# readme_snippets.sh <page> <stage-dir> <work-dir> <cc> <cxx> <cmake> <generator>
# Checks every fenced code block of one Markdown page (README.md, or a guide page docs/*.md)
# against the staged install, so that what the page shows keeps compiling and running as the
# library changes. Each page is checked on its own, in its own work dir: a block may use what
# earlier blocks of the same page saved, never another page's.
#
# How blocks are written (the conventions this test reads):
#   - Every fence names its language right after the backticks: c, cpp, cmake, sh, python or
#     text.
#     A fence with no language, or another one, fails the test.
#   - text: never checked. For what is not code: usage synopses, output, layouts.
#   - c, cpp: a program when it defines main: built with the staged oshcc / oshc++ (-std=c11 /
#     -std=c++17, -Wall -Wextra -Werror) and run under the staged shmemrun on 4 PEs; it must
#     exit 0. Without main: a translation unit, built into a shared object with
#     -Wl,--no-undefined, so every routine it calls must exist in libshmem.
#   - cmake: lines of a project's CMakeLists.txt that use a target named `app`. The test puts
#     them in a project (cmake_minimum_required, project, add_executable(app ...) from the
#     last program block above), configures it with CMAKE_PREFIX_PATH=<stage>, builds it and
#     runs app under shmemrun on 4 PEs.
#   - python: a program run under the staged shmemrun on 4 PEs by the Python that
#     SHMEM_README_PYTHON names (the build's virtual environment, where the shmem wheel is
#     installed; set when the wheel is built), with the staged library; it must exit 0. Without
#     SHMEM_README_PYTHON it is only compiled (python3 -m py_compile).
#   - sh: commands a user types, run with bash -e in the work dir, where `install` is the
#     staged install tree (the README's ./install) and earlier blocks were saved (below).
#   - A marker line right before a fence changes how that block is taken:
#       <!-- readme-test: file NAME -->   also save the block as NAME in the work dir (e.g.
#                                         hello.c, for an sh block that builds it);
#       <!-- readme-test: skip: WHY -->   do not build or run it (sh: syntax check only), e.g.
#                                         the build commands this test is itself part of;
#       <!-- readme-test: torch -->       a python block that needs torch: skipped here, run
#                                         by the torch tests (tests/torch/run.sh readme);
#       <!-- readme-test: root -->        an sh block that needs root and network namespaces
#                                         (`ip netns add`): run only where both are there;
#                                         elsewhere the page's root blocks are skipped and,
#                                         when every other block works, the test exits 77
#                                         (ctest: Skipped) naming why;
#       <!-- readme-test: cleanup -->     an sh block that undoes what earlier blocks made: it
#                                         also runs when the test ends early, whatever happened
#                                         (with root: only when root blocks run).
#     Several markers may stand on consecutive lines right before the fence.
#   - With SHMEM_DOCS_SYNTAX_ONLY=1 no block is built or run, only checked as the skipped ones
#     are (for a page whose blocks are long runs, e.g. docs/performance.md's benchmarks).
set -euo pipefail
readme=${1:?}; stage=${2:?}; work=${3:?}; cc=${4:?}; cxx=${5:?}; cmake=${6:?}; generator=${7:?}
# How the page is named in messages: README.md, docs/<page>.md.
page=$(basename "$readme")
[[ $(basename "$(dirname "$readme")") == docs ]] && page=docs/$page
export SHMEM_CC=$cc SHMEM_CXX=$cxx
npes=4
run_timeout=120

rm -rf "$work"
mkdir -p "$work/blocks"
stage=$(cd "$stage" && pwd)
ln -s "$stage" "$work/install"

# Split the README into blocks: blocks/<n> holds the text of block n (dedented to its fence),
# blocks/index one line per block: n, line, language, file, skip reason, split by \037 (not a
# tab: read would merge the empty fields that tabs delimit).
awk -v dir="$work/blocks" '
    function flush_markers() { mfile = ""; mskip = ""; mroot = 0; mcleanup = 0 }
    BEGIN { n = 0; open = 0; flush_markers() }
    {
        line = $0
        lead = match(line, /[^ ]/) ? RSTART - 1 : length(line)
        rest = substr(line, lead + 1)
        if (open) {
            if (substr(rest, 1, length(fence)) == fence && rest ~ /^(```+|~~~+) *$/) {
                open = 0
                close(out)
                next
            }
            text = line
            for (i = 0; i < indent && substr(text, 1, 1) == " "; i++) text = substr(text, 2)
            print text > out
            next
        }
        if (rest ~ /^<!-- readme-test: file [^ ]+ -->$/) {
            mfile = rest
            sub(/^<!-- readme-test: file /, "", mfile)
            sub(/ -->$/, "", mfile)
            next
        }
        if (rest == "<!-- readme-test: torch -->") {
            mskip = "needs torch: run by the torch tests (tests/torch/run.sh readme)"
            next
        }
        if (rest == "<!-- readme-test: root -->") {
            mroot = 1
            next
        }
        if (rest == "<!-- readme-test: cleanup -->") {
            mcleanup = 1
            next
        }
        if (rest ~ /^<!-- readme-test: skip: .* -->$/) {
            mskip = rest
            sub(/^<!-- readme-test: skip: /, "", mskip)
            sub(/ -->$/, "", mskip)
            next
        }
        if (rest ~ /^(```|~~~)/) {
            fence = rest
            sub(/[^`~].*$/, "", fence)
            info = substr(rest, length(fence) + 1)
            sub(/^ +/, "", info)
            lang = info
            sub(/[ {].*$/, "", lang)
            n++
            out = dir "/" n
            printf "" > out
            printf "%d\037%d\037%s\037%s\037%s\037%d\037%d\n", n, NR, lang, mfile, mskip, mroot, \
                mcleanup > (dir "/index")
            open = 1
            indent = lead
            flush_markers()
            next
        }
        if (rest != "") flush_markers()
    }
    END { if (open) { print "unclosed fence at the end of the file" > "/dev/stderr"; exit 1 } }
' "$readme"
if [[ ! -f $work/blocks/index ]]; then
    echo "OK: $page has no fenced blocks"
    exit 0
fi

# Root blocks run only where network namespaces can be made (checked once, by making one).
can_root=0
why_not_root="needs root"
if [[ $(id -u) == 0 ]] && command -v ip >/dev/null; then
    probe=shmem-docs-probe-$$
    if ip netns add "$probe" 2>/dev/null; then
        ip netns del "$probe"
        can_root=1
    else
        why_not_root="cannot make a network namespace here (ip netns add failed)"
    fi
elif [[ $(id -u) == 0 ]]; then
    why_not_root="needs iproute2's ip"
fi
# Cleanup blocks run where they stand, and also at exit when the test ends before reaching
# them (a signal, a timeout), whatever happened before.
cleanups=()
while IFS=$'\037' read -r n line lang file skip root cleanup; do
    if [[ $cleanup == 1 && -z $skip && ($root == 0 || $can_root == 1) ]]; then
        cleanups+=("$work/blocks/$n")
    fi
done <"$work/blocks/index"
run_cleanups() {
    local c
    for c in "${cleanups[@]+"${cleanups[@]}"}"; do
        echo "--- cleanup: $c"
        (cd "$work" && timeout "$run_timeout" bash "$c") || echo "NOTE: cleanup block $c failed"
    done
    cleanups=()
}
# A cleanup block undoes what its page's blocks made, whoever made it: it runs first too, in
# case a run killed outright (SIGKILL) left something behind.
block_pid=
stop() {
    [[ -z $block_pid ]] || kill -TERM "$block_pid" 2>/dev/null
    wait 2>/dev/null
    exit "$1"
}
trap run_cleanups EXIT
trap 'stop 143' TERM
trap 'stop 130' INT
for c in "${cleanups[@]+"${cleanups[@]}"}"; do
    echo "--- cleanup first: $c"
    (cd "$work" && timeout "$run_timeout" bash "$c") || echo "NOTE: cleanup block $c failed"
done

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
# run_pes <program>: the program under the staged launcher, as the README's users start one.
run_pes() { "$work/install/bin/shmemrun" -n "$npes" --timeout "$run_timeout" "$@"; }

last_program=""
root_skipped=0
while IFS=$'\037' read -r n line lang file skip root cleanup; do
    where="$page:$line ($lang block $n)"
    src=$work/blocks/$n
    [[ -n $file ]] && cp "$src" "$work/$file"
    case $lang in
        c | cpp | cmake | sh | python | text) ;;
        "") fail "$page:$line: a fence without a language; name one (c, cpp, cmake, sh, python or text)"; continue ;;
        *) fail "$page:$line: language '$lang' is none of c, cpp, cmake, sh, python, text"; continue ;;
    esac
    if [[ $lang == text ]]; then
        echo "--- $where: text, not checked"
        continue
    fi
    if [[ ${SHMEM_DOCS_SYNTAX_ONLY:-0} == 1 && -z $skip ]]; then
        skip="SHMEM_DOCS_SYNTAX_ONLY=1: syntax only"
    fi
    if [[ $root == 1 && $can_root == 0 && -z $skip ]]; then
        skip="$why_not_root: SKIPPED"
        root_skipped=1
    fi
    if [[ $cleanup == 1 ]]; then
        # Runs here: no longer pending for the exit.
        pending=()
        for c in "${cleanups[@]+"${cleanups[@]}"}"; do [[ $c == "$src" ]] || pending+=("$c"); done
        cleanups=("${pending[@]+"${pending[@]}"}")
    fi
    if [[ -n $skip ]]; then
        echo "--- $where: skipped ($skip)"
        if [[ $lang == sh ]] && ! bash -n "$src"; then
            fail "$where: not valid shell"
        elif [[ $lang == python ]] && ! python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$src"; then
            fail "$where: not valid Python"
        fi
        continue
    fi
    echo "--- $where"
    case $lang in
        c | cpp)
            if [[ $lang == c ]]; then
                name=${file:-block$n.c}
                build=("$work/install/bin/oshcc" -std=c11)
            else
                name=${file:-block$n.cpp}
                build=("$work/install/bin/oshc++" -std=c++17)
            fi
            [[ -n $file ]] || cp "$src" "$work/$name"
            build+=(-Wall -Wextra -Werror)
            if grep -Eq '(^|[^[:alnum:]_])main *\(' "$src"; then
                if ! (cd "$work" && "${build[@]}" "$name" -o "prog$n"); then
                    fail "$where: does not build"
                elif ! (cd "$work" && run_pes "./prog$n"); then
                    fail "$where: did not exit 0 under shmemrun -n $npes"
                fi
                last_program=$name
            elif ! (cd "$work" && "${build[@]}" -fPIC -shared -Wl,--no-undefined "$name" \
                -o "lib$n.so"); then
                fail "$where: does not build (as a shared object: no main)"
            fi
            ;;
        cmake)
            if [[ -z $last_program ]]; then
                fail "$where: no program block above it to build as app"
                continue
            fi
            proj=$work/cmake$n
            mkdir -p "$proj"
            cp "$work/$last_program" "$proj/"
            {
                echo "cmake_minimum_required(VERSION 3.25)"
                echo "project(readme_block$n LANGUAGES C CXX)"
                echo "add_executable(app $last_program)"
                cat "$src"
            } >"$proj/CMakeLists.txt"
            if ! "$cmake" -S "$proj" -B "$proj/build" -G "$generator" \
                -DCMAKE_PREFIX_PATH="$stage" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" ||
                ! "$cmake" --build "$proj/build"; then
                fail "$where: the project around it ($proj/CMakeLists.txt) does not build"
            elif ! (cd "$proj" && run_pes ./build/app); then
                fail "$where: app did not exit 0 under shmemrun -n $npes"
            fi
            ;;
        python)
            name=${file:-block$n.py}
            [[ -n $file ]] || cp "$src" "$work/$name"
            if ! python3 -m py_compile "$work/$name"; then
                fail "$where: not valid Python"
            elif [[ -z ${SHMEM_README_PYTHON:-} ]]; then
                echo "    (compiled only: SHMEM_README_PYTHON is not set, no shmem wheel built)"
            elif ! (cd "$work" && LD_LIBRARY_PATH=$stage/lib run_pes "$SHMEM_README_PYTHON" "$name"); then
                fail "$where: did not exit 0 under shmemrun -n $npes with $SHMEM_README_PYTHON"
            fi
            ;;
        sh)
            # In the background, so that a signal to this test runs the cleanups at once
            # (bash runs traps between commands, and `wait` is one).
            (cd "$work" && exec timeout "$run_timeout" bash -e "$src") &
            block_pid=$!
            if ! wait "$block_pid"; then
                fail "$where: the commands failed in $work"
            fi
            block_pid=
            ;;
    esac
done <"$work/blocks/index"

if ((failures)); then
    echo "FAIL: $failures block(s) of $page above do not work as written"
    exit 1
fi
if ((root_skipped)); then
    # The other blocks passed; the page's root blocks did not run: a skip, not a pass.
    echo "SKIPPED: the root blocks of $page ($why_not_root); every other block works as written"
    exit 77
elif [[ ${SHMEM_DOCS_SYNTAX_ONLY:-0} == 1 ]]; then
    echo "OK: every block of $page is valid (syntax only)"
else
    echo "OK: every block of $page builds and runs as written"
fi
