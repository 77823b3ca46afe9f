#!/usr/bin/env bash
# check_api_list.sh LIST REFERENCE [LIBRARY]
# (a) Fails unless LIST (tests/abi/openshmem-1.5-api.txt) contains every name of REFERENCE
#     (tests/abi/reference-symbols.txt, the names widely used OpenSHMEM test suites link
#     against), printing each one it lacks.
# (b) With LIBRARY (libshmem.so): fails unless the library exports (defines, dynamic table)
#     every name of LIST and its profiling twin p + name, printing every missing name and the
#     count. NM may name the nm to use. Lines starting with # are comments.
set -euo pipefail

list=${1:?usage: check_api_list.sh LIST REFERENCE [LIBRARY]}
reference=${2:?usage: check_api_list.sh LIST REFERENCE [LIBRARY]}
lib=${3:-}
nm_tool=${NM:-nm}

names() { grep -v '^#' "$1" | grep . | sort -u; }

status=0
not_listed=$(comm -13 <(names "$list") <(names "$reference"))
if [[ -n $not_listed ]]; then
    echo "FAIL: $(grep -c . <<<"$not_listed") name(s) of $reference missing from $list:"
    sed 's/^/  /' <<<"$not_listed"
    status=1
else
    echo "OK: $list ($(names "$list" | grep -c .) names) holds all $(names "$reference" | grep -c .) names of $reference"
fi

if [[ -n $lib ]]; then
    [[ -f $lib ]] || { echo "FAIL: $lib does not exist"; exit 1; }
    exported=$("$nm_tool" -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
    wanted=$(names "$list" | awk '{ print; print "p" $0 }' | sort -u)
    missing=$(comm -23 <(echo "$wanted") <(echo "$exported"))
    if [[ -n $missing ]]; then
        echo "FAIL: $lib lacks $(grep -c . <<<"$missing") of the $(grep -c . <<<"$wanted") names of $list and their p-twins:"
        sed 's/^/  /' <<<"$missing"
        echo "FAIL: $(grep -c . <<<"$missing") name(s) missing"
        status=1
    else
        echo "OK: $lib exports every name of $list and its p-twin ($(grep -c . <<<"$wanted") names)"
    fi
fi
exit $status
