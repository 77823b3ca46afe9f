# run_op.sh: what the operators' run.sh share, sourced by each after its option parsing.
# Needs `here` (the operator's folder), `op` (the program's name), `ranks`, `bin` and `data`
# (empty: none given). Checks -ranks and -bin, sets `launcher` ($SHMEMRUN, else
# $SHMEM_PREFIX/bin/shmemrun, else the source tree's install/bin/shmemrun, else shmemrun on
# PATH), and when -data was not given makes `data` a temporary folder, removed on exit.
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -ranks '$ranks': give a number of PEs" >&2; exit 2; }
[[ -x $bin ]] || { echo "run.sh: -bin $bin: not built (run build.sh)" >&2; exit 2; }
launcher=${SHMEMRUN:-}
if [[ -z $launcher ]]; then
    for c in "${SHMEM_PREFIX:-/nonexistent}/bin/shmemrun" "$here/../../install/bin/shmemrun"; do
        [[ -x $c ]] && { launcher=$c; break; }
    done
fi
launcher=${launcher:-$(command -v shmemrun || true)}
[[ -n $launcher ]] || { echo "run.sh: no shmemrun found: set SHMEMRUN or SHMEM_PREFIX" >&2; exit 2; }
if [[ -z $data ]]; then
    data=$(mktemp -d "${TMPDIR:-/tmp}/$op.XXXXXX")
    trap 'rm -rf "$data"' EXIT
fi
