#!/usr/bin/env bash
# ctest cuda.bench_script: scripts/bench-cuda.sh and bench/cuda/report.py without a GPU.
#   - the script parses (bash -n; shellcheck too where it is installed) and --help answers;
#   - with no nvcc, no NVSHMEM and no install tree it exits 1 at once, naming each;
#   - with programs that find no GPU (a stand-in floor whose probe fails) it exits 1 saying
#     there is no GPU, and writes no result folder;
#   - report.py turns a few figures into a table with the targets, and refuses an empty file.
# Usage: script_check.sh <source tree> <scratch dir>
set -u
src=$1 work=$2
script=$src/scripts/bench-cuda.sh
rm -rf "$work" && mkdir -p "$work"
fails=0 passes=0
fail() { echo "cuda.bench_script: FAILED: $*"; fails=$((fails + 1)); }
ok() { echo "cuda.bench_script: ok: $*"; passes=$((passes + 1)); }

bash -n "$script" && ok "bash -n" || fail "bash -n $script"
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -S warning "$script" "$0" && ok "shellcheck" || fail "shellcheck"
else
    echo "cuda.bench_script: shellcheck not installed: bash -n only"
fi
bash "$script" --help | grep -q '^Usage: scripts/bench-cuda.sh' && ok "--help" || fail "--help"

out=$(env NVCC="$work/none/nvcc" NVSHMEM_HOME="$work/none" timeout 60 bash "$script" \
    --build-only --bin-dir "$work/bin" --prefix "$work/none" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q 'missing:' <<<"$out" && grep -q 'nvcc (NVCC=' <<<"$out" &&
    grep -q 'NVSHMEM (set NVSHMEM_HOME' <<<"$out" && grep -q 'install tree' <<<"$out"; then
    ok "nothing to build with: exit 1, each missing piece named"
else
    fail "nothing to build with: exit $rc, said: $out"
fi

mkdir -p "$work/fake/bin" "$work/prefix/bin"
printf '#!/bin/sh\necho "no CUDA GPU: cudaGetDeviceCount: no CUDA-capable device is detected"\nexit 1\n' \
    >"$work/fake/bin/floor"
printf '#!/bin/sh\nexit 0\n' >"$work/prefix/bin/shmemrun"
chmod +x "$work/fake/bin/floor" "$work/prefix/bin/shmemrun"
out=$(timeout 60 bash "$script" --bin-dir "$work/fake/bin" --prefix "$work/prefix" \
    --out "$work/results" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q 'no GPU to run on: no CUDA GPU' <<<"$out" && [ ! -e "$work/results" ]; then
    ok "no GPU: exit 1, says so, no results written"
else
    fail "no GPU: exit $rc, said: $out"
fi

# A whole run on stand-in programs (shell scripts that print one figure each): the script
# runs the floor, ours under (a stand-in) shmemrun and NVSHMEM's as BENCH_PE/BENCH_NPES
# processes with a unique-id file, and writes the raw lines, the table and the device note.
if command -v python3 >/dev/null 2>&1; then
    run=$work/run/bin
    mkdir -p "$run"
    line() { # bench name lib size scope blocks metric median
        printf '{"bench":"%s","name":"%s","lib":"%s","npes":2,"size":%s,"scope":"%s","blocks":%s,"threads":512,"metric":"%s","unit":"GB/s","median":%s,"min":%s,"max":%s,"trials":3,"iters":1,"gpu":"Stand-in","shared_gpu":true,"mps":false}' \
            "$@" "$8" "$8"
    }
    cat >"$run/floor" <<EOS
#!/bin/sh
if [ "\$1" = --probe ]; then echo "1 GPU(s); GPU 0: NVIDIA H100 80GB HBM3 (stand-in)"; exit 0; fi
echo '$(line floor memcpy_d2d cuda 268435456 stream 0 rw_bandwidth 3000)'
EOS
    for lib in shmem nvshmem; do
        cat >"$run/put_bw.$lib" <<EOS
#!/bin/sh
if [ $lib = nvshmem ]; then
    [ -n "\$BENCH_UID_FILE" ] && [ "\$BENCH_NPES" = 2 ] || { echo "no uid file or PE count" >&2; exit 2; }
    [ "\$BENCH_PE" = 0 ] || exit 0
fi
echo '$(line put_bw putmem_block $lib 268435456 block 132 rw_bandwidth 2800)'
EOS
        for p in onstream pingpong barrier; do printf '#!/bin/sh
exit 0
' >"$run/$p.$lib"; done
    done
    printf '#!/bin/sh
[ "$1" = --timeout ] && [ "$3" = -n ] && [ "$SHMEM_DEVICE" = cuda ] || exit 9
shift 4
exec "$@"
' \
        >"$work/prefix/bin/shmemrun"
    chmod +x "$run"/* "$work/prefix/bin/shmemrun"
    out=$(timeout 120 bash "$script" --no-mps --bin-dir "$run" --prefix "$work/prefix" \
        --out "$work/run/results" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c '"lib":"shmem"' "$work/run/results/raw.jsonl")" = 1 ] &&
        [ "$(grep -c '"lib":"nvshmem"' "$work/run/results/raw.jsonl")" = 1 ] &&
        grep -q '0.93x the floor' <<<"$out" && [ -s "$work/run/results/table.md" ] &&
        grep -q 'H100' "$work/run/results/device.txt"; then
        ok "a run on stand-ins: floor, both libraries, table and targets"
    else
        fail "a run on stand-ins: exit $rc, said: $out"
    fi

    raw=$work/raw.jsonl
    {
        echo '{"bench":"floor","name":"memcpy_d2d","lib":"cuda","npes":1,"size":268435456,"scope":"stream","blocks":0,"threads":0,"metric":"rw_bandwidth","unit":"GB/s","median":3000,"min":2990,"max":3010,"trials":3,"iters":1,"gpu":"GPU","shared_gpu":false,"mps":false}'
        echo '{"bench":"put_bw","name":"putmem_block","lib":"shmem","npes":2,"size":268435456,"scope":"block","blocks":132,"threads":512,"metric":"rw_bandwidth","unit":"GB/s","median":2800,"min":2790,"max":2810,"trials":3,"iters":1,"gpu":"GPU","shared_gpu":true,"mps":true}'
        echo '{"bench":"put_bw","name":"putmem_block","lib":"nvshmem","npes":2,"size":268435456,"scope":"block","blocks":132,"threads":512,"metric":"rw_bandwidth","unit":"GB/s","median":2900,"min":2890,"max":2910,"trials":3,"iters":1,"gpu":"GPU","shared_gpu":true,"mps":true}'
        echo '{"bench":"pingpong","name":"p+quiet","lib":"shmem","npes":2,"size":8,"scope":"thread","blocks":1,"threads":1,"metric":"latency","unit":"us","median":1.5,"min":1.4,"max":1.6,"trials":3,"iters":100,"gpu":"GPU","shared_gpu":true,"mps":true}'
    } >"$raw"
    out=$(python3 "$src/bench/cuda/report.py" "$raw" --table "$work/table.md" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q 'Targets: 1 of 2 met' <<<"$out" &&
        grep -q 'MISSED put block 256 MiB: 0.97x NVSHMEM' <<<"$out" &&
        grep -q '| block | 256 MiB | 2800.0 GB/s | 132 | 2900.0 GB/s | 132 | 0.97x | 0.93x |' \
            "$work/table.md"; then
        ok "report.py: table and targets"
    else
        fail "report.py: exit $rc, said: $out"
    fi
    : >"$work/empty.jsonl"
    if python3 "$src/bench/cuda/report.py" "$work/empty.jsonl" >/dev/null 2>&1; then
        fail "report.py accepted a file with no figures"
    else
        ok "report.py refuses no figures"
    fi
else
    echo "cuda.bench_script: python3 not installed: report.py not checked"
fi

echo "cuda.bench_script: $passes passed, $fails failed"
[ $fails -eq 0 ]
