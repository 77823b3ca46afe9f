#!/usr/bin/env python3
"""pmi1_server.py [-e VAR=VALUE]... [--timeout S] -n N -- PROGRAM [ARGS...]

A PMI-1 launcher for tests, in the way MPICH's Hydra starts processes: N copies of PROGRAM,
each handed one end of a socket pair in PMI_FD with PMI_RANK and PMI_SIZE (and no other
launcher variable, no SHMEM_JOB_ID), and this process serving the "simple PMI" text protocol
on the other ends: init, get_maxes, get_my_kvsname, get_appnum, get_universe_size, put,
barrier_in/barrier_out, get, finalize. As Hydra does, puts become visible to the others only
when the barrier after them completes, and a key put twice is refused.

-e sets (or, with an empty value, unsets) a variable for every copy.
Exit status: 0 when every copy exits 0, else that of the first copy to fail (128 + signal
number for a signal); the others then get GRACE seconds to end before they are killed. The
whole job is bounded by --timeout (a hang: every copy killed, status 124). Copies die with
this process (PR_SET_PDEATHSIG), so nothing is left behind when it is killed.
"""

import argparse
import ctypes
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

GRACE = 10.0
KEYLEN_MAX = 64
VALLEN_MAX = 1024
PR_SET_PDEATHSIG = 1


def log(msg):
    print(f"pmi1_server: {msg}", file=sys.stderr, flush=True)


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Job:
    def __init__(self, n):
        self.n = n
        self.kvsname = f"kvs_{os.getpid()}_0"
        self.kvs = {}  # visible to every process
        self.pending = {}  # put since the last barrier
        self.in_barrier = set()
        self.conns = {}  # socket -> [rank, buffer]
        self.sel = selectors.DefaultSelector()

    def send(self, sock, line):
        try:
            sock.sendall((line + "\n").encode())
        except OSError as e:
            log(f"rank {self.conns[sock][0]}: send failed: {e}")

    def handle(self, sock, line):
        rank = self.conns[sock][0]
        fields = {}
        for word in line.split():
            if "=" not in word:
                log(f"rank {rank}: malformed request {line!r}")
                return
            k, v = word.split("=", 1)
            fields[k] = v
        cmd = fields.get("cmd")
        if cmd == "init":
            ok = fields.get("pmi_version") == "1"
            self.send(sock, f"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc={0 if ok else -1}")
        elif cmd == "get_maxes":
            self.send(
                sock,
                f"cmd=maxes rc=0 kvsname_max=256 keylen_max={KEYLEN_MAX} vallen_max={VALLEN_MAX}",
            )
        elif cmd == "get_my_kvsname":
            self.send(sock, f"cmd=my_kvsname rc=0 kvsname={self.kvsname}")
        elif cmd == "get_appnum":
            self.send(sock, "cmd=appnum rc=0 appnum=0")
        elif cmd == "get_universe_size":
            self.send(sock, f"cmd=universe_size rc=0 size={self.n}")
        elif cmd == "put":
            key, value = fields.get("key", ""), fields.get("value", "")
            if fields.get("kvsname") != self.kvsname:
                self.send(sock, "cmd=put_result rc=-1 msg=bad_kvsname")
            elif not key or len(key) >= KEYLEN_MAX or len(value) >= VALLEN_MAX:
                self.send(sock, "cmd=put_result rc=-1 msg=key_or_value_too_long")
            elif key in self.kvs or key in self.pending:
                self.send(sock, f"cmd=put_result rc=-1 msg=duplicate_key_{key}")
            else:
                self.pending[key] = value
                self.send(sock, "cmd=put_result rc=0 msg=success")
        elif cmd == "barrier_in":
            self.in_barrier.add(sock)
            if len(self.in_barrier) == self.n:
                self.kvs.update(self.pending)
                self.pending.clear()
                for s in self.in_barrier:
                    self.send(s, "cmd=barrier_out rc=0")
                self.in_barrier.clear()
        elif cmd == "get":
            key = fields.get("key", "")
            if fields.get("kvsname") != self.kvsname:
                self.send(sock, "cmd=get_result rc=-1 msg=bad_kvsname")
            elif key in self.kvs:
                self.send(sock, f"cmd=get_result rc=0 msg=success value={self.kvs[key]}")
            else:
                self.send(sock, f"cmd=get_result rc=-1 msg=key_{key}_not_found")
        elif cmd == "finalize":
            self.send(sock, "cmd=finalize_ack rc=0")
        else:
            log(f"rank {rank}: unknown request {line!r}")
            self.send(sock, f"cmd={cmd}_result rc=-1 msg=unknown_command")

    def readable(self, sock):
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(sock)
            self.in_barrier.discard(sock)
            del self.conns[sock]
            sock.close()
            return
        entry = self.conns[sock]
        entry[1] += data
        while b"\n" in entry[1]:
            line, entry[1] = entry[1].split(b"\n", 1)
            line = line.decode(errors="replace").strip()
            if line:
                self.handle(sock, line)


def status_of(code):
    return 128 - code if code < 0 else code


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("-e", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.n < 1 or not command:
        ap.error("need -n N >= 1 and a program")

    job = Job(args.n)
    procs = []
    env = dict(os.environ)
    for var in ("SHMEM_JOB_ID", "SHMEM_RUN_FD", "SHMEM_RUN_RANK", "SHMEM_RUN_SIZE"):
        env.pop(var, None)
    for o in args.e:
        k, _, v = o.partition("=")
        if v:
            env[k] = v
        else:
            env.pop(k, None)

    def kill_all():
        for p in procs:
            if p.poll() is None:
                p.kill()

    signal.signal(signal.SIGTERM, lambda *_: (kill_all(), sys.exit(143)))
    for rank in range(args.n):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child_env = dict(env, PMI_RANK=str(rank), PMI_SIZE=str(args.n), PMI_FD=str(theirs.fileno()))
        procs.append(
            subprocess.Popen(
                command,
                env=child_env,
                pass_fds=[theirs.fileno()],
                preexec_fn=die_with_parent,
            )
        )
        theirs.close()
        job.conns[mine] = [rank, b""]
        job.sel.register(mine, selectors.EVENT_READ, "pmi")

    # Each copy's end is an event too (pidfd): nothing here polls on a clock but the deadlines.
    for p in procs:
        job.sel.register(os.pidfd_open(p.pid), selectors.EVENT_READ, p)
    deadline = time.monotonic() + args.timeout
    kill_at = None
    first_failure = None
    running = len(procs)
    while running:
        now = time.monotonic()
        if now >= deadline:
            log(f"still running after {args.timeout:g} s: killing the job")
            kill_all()
            for p in procs:
                p.wait()
            return 124
        if kill_at is not None and now >= kill_at:
            log(f"copies still running {GRACE:g} s after the first failure: killing them")
            kill_all()
            kill_at = None
        wait = deadline - now if kill_at is None else min(deadline, kill_at) - now
        for key, _ in job.sel.select(max(wait, 0.0)):
            if key.data == "pmi":
                job.readable(key.fileobj)
                continue
            p = key.data
            job.sel.unregister(key.fileobj)
            os.close(key.fd)
            code = p.wait()
            running -= 1
            if code != 0 and first_failure is None:
                rank = procs.index(p)
                first_failure = status_of(code)
                log(f"rank {rank} exited with status {first_failure}")
                kill_at = time.monotonic() + GRACE
    return first_failure or 0


if __name__ == "__main__":
    sys.exit(main())
