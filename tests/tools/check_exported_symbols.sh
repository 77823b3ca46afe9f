#!/usr/bin/env bash
# check_exported_symbols.sh <libshmem.so>
# Fails if the library exports (defines, dynamic table) any name outside the public families
# shmem_*, pshmem_*, shmemx_*, aclshmem* (docs/architecture.md §4), libmf_smem.so's private
# entry points shmemi_mf_*, and the deprecated OpenSHMEM routines without a shmem_ prefix listed below with their twins; the version node symbol
# (type A, e.g. SHMEM_0) is expected. Also fails on an empty export list or no shmem_init, and
# unless every shmem_X (and every name below) is a weak alias with a strong p-prefixed twin
# (pshmem_X, pstart_pes: the profiling interface). NM may name the nm to use (ctest passes
# CMake's).
set -euo pipefail

lib=${1:?usage: check_exported_symbols.sh <libshmem.so>}
nm_tool=${NM:-nm}
[[ -f $lib ]] || { echo "FAIL: $lib does not exist"; exit 1; }

# "<value> <type> <name>[@@version]" per symbol; the versioned suffix is dropped.
listing=$("$nm_tool" -D --defined-only "$lib")
names=$(awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' <<<"$listing" | sort -u)
count=$(grep -c . <<<"$names" || true)

if [[ $count -eq 0 ]]; then
    echo "FAIL: $lib exports no symbols (are public functions marked default-visible?)"
    exit 1
fi

# Deprecated OpenSHMEM names without the shmem_ prefix (cpp/include/shmem/deprecated.h), the
# only exported names outside the families; each with its twin p + name.
unprefixed=(start_pes _my_pe _num_pes shmalloc shfree shrealloc shmemalign)
allowed=$(printf '%s\n' "${unprefixed[@]}" "${unprefixed[@]/#/p}" | sort)

bad=$(grep -Ev '^(shmem_|pshmem_|shmemx_|aclshmem|shmemi_mf_)' <<<"$names" | comm -23 - <(echo "$allowed") || true)
if [[ -n $bad ]]; then
    echo "FAIL: $lib exports $(grep -c . <<<"$bad") name(s) outside shmem_*, pshmem_*, shmemx_*, aclshmem*, shmemi_mf_* and the deprecated ${unprefixed[*]} (and twins):"
    head -n 50 <<<"$bad" | sed 's/^/  /'
    exit 1
fi

if ! grep -qx 'shmem_init' <<<"$names"; then
    echo "FAIL: $lib does not export shmem_init"
    exit 1
fi

# Profiling interface: shmem_X weak (W), pshmem_X strong (T), one for one.
strong_shmem=$(awk '$2 == "T" && $3 ~ /^shmem_/ { sub(/@.*/, "", $3); print $3 }' <<<"$listing")
if [[ -n $strong_shmem ]]; then
    echo "FAIL: shmem_* routines defined strong instead of as weak aliases of pshmem_*:"
    head -n 20 <<<"$strong_shmem" | sed 's/^/  /'
    exit 1
fi
# The twin of a deprecated unprefixed name is p + name as well (pstart_pes, p_my_pe).
unprefixed_re="^($(IFS='|'; echo "${unprefixed[*]}"))\$"
weak=$(awk -v re="$unprefixed_re" '$2 == "W" { sub(/@.*/, "", $3) } $2 == "W" && ($3 ~ /^shmem_/ || $3 ~ re) { print $3 }' <<<"$listing" | sort)
twins=$(awk -v re="$unprefixed_re" '$2 == "T" { sub(/@.*/, "", $3); n = substr($3, 2) } $2 == "T" && ($3 ~ /^pshmem_/ || n ~ re) { print n }' <<<"$listing" | sort)
missing=$(comm -23 <(echo "$allowed") <(echo "$names"))
if [[ -n $missing ]]; then
    echo "FAIL: $lib does not export the deprecated names it must:"
    head -n 20 <<<"$missing" | sed 's/^/  /'
    exit 1
fi
unpaired=$(comm -3 <(echo "$weak") <(echo "$twins"))
if [[ -n $unpaired ]]; then
    echo "FAIL: shmem_X without a pshmem_X twin, or the reverse:"
    head -n 20 <<<"$unpaired" | sed 's/^/  /'
    exit 1
fi

echo "OK: $lib exports $count public names, nothing else; $(grep -c . <<<"$weak") weak shmem_* and deprecated names, each with its strong p-prefixed twin"
