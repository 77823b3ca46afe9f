"""torch's timeout= on the "shmem" backend: init_process_group(timeout=3 s) and
new_group(timeout=2 s). A recv whose message never comes raises on the waiting rank after its
group's timeout, naming the call and the timeout, and gives up its turn (the next recv of that
sender and tag gets the next message); every rank goes on. A collective that one
rank never enters: the ranks in it cannot be interrupted inside the library's calls, so the
group's watchdog names the call and the timeout on stderr and ends the job with status 1 within
the timeout and its 100 ms look. Run by run.sh's "timeout" mode, which checks every rank's status,
the time and the message."""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import shmem_torch  # noqa: F401
from common import fail

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
dist.init_process_group("shmem", timeout=timedelta(seconds=3))
group = dist.new_group(backend="shmem", timeout=timedelta(seconds=2))
# Lines the ranks up between the timed parts without a timeout of seconds: on a loaded machine
# ranks drift apart by more than the short timeouts above, which would end the job in a barrier.
align = dist.new_group(backend="gloo", timeout=timedelta(seconds=120))


def recv_times_out(g, seconds):
    peer = (rank + 1) % world
    t = torch.zeros(4)
    start = time.monotonic()
    try:
        dist.recv(t, src=peer, tag=77, group=g)  # nobody sends with tag 77
    except RuntimeError as exc:
        waited = time.monotonic() - start
        msg = str(exc)
        if "recv" not in msg or f"timeout of {seconds * 1000} ms" not in msg:
            fail(f"recv's error does not name the call and the timeout: {msg}")
        if not seconds - 0.05 <= waited <= seconds + 2:
            fail(f"recv gave up after {waited:.2f} s, the group's timeout is {seconds} s")
        return waited
    fail("recv of a message nobody sends returned")


if world > 1:
    a = recv_times_out(None, 3)
    b = recv_times_out(group, 2)
    dist.barrier(group=align)
    # The recv that timed out gave up its turn: the next recv of the same sender and tag gets
    # the next message at once.
    work = dist.isend(torch.full([4], float(rank)), dst=(rank - 1) % world, tag=77)
    t = torch.zeros(4)
    start = time.monotonic()
    dist.recv(t, src=(rank + 1) % world, tag=77)
    work.wait()
    if not torch.all(t == (rank + 1) % world) or time.monotonic() - start > 5:
        fail(f"the recv after a timed-out one: got {t.tolist()} "
             f"after {time.monotonic() - start:.2f} s")
    dist.barrier(group=align)
    print(f"rank {rank}: recv timed out after {a:.2f} s (timeout 3 s) and {b:.2f} s "
          f"(timeout 2 s); the next recv of the tag OK", flush=True)
else:
    print(f"rank {rank}: recv timed out (no peer: skipped)", flush=True)
# The collective the last rank never enters.
t = torch.ones(1000)
dist.barrier(group=align)
dist.all_reduce(t, group=group)  # warm: every rank, well within the timeout
if rank == world - 1:
    time.sleep(60)
    print(f"rank {rank}: still running after 60 s", flush=True)
    sys.exit(0)
print(f"rank {rank}: entering all_reduce at {time.time():.3f}", flush=True)
dist.all_reduce(t, group=group)
print(f"rank {rank}: all_reduce returned without the last rank", flush=True)
