"""torch.distributed collectives on ordinary CPU tensors: the "shmem" backend against gloo, in
one job (the default group is "shmem", a gloo group of the same ranks beside it), and torch's
own per-call floor: a group of a backend that returns at once ("floor", registered here), timed
the same way, which bounds any ratio at small sizes.

    torchrun --standalone --nproc-per-node 2 bench/torch_dist.py [--min-bytes 4K] [--max-bytes 64M]
        [--step 4] [--only all_to_all_single] [--ddp-steps 20] [--no-ddp] [--no-collectives]
        [--ddp-width 1600] [--budget 0.3] [--json FILE --round N]

with shmem_torch importable (PYTHONPATH=install/python). Rank 0 prints one line per
collective and size: the median time per call over the iterations of each backend (after
warm-up) and the ratio gloo/shmem. Sizes are the bytes of each rank's input (float32): from
--min-bytes, multiplied by --step each time, up to --max-bytes.

With --json FILE, rank 0 also appends one JSON line per collective, size and backend
({"kind": "collective", "collective", "bytes", "backend", "ranks", "round", "median_s",
"iters"}) and one per backend for the DDP step ({"kind": "ddp", "backend", "ranks", "round",
"median_s", "iters", "params", "comm_share"}); scripts/bench-torch-dist.sh runs it so and
bench/report_torch_dist.py makes the tables and the plot from those lines.

Then a DDP training step of an MLP of about 10M parameters (float32, CPU) with each backend:
the median step time (forward, backward with DDP's gradient all_reduce, SGD step) and the share
of it spent in communication, taken as the time the step takes beyond the same step over the
floor backend (whose all_reduce costs nothing, so its step is the computation alone).
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
from torch.futures import Future

import shmem_torch  # noqa: F401  (registers "shmem")


class DoneWork(dist._Work):
    """A Work complete when made, its future holding `result`."""

    def __init__(self, result):
        super().__init__()
        self.future = Future()
        self.future.set_result(result)

    def wait(self, timeout=None):
        return True

    def get_future(self):
        return self.future


class Floor(dist.ProcessGroup):
    """A backend whose collectives return at once, leaving the tensors as they are: what torch
    itself costs per call (argument checks, dispatch, the Work and its future)."""

    def getBackendName(self):
        return "floor"

    def allreduce(self, tensors, opts):
        return DoneWork(tensors)

    def all_gather_single(self, output, input, opts):
        return DoneWork([output])

    def reduce_scatter_single(self, output, input, opts):
        return DoneWork([output])

    def all_to_all_single(self, output, input, output_splits, input_splits, opts):
        return DoneWork([output])

    def allgather(self, outputs, inputs, opts):
        # as if every rank held this one's input (DDP compares the parameters' shapes so)
        for out in outputs[0]:
            out.copy_(inputs[0])
        return DoneWork(outputs[0])

    def broadcast(self, tensors, opts):
        return DoneWork(tensors)

    def barrier(self, opts):
        return DoneWork([])


dist.Backend.register_backend(
    "floor", lambda store, rank, size, timeout: Floor(rank, size), devices=["cpu"])


def size(text):
    text = text.upper().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def main():
    parser = argparse.ArgumentParser()
    # --max alone is taken by torchrun (an abbreviation of its --max-restarts)
    parser.add_argument("--min-bytes", "--min", dest="min", type=size, default=4 << 10)
    parser.add_argument("--max-bytes", "--max", dest="max", type=size, default=64 << 20)
    parser.add_argument("--step", type=int, default=4,
                        help="each size is the previous one times this (at least 2)")
    parser.add_argument("--budget", type=float, default=0.3,
                        help="seconds of timed calls per backend and size (at least 3 calls)")
    parser.add_argument("--ddp-steps", type=int, default=20,
                        help="timed DDP training steps per backend")
    parser.add_argument("--ddp-width", type=int, default=1600,
                        help="features of each of the MLP's 4 Linear layers (1600: 10.2M "
                             "parameters)")
    parser.add_argument("--json", metavar="FILE",
                        help="rank 0 appends one JSON line per figure to FILE")
    parser.add_argument("--round", type=int, default=1,
                        help="the round number the JSON lines carry")
    parser.add_argument("--no-ddp", action="store_true", help="leave out the DDP step")
    parser.add_argument("--no-collectives", action="store_true",
                        help="leave out the collectives")
    parser.add_argument("--only", action="append", default=[], metavar="COLLECTIVE",
                        help="time this collective only (repeatable; e.g. all_to_all_single)")
    args = parser.parse_args()
    if args.step < 2:
        parser.error(f"--step {args.step}: must be at least 2")
    if args.min < 1 or args.max < args.min:
        parser.error(f"--min-bytes {args.min} --max-bytes {args.max}: need 1 <= min <= max")
    dist.init_process_group("shmem")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    floor = dist.new_group(backend="floor")
    groups = (("shmem", None), ("gloo", gloo), ("floor", floor))
    out = open(args.json, "a") if args.json and rank == 0 else None

    def record(**fields):
        if out is not None:
            out.write(json.dumps(dict(fields, ranks=world, round=args.round)) + "\n")
            out.flush()

    if not args.no_collectives:
        collectives(args, rank, world, groups, gloo, record)
    if not args.no_ddp:
        ddp_step(args, rank, world, groups, record)
    if out is not None:
        out.close()
    dist.destroy_process_group()


def timed(fn, g, gloo, budget):
    """The median seconds of fn(g) over calls that fill `budget` (the count agreed by all
    ranks), after two warm-up calls, and the number of calls."""
    for _ in range(2):
        fn(g)
    # the same number of calls on every rank: agree on it first
    t0 = time.perf_counter()
    fn(g)
    one = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(one, op=dist.ReduceOp.MAX, group=gloo)
    iters = max(3, min(1000, int(budget / max(one.item(), 1e-6))))
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn(g)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), iters


def collectives(args, rank, world, groups, gloo, record):

    def all_reduce(x, out, g):
        dist.all_reduce(x, group=g)

    def all_gather(x, out, g):
        dist.all_gather_into_tensor(out, x, group=g)

    def reduce_scatter(x, out, g):
        dist.reduce_scatter_tensor(out[: x.numel() // world], x, group=g)

    def all_to_all(x, out, g):
        dist.all_to_all_single(out[: x.numel()], x, group=g)

    if rank == 0:
        print(f"{world} ranks; median time per call (us); ratio = gloo / shmem; floor = a "
              "backend that returns at once", flush=True)
        print(f"{'collective':<24}{'bytes':>10}{'shmem':>12}{'gloo':>12}{'floor':>10}"
              f"{'ratio':>8}", flush=True)
    for name, fn in (("all_reduce", all_reduce), ("all_gather_into_tensor", all_gather),
                     ("reduce_scatter_tensor", reduce_scatter),
                     ("all_to_all_single", all_to_all)):
        if args.only and name not in args.only:
            continue
        nbytes = args.min
        while nbytes <= args.max:
            n = max(world, nbytes // 4 // world * world)
            x = torch.ones(n)
            out = torch.empty(n * world)
            medians = []
            for backend, g in groups:
                median, iters = timed(lambda g: fn(x, out, g), g, gloo, args.budget)
                record(kind="collective", collective=name, bytes=n * 4, backend=backend,
                       median_s=median, iters=iters)
                medians.append(median * 1e6)
            if rank == 0:
                print(f"{name:<24}{n * 4:>10}{medians[0]:>12.1f}{medians[1]:>12.1f}"
                      f"{medians[2]:>10.1f}{medians[1] / medians[0]:>8.2f}", flush=True)
            nbytes *= args.step


def ddp_step(args, rank, world, groups, record):
    """The DDP training step of a ~10M-parameter MLP with each backend (see the top)."""
    from torch.nn.parallel import DistributedDataParallel

    width, layers, batch = args.ddp_width, 4, 64
    torch.manual_seed(0)
    x = torch.randn(batch, width)
    y = torch.randn(batch, width)
    steps = {}
    for name, g in groups:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[m for _ in range(layers)
                                      for m in (torch.nn.Linear(width, width), torch.nn.ReLU())])
        params = sum(p.numel() for p in model.parameters())
        ddp = DistributedDataParallel(model, process_group=g)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

        def step(_):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()

        for _ in range(3):
            step(None)
        times = []
        for _ in range(args.ddp_steps):
            dist.barrier(group=groups[1][1])
            t0 = time.perf_counter()
            step(None)
            times.append(time.perf_counter() - t0)
        steps[name] = statistics.median(times)
        del ddp, opt, model
    if rank == 0:
        print(f"\nDDP step, MLP of {params / 1e6:.1f}M parameters ({layers} x Linear({width}, "
              f"{width}), batch {batch}), {world} ranks, median of {args.ddp_steps} steps; "
              "communication = step time beyond floor's", flush=True)
        print(f"{'backend':<10}{'step (ms)':>12}{'communication':>16}", flush=True)
        for name, t in steps.items():
            share = max(0.0, t - steps["floor"]) / t
            record(kind="ddp", backend=name, median_s=t, iters=args.ddp_steps, params=params,
                   width=width, layers=layers, batch=batch, comm_share=share)
            print(f"{name:<10}{t * 1e3:>12.1f}{share * 100:>15.0f}%", flush=True)


if __name__ == "__main__":
    main()
