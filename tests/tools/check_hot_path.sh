#!/usr/bin/env bash
# check_hot_path.sh <libshmem.so>
# The per-call routines of the data path do their work inline: a put, get or AMO to a mapped
# peer is a range check, a load of the peer's base and a copy or one atomic
# (docs/architecture.md §8). Fails when one of the routines below calls anything on its way
# other than its own cold part (errors and the transport path), memcpy or the copy for aliased
# ranges: the sign that the compiler outlined a helper of rma.h, amo.h or internal.h.
# OBJDUMP may name the objdump to use.
set -euo pipefail

lib=${1:?usage: check_hot_path.sh <libshmem.so>}
objdump_tool=${OBJDUMP:-objdump}
[[ -f $lib ]] || { echo "FAIL: $lib does not exist"; exit 1; }

routines=(pshmem_long_p pshmem_long_g pshmem_int_p pshmem_int_g pshmem_putmem pshmem_getmem
    pshmem_putmem_nbi pshmem_long_put pshmem_long_get pshmem_long_atomic_fetch_add
    pshmem_uint_atomic_fetch_add pshmem_ulong_atomic_add pshmem_uint_atomic_fetch
    pshmem_ulong_atomic_compare_swap pshmem_ulong_atomic_swap pshmem_ulong_atomic_set
    pshmem_ulong_atomic_fetch_xor pshmem_ctx_long_p pshmem_ctx_long_g)

bad=0
for r in "${routines[@]}"; do
    body=$("$objdump_tool" -d --no-show-raw-insn "--disassemble=$r" "$lib" | sed -n "/<$r>:/,/^$/p")
    if [[ -z $body ]]; then
        echo "FAIL: $r is not in $lib"
        bad=1
        continue
    fi
    # Calls and tail jumps to another function: "call <name>" or "jmp <name>" without +offset.
    while read -r target; do
        case $target in
            "$r" | "$r."* | memcpy@plt | *copy_aliasing* | *fail* | *transport* | *remote_miss* | *amo_via*) ;;
            *)
                echo "FAIL: $r calls $target on its way (an outlined data-path helper?)"
                bad=1
                ;;
        esac
    done < <(grep -oE '(call|jmp) +[0-9a-f]+ <[^>+]+>' <<<"$body" | sed -E 's/.*<([^>]+)>/\1/' | sort -u)
done
((bad == 0)) || exit 1
echo "ok: ${#routines[@]} data-path routines call nothing but their cold paths"
