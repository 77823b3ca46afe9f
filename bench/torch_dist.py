"""torch.distributed collectives on ordinary CPU tensors: the "shmem" backend against gloo, in
one job (the default group is "shmem", a gloo group of the same ranks beside it).

    torchrun --standalone --nproc-per-node 2 bench/torch_dist.py [--min 4K] [--max 64M]

with shmem_torch importable (PYTHONPATH=install/python). Rank 0 prints one line per
collective and size: the median time per call over the iterations of each backend (after
warm-up) and the ratio gloo/shmem. Sizes are the bytes of each rank's input (float32).
"""

import argparse
import statistics
import time

import torch
import torch.distributed as dist

import shmem_torch  # noqa: F401  (registers "shmem")


def size(text):
    text = text.upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min", type=size, default=4 << 10)
    parser.add_argument("--max", type=size, default=64 << 20)
    parser.add_argument("--budget", type=float, default=0.3,
                        help="seconds of timed calls per backend and size (at least 3 calls)")
    args = parser.parse_args()
    dist.init_process_group("shmem")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")

    def all_reduce(x, out, g):
        dist.all_reduce(x, group=g)

    def all_gather(x, out, g):
        dist.all_gather_into_tensor(out, x, group=g)

    def reduce_scatter(x, out, g):
        dist.reduce_scatter_tensor(out[: x.numel() // world], x, group=g)

    def all_to_all(x, out, g):
        dist.all_to_all_single(out[: x.numel()], x, group=g)

    if rank == 0:
        print(f"{world} ranks; median time per call (us); ratio = gloo / shmem", flush=True)
        print(f"{'collective':<24}{'bytes':>10}{'shmem':>12}{'gloo':>12}{'ratio':>8}", flush=True)
    for name, fn in (("all_reduce", all_reduce), ("all_gather_into_tensor", all_gather),
                     ("reduce_scatter_tensor", reduce_scatter),
                     ("all_to_all_single", all_to_all)):
        nbytes = args.min
        while nbytes <= args.max:
            n = max(world, nbytes // 4 // world * world)
            x = torch.ones(n)
            out = torch.empty(n * world)
            medians = []
            for g in (None, gloo):
                for _ in range(2):
                    fn(x, out, g)
                # the same number of calls on every rank: agree on it first
                t0 = time.perf_counter()
                fn(x, out, g)
                one = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
                dist.all_reduce(one, op=dist.ReduceOp.MAX, group=gloo)
                iters = max(3, min(1000, int(args.budget / max(one.item(), 1e-6))))
                times = []
                for _ in range(iters):
                    t0 = time.perf_counter()
                    fn(x, out, g)
                    times.append(time.perf_counter() - t0)
                medians.append(statistics.median(times) * 1e6)
            if rank == 0:
                print(f"{name:<24}{n * 4:>10}{medians[0]:>12.1f}{medians[1]:>12.1f}"
                      f"{medians[1] / medians[0]:>8.2f}", flush=True)
            nbytes *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
