# scripts/lib/cuda.sh: what the CUDA scripts (bench-cuda.sh, gpu-check.sh) both need, sourced by
# them: finding nvcc, and a private CUDA MPS daemon for one run. Defines functions only; sets
# nothing and runs nothing when sourced.

# Prints the nvcc to use, first found: $NVCC (nothing when it is not executable); `nvcc` on
# PATH; $CUDA_HOME/bin, /usr/local/cuda/bin; the nvidia-cuda-nvcc wheel (nvidia/cu1*/bin/nvcc,
# or the older nvidia/cuda_nvcc/bin/nvcc) in python3's site-packages or in <root>/build/venv
# (where scripts/build.sh -uttests puts it). Prints nothing when there is none.
find_nvcc() { # root
    local root=$1 c site
    if [ -n "${NVCC:-}" ]; then
        if [ -x "$NVCC" ]; then echo "$NVCC"; fi
        return 0
    fi
    if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return 0; fi
    for c in "${CUDA_HOME:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
        if [ -x "$c" ]; then echo "$c"; return 0; fi
    done
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) \
        "$root"/build/venv/lib/python3*/site-packages; do
        for c in "$site"/nvidia/cu1*/bin/nvcc "$site"/nvidia/cuda_nvcc/bin/nvcc; do
            if [ -x "$c" ]; then echo "$c"; return 0; fi
        done
    done
    return 0
}

# Starts a CUDA MPS daemon of this run's own, its pipe and log folders under <dir> (created),
# exported as CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY for the programs started
# after it. Returns nvidia-cuda-mps-control's status.
mps_start() { # dir
    export CUDA_MPS_PIPE_DIRECTORY=$1/pipe CUDA_MPS_LOG_DIRECTORY=$1/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
}

# Stops the daemon mps_start started (the one CUDA_MPS_PIPE_DIRECTORY names); quiet, and
# harmless when it is gone already.
mps_stop() {
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
}
