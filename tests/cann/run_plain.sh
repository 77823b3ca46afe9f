#!/usr/bin/env bash
# run_plain.sh [-s "S0 S1 ..."] [-m RANK:REGEX]... [-e VAR=VALUE]... [-c] NPES -- PROGRAM [ARGS...]
#
# Starts NPES copies of PROGRAM as plain processes, no launcher, as a CANN SHMEM program is
# started: each learns its rank from its arguments. In ARGS, {rank} becomes the copy's rank,
# {tmp} a directory fresh for this run (removed after) and {port} a port number fresh for this
# run, so concurrent tests never meet.
#   -s  the exit status every copy must have, in rank order (default: all 0)
#   -m  the output of copy RANK must match REGEX (extended grep), e.g. -m '0:PE 1: .*differs'
#   -e  set a variable for every copy
#   -c  make a CA and a certificate for 127.0.0.1 and ::1 (openssl) in {tmp}; {tls} becomes the
#       TLS info string that gives them (CANN's "tlsCaFile: ...; tlsCert: ...; tlsPk: ...;")
# Every copy is bounded by RUN_TIMEOUT seconds (default 60); a hang fails the test. Outputs are
# printed, by rank, when the test fails.
set -u
want="" matches=() envs=() certs=0
while :; do
    case ${1:-} in
    -s) want=$2; shift 2 ;;
    -m) matches+=("$2"); shift 2 ;;
    -e) envs+=("$2"); shift 2 ;;
    -c) certs=1; shift ;;
    *) break ;;
    esac
done
npes=$1
shift
[ "${1:-}" = -- ] && shift
limit=${RUN_TIMEOUT:-60}

# A launcher running this test must not leak into the copies.
unset SHMEM_RUN_FD SHMEM_RUN_RANK SHMEM_RUN_SIZE SHMEM_RUN_JOBID SHMEM_JOB_ID \
    OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK WORLD_SIZE

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Ports are drawn below the kernel's ephemeral range, which outgoing connections of other tests
# use; a port some other program holds anyway is met by drawing another and starting again.
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$ephemeral_low" -gt 12000 ] || ephemeral_low=32768
draw_port() { port=$((10000 + ($$ * 7 + RANDOM) % (ephemeral_low - 10000))); }
[ -z "$want" ] && want=$(for ((i = 0; i < npes; i++)); do printf '0 '; done)
tls=""
if [ $certs -eq 1 ]; then
    quiet() { "$@" >/dev/null 2>&1 || { echo "run_plain.sh: failed: $*"; "$@"; exit 1; }; }
    quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=test-ca -keyout "$tmp/ca.key" -out "$tmp/ca.pem"
    quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pe \
        -keyout "$tmp/pe.key" -out "$tmp/pe.csr"
    printf 'subjectAltName=IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth,clientAuth\n' \
        >"$tmp/ext.cnf"
    quiet openssl x509 -req -in "$tmp/pe.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
        -CAcreateserial -days 2 -extfile "$tmp/ext.cnf" -out "$tmp/pe.pem"
    tls="tlsCaFile: $tmp/ca.pem; tlsCert: $tmp/pe.pem; tlsPk: $tmp/pe.key;"
fi

run_once() {
    local pids=() i a args pid
    for ((i = 0; i < npes; i++)); do
        args=()
        for a in "$@"; do
            a=${a//\{rank\}/$i}
            a=${a//\{tmp\}/$tmp}
            a=${a//\{port\}/$port}
            a=${a//\{tls\}/$tls}
            args+=("$a")
        done
        env "${envs[@]}" timeout -k 5 "$limit" "${args[@]}" >"$tmp/out.$i" 2>&1 &
        pids+=($!)
    done
    got=""
    for pid in "${pids[@]}"; do
        wait "$pid"
        got+="$? "
    done
}
for attempt in 1 2 3; do
    draw_port
    run_once "$@"
    grep -q "port $port is in use" "$tmp"/out.* || break
    echo "run_plain.sh: port $port was taken by another program; starting again on another"
done

fail=0
if [ "$(echo $got)" != "$(echo $want)" ]; then
    echo "FAIL: exit statuses by rank: $got; wanted $want"
    fail=1
fi
for m in "${matches[@]}"; do
    r=${m%%:*} re=${m#*:}
    if ! grep -Eq -- "$re" "$tmp/out.$r"; then
        echo "FAIL: output of rank $r does not match: $re"
        fail=1
    fi
done
for ((i = 0; i < npes; i++)); do
    if [ $fail -ne 0 ] || [ -n "${VERBOSE:-}" ]; then
        echo "---- rank $i ----"
        cat "$tmp/out.$i"
    fi
done
[ $fail -eq 0 ] && echo "OK: $npes copies, statuses $got"
exit $fail
