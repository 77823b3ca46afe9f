# tests/torch/no_gpu.sh, sourced by the torch test scripts: no_gpu PYTHON prints why that
# Python's torch can use no GPU (nothing when it can) and returns 0 then, 1 when a GPU is there.
no_gpu() {
    local why
    why=$("$1" -c 'import torch
if not torch.backends.cuda.is_built():
    print(f"torch {torch.__version__} is built without CUDA")
elif not torch.cuda.is_available():
    print("torch.cuda.is_available() is False")' 2>&1) ||
        why="$1 cannot import torch: $(tail -n 1 <<<"$why")"
    [[ -n $why ]] || return 1
    echo "$why"
}
