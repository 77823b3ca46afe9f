#!/usr/bin/env bash
# port_in_use.sh SHMEMRUN PROGRAM: shmemrun --store on a port something else holds fails at
# once, naming the port, and starts no PE.
set -u
shmemrun=$1 program=$2
# Hold a free port for the length of the test.
portfile=$(mktemp)
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(60)' "$portfile" \
    </dev/null >/dev/null 2>&1 &
holder=$!
trap 'kill $holder 2>/dev/null; rm -f "$portfile"' EXIT
for _ in $(seq 100); do [ -s "$portfile" ] && break; sleep 0.05; done
port=$(cat "$portfile")
out=$("$shmemrun" -n 2 --timeout 30 --store "tcp://127.0.0.1:$port" "$program" none 2>&1)
status=$?
echo "$out"
[ "$status" -eq 1 ] || { echo "port_in_use: wanted status 1, got $status"; exit 1; }
grep -q "port $port is in use" <<<"$out" || { echo "port_in_use: port not named"; exit 1; }
grep -q "finished normally" <<<"$out" && { echo "port_in_use: a PE ran"; exit 1; }
echo "port_in_use: passed"
