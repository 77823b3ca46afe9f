#!/usr/bin/env bash
# scripts/bench.sh: the benchmark suite in one command. Builds every bench/*.c against this
# library (install/bin/oshcc) and against Debian's Open MPI OSHMEM (/usr/bin/oshcc), runs the
# two alternately over rounds next to the physical floor (bench/floor.c), pinned to cores, and
# writes bench/results/<date>-<host>/ (raw JSON lines, table.md, PNG plots) and
# docs/performance.md.
#
# Usage: scripts/bench.sh [options]
#   (no option)        full sweeps (the "full" lines of bench/*.sweep), 5 rounds, callgrind
#   --quick            the "quick" lines, 2 rounds, no callgrind: under 2 minutes
#   --rounds N         rounds (each runs every sweep line once per variant)
#   --out DIR          result folder (default bench/results/<date>-<host>, -quick appended)
#   --prefix DIR       our library's install tree (default ./install)
#   --no-lib-build     do not rebuild/install the library first (default: cmake --build build
#                      && cmake --install, or scripts/build.sh when there is no build folder)
#   --no-oshmem        our library and the floor only
#   --baseline DIR     in OSHMEM's place, another install tree of this library (an earlier
#                      commit, built with scripts/build.sh --prefix DIR or cmake --install):
#                      its oshcc builds the programs and its shmemrun runs them, alternating
#                      with ours as OSHMEM would; the report calls it "baseline". No callgrind,
#                      docs/performance.md left alone.
#   --no-callgrind     skip the instruction counts
#   --callgrind-prefix DIR   run our side of callgrind with the install tree DIR (a build of
#                      the library that valgrind can run, if the default one cannot)
#   --no-docs          leave docs/performance.md alone
#   --only P1,P2       only these programs (rma_lat pingpong rma_bw amo sync floor hello kernel
#                      matmul mf_bm_copy)
#   --smoke            the "smoke" lines, our library only, one round, no report: the bench.smoke
#                      ctest. With --bin-dir DIR (prebuilt programs) and --shmemrun PATH.
#   -h, --help         this text
#
# Pinning: every PE pins itself to CPU (PE mod online CPUs) with sched_setaffinity right after
# shmem_init (bench/common.h), under both launchers, so both get the same placement; oshrun
# additionally gets --bind-to core:overload-allowed (the same map at 2 PEs). The floor pins its
# two processes to CPUs 0 and 1. BENCH_PIN=none turns the in-program pinning off.
#
# Alternation: inside a round, every sweep line runs once per variant back to back, ours first
# in odd rounds and OSHMEM first in even ones; the memcpy floor runs at the start of every round
# and the ping-pong floor right before each library's ping-pong (tagged "before").
# matmul (matmul_allreduce: C = sum over PEs of A x B, every PE ends with C) compares this
# library's fused kernel (bench/matmul.c, which includes examples/matmul_allreduce's kernel) and
# its sequential form (cblas_sgemm, then shmem_float_sum_reduce) with cblas_sgemm then Open MPI's
# MPI_Allreduce (bench/matmul_mpi.c, built with mpicc and run with mpirun under oshrun's flags,
# as the variant "mpi"); ours and mpi alternate like ours and OSHMEM. Both link OpenBLAS
# (pkg-config openblas) and run one BLAS thread per PE.
# mf_bm_copy (memfabric_hybrid's smem_bm_copy and smem_bm_join over libmf_smem.so, ours only)
# is built with cc against the install's libmf_smem and starts its own ranks (--fork --world
# NPES, no launcher) and times its own memcpy floor in every trial, between buffers of the same
# kinds as each copy's (records memcpy_G2H, memcpy_H2G, memcpy_G2G).
# A program that exits non-zero (a failed data check, a crash) is recorded in
# raw/failures.jsonl with its stderr and the run goes on.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
OSH_CC=/usr/bin/oshcc
OSH_RUN=/usr/bin/oshrun
OSH_FLAGS=(--allow-run-as-root --oversubscribe --mca osc ^rdma -x UCX_TLS=self,sm
    --bind-to core:overload-allowed)
ALL_PROGRAMS=(floor pingpong rma_lat rma_bw amo sync hello kernel matmul mf_bm_copy)
# Programs of this library's own API (kernel.c: the kernel-side API, which OpenSHMEM lacks;
# matmul.c: the fused kernel; mf_bm_copy.c: memfabric's API): built and run for ours only, never
# for OSHMEM or --baseline (an older tree may lack it too). matmul's other side is matmul_mpi
# (variant "mpi").
OURS_ONLY=(kernel matmul mf_bm_copy)
MPI_CC=/usr/bin/mpicc
MPI_RUN=/usr/bin/mpirun
ours_only() { [[ " ${OURS_ONLY[*]} " == *" $1 "* ]]; }
SYSTEM_PACKAGES=(openmpi-bin libopenmpi-dev valgrind libopenblas-dev pkg-config)
RUN_TIMEOUT=900

mode=full
rounds=
out=
prefix=$ROOT/install
lib_build=1
with_oshmem=1
with_callgrind=1
cg_prefix=
baseline=
with_docs=1
only=
bin_dir=
smoke_shmemrun=
cmdline="scripts/bench.sh${*:+ $*}"

# die, usage, log
source "$ROOT/scripts/lib/bench.sh"

while (($#)); do
    case $1 in
        --quick) mode=quick ;;
        --smoke) mode=smoke ;;
        --rounds) rounds=${2:?--rounds needs a number}; shift ;;
        --out) out=$(realpath -m -- "${2:?--out needs a folder}"); shift ;;
        --prefix) prefix=$(realpath -m -- "${2:?--prefix needs a folder}"); shift ;;
        --no-lib-build) lib_build=0 ;;
        --no-oshmem) with_oshmem=0 ;;
        --baseline) baseline=$(realpath -m -- "${2:?--baseline needs an install tree}"); shift ;;
        --no-callgrind) with_callgrind=0 ;;
        --callgrind-prefix) cg_prefix=$(realpath -m -- "${2:?}"); shift ;;
        --no-docs) with_docs=0 ;;
        --only) only=${2:?--only needs a list}; shift ;;
        --bin-dir) bin_dir=$(realpath -m -- "${2:?}"); shift ;;
        --shmemrun) smoke_shmemrun=$(realpath -m -- "${2:?}"); shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
    shift
done

case $mode in
    full) rounds=${rounds:-5} ;;
    quick) rounds=${rounds:-2}; with_callgrind=0 ;;
    smoke) rounds=1; with_oshmem=0; with_callgrind=0; with_docs=0; lib_build=0 ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"
if [[ -n $baseline ]]; then
    [[ $mode != smoke ]] || die "--baseline and --smoke do not go together"
    [[ -x $baseline/bin/oshcc && -x $baseline/bin/shmemrun ]] ||
        die "--baseline $baseline: no bin/oshcc and bin/shmemrun there (an install tree of this library)"
    with_oshmem=1 with_callgrind=0 with_docs=0
    OSH_CC=$baseline/bin/oshcc
fi
# matmul's MPI side: with OSHMEM (the same Open MPI), never against --baseline; in --smoke
# when the build made matmul_mpi (CMake found MPI) and mpirun is there.
with_mpi=$((with_oshmem && ${#baseline} == 0))
if [[ $mode == smoke ]]; then
    with_mpi=0
    [[ -n $bin_dir && -x $bin_dir/matmul_mpi ]] && command -v "$MPI_RUN" >/dev/null && with_mpi=1
fi
PROGRAMS=("${ALL_PROGRAMS[@]}")
if [[ -n $only ]]; then
    IFS=, read -r -a PROGRAMS <<<"$only"
    for prog in "${PROGRAMS[@]}"; do
        [[ " ${ALL_PROGRAMS[*]} " == *" $prog "* ]] || die "--only: no program '$prog'"
    done
fi
if [[ $mode == smoke && ! -x $bin_dir/matmul ]]; then # built only where CMake found a CBLAS
    mapfile -t PROGRAMS < <(printf '%s\n' "${PROGRAMS[@]}" | grep -vx matmul)
    echo "smoke: no $bin_dir/matmul (no CBLAS at configure time); matmul skipped"
fi

# --- dependencies --------------------------------------------------------------------------------

if [[ $mode != smoke ]]; then
    if [[ -z $baseline ]] && ((with_oshmem || with_callgrind)); then install_packages "${SYSTEM_PACKAGES[@]}"; fi
    ensure_matplotlib
fi

# --- build ---------------------------------------------------------------------------------------

build_root=$ROOT/build/bench-suite
if [[ $mode == smoke ]]; then
    [[ -n $bin_dir && -n $smoke_shmemrun ]] || die "--smoke needs --bin-dir and --shmemrun"
    OURS_BIN=$bin_dir
    FLOOR_BIN=$bin_dir
    OSH_BIN=$bin_dir # matmul_mpi
    OURS_RUN=$smoke_shmemrun
else
    if ((lib_build)); then
        if [[ -f $ROOT/build/CMakeCache.txt ]]; then
            log "library: cmake --build build && cmake --install build --prefix $prefix"
            cmake --build "$ROOT/build" >/dev/null
            cmake --install "$ROOT/build" --prefix "$prefix" >/dev/null
        else
            log "library: scripts/build.sh --prefix $prefix"
            "$ROOT/scripts/build.sh" --prefix "$prefix"
        fi
    fi
    [[ -x $prefix/bin/oshcc && -x $prefix/bin/shmemrun ]] || die "no $prefix/bin/oshcc: build the library first (scripts/build.sh)"
    OURS_BIN=$build_root/ours
    OSH_BIN=$build_root/oshmem
    FLOOR_BIN=$build_root/floor
    OURS_RUN=$prefix/bin/shmemrun
    mkdir -p "$OURS_BIN" "$OSH_BIN" "$FLOOR_BIN"

    # BENCH_HAVE_TEAMS: the 1.5 team collectives of sync.c, where the library has them.
    probe_teams() { # $1: compiler wrapper
        local probe=$build_root/probe_teams.c
        cat >"$probe" <<'EOF'
#include <shmem.h>
int main(void) {
    static long d[4], s[4];
    shmem_init();
    shmem_team_sync(SHMEM_TEAM_WORLD);
    shmem_broadcastmem(SHMEM_TEAM_WORLD, d, s, sizeof s, 0);
    shmem_fcollectmem(SHMEM_TEAM_WORLD, d, s, 8);
    shmem_alltoallmem(SHMEM_TEAM_WORLD, d, s, 8);
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, d, s, 4);
    shmem_finalize();
    return 0;
}
EOF
        "$1" -Werror=implicit-function-declaration -o "$build_root/probe_teams" "$probe" >/dev/null 2>&1
    }
    # matmul's extra flags: the example's kernel header and OpenBLAS.
    blas_cflags=() blas_libs=()
    if pkg-config --exists openblas 2>/dev/null; then
        read -r -a blas_cflags <<<"$(pkg-config --cflags openblas)"
        read -r -a blas_libs <<<"$(pkg-config --libs openblas)"
    elif [[ " ${PROGRAMS[*]} " == *" matmul "* ]]; then
        echo "no OpenBLAS (pkg-config openblas; Debian: libopenblas-dev): matmul skipped"
        mapfile -t PROGRAMS < <(printf '%s\n' "${PROGRAMS[@]}" | grep -vx matmul)
        mapfile -t ALL_PROGRAMS < <(printf '%s\n' "${ALL_PROGRAMS[@]}" | grep -vx matmul)
    fi
    prog_flags() { # $1: program; prints its extra compile flags, one per line
        [[ $1 == matmul* ]] || return 0
        printf '%s\n' "-I$ROOT/examples/matmul_allreduce" "${blas_cflags[@]}"
    }
    prog_libs() { [[ $1 == matmul* ]] && printf '%s\n' "${blas_libs[@]}" -lm || true; }
    build_variant() { # $1: name, $2: compiler wrapper, $3: output folder
        local teams=() prog
        probe_teams "$2" && teams=(-DBENCH_HAVE_TEAMS=1)
        local built=() extra libs
        for prog in "${ALL_PROGRAMS[@]}"; do
            [[ $prog == floor ]] && continue
            [[ $1 != ours ]] && ours_only "$prog" && continue
            if [[ $prog == mf_bm_copy ]]; then
                cc -O2 -Wall -Wextra "-I$prefix/include" -o "$3/$prog" "$BENCH/$prog.c" \
                    "-L$prefix/lib" "-Wl,-rpath,$prefix/lib" -lmf_smem
                built+=("$prog")
                continue
            fi
            mapfile -t extra < <(prog_flags "$prog")
            mapfile -t libs < <(prog_libs "$prog")
            "$2" -O2 -Wall -Wextra "${teams[@]}" "${extra[@]}" -o "$3/$prog" "$BENCH/$prog.c" "${libs[@]}"
            built+=("$prog")
        done
        echo "$1: built ${built[*]}${teams[*]:+ (with the 1.5 team collectives)}"
    }
    log "build (-O2)"
    build_variant ours "$prefix/bin/oshcc" "$OURS_BIN"
    if ((with_oshmem)); then build_variant "$([[ -n $baseline ]] && echo baseline || echo oshmem)" "$OSH_CC" "$OSH_BIN"; fi
    if ((with_mpi)) && [[ " ${PROGRAMS[*]} " == *" matmul "* ]]; then
        mapfile -t extra < <(prog_flags matmul_mpi)
        mapfile -t libs < <(prog_libs matmul_mpi)
        "$MPI_CC" -O2 -Wall -Wextra "${extra[@]}" -o "$OSH_BIN/matmul_mpi" "$BENCH/matmul_mpi.c" "${libs[@]}"
        echo "mpi: built matmul_mpi"
    fi
    cc -O2 -Wall -Wextra -o "$FLOOR_BIN/floor" "$BENCH/floor.c"
fi

# --- output folder -------------------------------------------------------------------------------

host=$(hostname -s 2>/dev/null || hostname)
if [[ -z $out ]]; then
    case $mode in
        full) out=$BENCH/results/$(date +%F)-$host ;;
        quick) out=$BENCH/results/$(date +%F)-$host-quick ;;
        smoke) out=$(mktemp -d) ;;
    esac
fi
raw=$out/raw
tmp=$out/raw-tmp
rm -rf "$raw" "$tmp"
mkdir -p "$raw" "$tmp"
: >"$raw/failures.jsonl"
LOG=$out/bench.log
: >"$LOG"

write_env() {
    local commit dirty ompi
    commit=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$ROOT" status --porcelain -- cpp rust cmake CMakeLists.txt Cargo.toml Cargo.lock 2>/dev/null | grep -q . && echo true || echo false)
    ompi=$(dpkg-query -W -f='${Version}' libopenmpi3 2>/dev/null || echo unknown)
    python3 - "$raw/env.json" <<EOF
import json, platform, os, subprocess, sys
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception: return ""
env = {
    "date": sh("date -u +%FT%TZ"), "host": "$host", "mode": "$mode", "rounds": $rounds,
    "command": """$cmdline""",
    "cpu": sh("lscpu | sed -n 's/^Model name: *//p'"), "cpus_online": os.cpu_count(),
    "kernel": platform.release(), "glibc": platform.libc_ver()[1], "cc": sh("cc --version | head -1"),
    "shmem_commit": "$commit", "shmem_tree_dirty": "$dirty" == "true", "shmem_prefix": "$prefix",
    "openmpi_deb_version": "$ompi",
    "baseline_prefix": "$baseline",
    "oshrun": "$OSH_RUN ${OSH_FLAGS[*]} -np N", "shmemrun": "$OURS_RUN -n N",
    "mpirun": "$MPI_RUN ${OSH_FLAGS[*]} -np N",
    "pinning": "each PE: sched_setaffinity(PE mod online CPUs) after shmem_init; oshrun also --bind-to core:overload-allowed; floor: CPUs 0 and 1",
    "compile": "-O2 -Wall -Wextra",
}
json.dump(env, open(sys.argv[1], "w"), indent=1)
EOF
}
[[ $mode != smoke ]] && write_env

# --- running ----------------------------------------------------------------------------------

# Sweep lines of program $1 for mode $2, one per output line: "NPES ARGS...".
sweep_lines() {
    local file=$BENCH/$1.sweep
    [[ -f $file ]] || die "no sweep file $file"
    awk -v mode="$2" '!/^[[:space:]]*(#|$)/ {
        n = split($1, m, ","); hit = 0
        for (i = 1; i <= n; i++) if (m[i] == mode) hit = 1
        if (hit) { $1 = ""; sub(/^[[:space:]]+/, ""); print }
    }' "$file"
}

# Runs one sweep line for one variant and appends its records, tagged, to $raw/$4.
#   $1 variant (ours|oshmem|floor)  $2 program  $3 npes  $4 output file  $5 round  $6.. args
run_line() {
    local variant=$1 prog=$2 npes=$3 dest=$4 round=$5
    shift 5
    local cmd=() errf=$tmp/stderr outf=$tmp/stdout rc=0
    case $variant in
        ours) if [[ $prog == mf_bm_copy ]]; then # its own ranks: --fork --world N
                cmd=(timeout "$RUN_TIMEOUT" "$OURS_BIN/$prog" --world "$npes")
            else
                cmd=("$OURS_RUN" -n "$npes" --timeout "$RUN_TIMEOUT" "$OURS_BIN/$prog")
            fi ;;
        oshmem) if [[ -n $baseline ]]; then
                cmd=("$baseline/bin/shmemrun" -n "$npes" --timeout "$RUN_TIMEOUT" "$OSH_BIN/$prog")
            else
                cmd=(timeout "$RUN_TIMEOUT" "$OSH_RUN" "${OSH_FLAGS[@]}" -np "$npes" "$OSH_BIN/$prog")
            fi ;;
        floor) cmd=(timeout "$RUN_TIMEOUT" "$FLOOR_BIN/$prog") ;;
        mpi) cmd=(timeout "$RUN_TIMEOUT" "$MPI_RUN" "${OSH_FLAGS[@]}" -np "$npes" "$OSH_BIN/${prog}_mpi") ;;
    esac
    printf '[round %s] %-6s %s\n' "$round" "$variant" "${cmd[*]} $*" >>"$LOG"
    "${cmd[@]}" "$@" </dev/null >"$outf" 2>"$errf" || rc=$? # stdin: the sweep lines
    # Only the records go to the raw file, each tagged with its variant and round.
    sed -n "s/^{\"bench\"/{\"variant\":\"$variant\",\"round\":$round$TAG_EXTRA,\"bench\"/p" "$outf" >>"$raw/$dest"
    grep -v 'UCX is unable to handle VM_UNMAP' "$errf" >>"$LOG" || true
    if ((rc != 0)); then
        printf '   FAILED (exit %s): %s %s %s\n' "$rc" "$variant" "$prog" "$*" | tee -a "$LOG" >&2
        python3 - "$variant" "$prog" "$npes" "$round" "$rc" "$*" "$errf" >>"$raw/failures.jsonl" <<'EOF'
import json, sys
v, prog, npes, rnd, rc, args, errf = sys.argv[1:]
err = [l for l in open(errf, errors="replace").read().splitlines() if "VM_UNMAP" not in l]
print(json.dumps({"variant": v, "bench": prog, "npes": npes if npes == "-" else int(npes),
                  "round": int(rnd), "rc": int(rc), "args": args, "stderr": "\n".join(err[-15:])}))
EOF
        [[ $mode == smoke ]] && smoke_failed=1
    fi
    rm -f "$errf" "$outf"
}

# Startup: alternating timed launches of hello; one record per variant and round. Ours runs
# twice: with shmemrun's inherited sockets, and with its store on TCP with TLS 1.3 (per-job CA),
# recorded as "ours" under the name hello_tls.
run_startup() { # $1 round, $2 npes, $3 launches
    local round=$1 npes=$2 launches=$3 i v t0 t1 lines
    local -A times=()
    local variants=(ours ours_tls)
    ((with_oshmem)) && variants+=(oshmem)
    if ((round % 2 == 0)); then
        mapfile -t variants < <(printf '%s\n' "${variants[@]}" | tac)
    fi
    for ((i = 0; i < launches; i++)); do
        for v in "${variants[@]}"; do
            local cmd
            case $v in
            ours) cmd=("$OURS_RUN" -n "$npes" "$OURS_BIN/hello") ;;
            ours_tls) cmd=("$OURS_RUN" --store tcp://127.0.0.1:0 -n "$npes" "$OURS_BIN/hello") ;;
            *) if [[ -n $baseline ]]; then
                    cmd=("$baseline/bin/shmemrun" -n "$npes" "$OSH_BIN/hello")
                else
                    cmd=("$OSH_RUN" "${OSH_FLAGS[@]}" -np "$npes" "$OSH_BIN/hello")
                fi ;;
            esac
            t0=${EPOCHREALTIME/./}
            "${cmd[@]}" </dev/null >"$tmp/hello.out" 2>>"$LOG" || true
            t1=${EPOCHREALTIME/./}
            lines=$(grep -c '^hello from PE' "$tmp/hello.out" || true)
            if [[ $lines != "$npes" ]]; then
                printf '   FAILED: %s hello printed %s lines for %s PEs\n' "$v" "$lines" "$npes" | tee -a "$LOG" >&2
                printf '{"variant":"%s","bench":"hello","npes":%s,"round":%s,"rc":1,"args":"","stderr":"%s lines"}\n' \
                    "$v" "$npes" "$round" "$lines" >>"$raw/failures.jsonl"
                [[ $mode == smoke ]] && smoke_failed=1
                continue
            fi
            times[$v]+="$(((t1 - t0) * 1000)) " # EPOCHREALTIME has microseconds
        done
    done
    ((launches > 0)) || return 0
    for v in "${variants[@]}"; do
        [[ -n ${times[$v]:-} ]] || continue
        python3 - "$v" "$round" "$npes" "${cmd_form[$v]/N/$npes}" ${times[$v]} >>"$raw/round$round.jsonl" <<'EOF'
import json, statistics, sys
v, rnd, npes, form, *t = sys.argv[1:]
t = sorted(float(x) for x in t)
name = "hello_tls" if v.endswith("_tls") else "hello"
v = v.removesuffix("_tls")
print(json.dumps({"variant": v, "round": int(rnd), "bench": "startup", "name": name,
                  "form": form, "lib": v, "npes": int(npes), "size": 0, "placement": "-",
                  "align": 0, "src_off": 0, "dst_off": 0, "window": 0, "metric": "latency",
                  "unit": "ns", "median": statistics.median(t), "min": t[0], "max": t[-1],
                  "trials": len(t), "iters": 1, "cpu": -1}))
EOF
    done
}
declare -A cmd_form=([ours]="shmemrun -n N hello (wall time)"
    [ours_tls]="shmemrun --store tcp://127.0.0.1:0 -n N hello (wall time; store on TCP, TLS 1.3)"
    [oshmem]="oshrun ${OSH_FLAGS[*]} -np N hello (wall time)")
[[ -n $baseline ]] && cmd_form[oshmem]="$baseline/bin/shmemrun -n N hello (wall time)"

smoke_failed=0
TAG_EXTRA=
start=$EPOCHREALTIME
log "running $mode sweeps, $rounds round(s) -> $out"
for ((round = 1; round <= rounds; round++)); do
    variants=(ours)
    ((with_oshmem)) && variants+=(oshmem)
    ((round % 2 == 0)) && ((with_oshmem)) && variants=(oshmem ours)
    log "round $round/$rounds (${variants[*]})"
    for prog in "${PROGRAMS[@]}"; do
        while read -r npes args; do
            if [[ $prog == hello ]]; then
                launches=$(sed -n 's/.*--launches[[:space:]]\+\([0-9]\+\).*/\1/p' <<<"$args")
                run_startup "$round" "$npes" "${launches:-10}"
                continue
            fi
            # shellcheck disable=SC2086 # args are the sweep line's words
            if [[ $prog == floor ]]; then
                [[ $args == *"--mode pingpong"* ]] ||
                    run_line floor floor - "round$round.jsonl" "$round" $args
                continue
            fi
            line_variants=("${variants[@]}")
            if [[ $prog == matmul ]] && ((with_mpi)); then
                line_variants=(ours mpi)
                ((round % 2 == 0)) && line_variants=(mpi ours)
            fi
            for v in "${line_variants[@]}"; do
                [[ $v != ours && $v != mpi ]] && ours_only "$prog" && continue
                if [[ $prog == pingpong ]]; then
                    # The cache-line floor right before each library's ping-pong: this VM
                    # switches between fast and slow phases within seconds.
                    while read -r _ fargs; do
                        TAG_EXTRA=",\"before\":\"$v\""
                        # shellcheck disable=SC2086
                        run_line floor floor - "round$round.jsonl" "$round" $fargs
                        TAG_EXTRA=
                    done < <(sweep_lines floor "$mode" | grep -e '--mode pingpong')
                fi
                # shellcheck disable=SC2086
                run_line "$v" "$prog" "$npes" "round$round.jsonl" "$round" $args
            done
        done < <(sweep_lines "$prog" "$mode")
    done
    printf '   %.0f s so far\n' "$(python3 -c "print($EPOCHREALTIME - $start)")"
done

if [[ $mode == smoke ]]; then
    n=$(cat "$raw"/round*.jsonl 2>/dev/null | wc -l)
    echo "smoke: $n records, failures: $(wc -l <"$raw/failures.jsonl")"
    ((smoke_failed == 0)) || { cat "$raw/failures.jsonl" >&2; exit 1; }
    rm -rf "$out"
    exit 0
fi

# --- instruction counts --------------------------------------------------------------------------

# Our library under valgrind: rustix's vDSO lookup (its linux_raw backend) reads the vDSO's ELF
# header at an address valgrind does not map (rustix issue #1559), so a PE dies with SIGSEGV in
# its first barrier. When that happens and no --callgrind-prefix was given, our side of the
# instruction counts runs on a copy of the library built from the same sources with
# RUSTFLAGS=--cfg=rustix_use_libc (rustix through libc, which valgrind follows); env.json says so.
valgrind_lib() {
    local vg=$build_root/valgrind-lib
    log "our library crashes under valgrind (rustix vDSO); building a rustix_use_libc copy in $vg"
    RUSTFLAGS="--cfg rustix_use_libc" cmake -S "$ROOT" -B "$vg/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DSHMEM_BUILD_TESTS=OFF -DSHMEM_BUILD_EXAMPLES=OFF \
        -DCMAKE_INSTALL_PREFIX="$vg/install" >"$vg.log" 2>&1 &&
        RUSTFLAGS="--cfg rustix_use_libc" cmake --build "$vg/build" >>"$vg.log" 2>&1 &&
        cmake --install "$vg/build" >>"$vg.log" 2>&1 || {
        echo "   valgrind-capable build failed, see $vg.log" >&2
        return 1
    }
    cg_prefix=$vg/install
}

note_env() { # $1 key, $2 value: adds a string to raw/env.json
    python3 - "$raw/env.json" "$1" "$2" <<'EOF'
import json, sys
p, k, v = sys.argv[1:]
e = json.load(open(p))
e[k] = v
json.dump(e, open(p, "w"), indent=1)
EOF
}

if ((with_callgrind)); then
    log "callgrind (instructions per call in the measured loops)"
    : >"$raw/callgrind.jsonl"
    [[ -n $cg_prefix ]] && note_env callgrind_ours_lib "$cg_prefix (--callgrind-prefix)"
    vg_tried=0
    cg_run() { # $1 variant, $2 prog, $3 npes, args...
        local v=$1 prog=$2 npes=$3 dir
        shift 3
        dir=$tmp/cg.$v.$prog.$RANDOM
        mkdir -p "$dir"
        local vg=(valgrind --tool=callgrind --collect-atstart=no "--callgrind-out-file=$dir/cg.%p")
        local cmd rc=0
        if [[ $v == ours ]]; then
            local run=$OURS_RUN envs=(BENCH_CALLGRIND=1)
            if [[ -n $cg_prefix ]]; then
                run=$cg_prefix/bin/shmemrun
                envs+=("LD_LIBRARY_PATH=$cg_prefix/lib")
            fi
            cmd=(env "${envs[@]}" "$run" -n "$npes" --timeout "$RUN_TIMEOUT" "${vg[@]}" "$OURS_BIN/$prog")
        else
            cmd=(timeout "$RUN_TIMEOUT" "$OSH_RUN" "${OSH_FLAGS[@]}" -x BENCH_CALLGRIND=1 -np "$npes" "${vg[@]}" "$OSH_BIN/$prog")
        fi
        printf '[callgrind] %s\n' "${cmd[*]} $*" >>"$LOG"
        BENCH_CALLGRIND=1 "${cmd[@]}" "$@" </dev/null >/dev/null 2>"$dir/stderr" || rc=$?
        grep -v '^==' "$dir/stderr" | grep -v VM_UNMAP >>"$LOG" || true
        if [[ $v == ours && $rc != 0 && -z $cg_prefix && $vg_tried == 0 ]] &&
            grep -q 'rustix::backend::param::auxv' "$dir/stderr"; then
            vg_tried=1
            if valgrind_lib; then
                note_env callgrind_ours_lib "same sources rebuilt with RUSTFLAGS=--cfg rustix_use_libc ($cg_prefix): the default build dies under valgrind in rustix's vDSO lookup (rustix issue #1559)"
                cg_run "$v" "$prog" "$npes" "$@"
                return
            fi
        fi
        python3 "$BENCH/report.py" callgrind "$dir" --variant "$v" --rc "$rc" --bench "$prog" \
            --npes "$npes" --args "$*" >>"$raw/callgrind.jsonl"
    }
    for prog in "${PROGRAMS[@]}"; do
        [[ $prog == floor || $prog == hello ]] && continue
        while read -r npes args; do
            # shellcheck disable=SC2086
            cg_run ours "$prog" "$npes" $args
            # shellcheck disable=SC2086
            ((with_oshmem)) && ! ours_only "$prog" && cg_run oshmem "$prog" "$npes" $args
        done < <(sweep_lines "$prog" callgrind)
    done
fi

rm -rf "$tmp"

# --- report --------------------------------------------------------------------------------------

log "report"
docs=()
((with_docs)) && [[ $mode == full ]] && docs=(--docs "$ROOT/docs/performance.md")
python3 "$BENCH/report.py" render "$out" "${docs[@]}"
printf 'done in %.0f s: %s\n' "$(python3 -c "print($EPOCHREALTIME - $start)")" "$out"
