"""mf_trans_vs_mooncake.py: memfabric's transfer engine against Mooncake's, same run, same buffers.

Two processes on this node, started by this script: a receiver and a sender. Each holds one
NumPy buffer (256 MiB, pages touched before any timing) and registers that same buffer with
both engines:

  ours      memfabric_hybrid.TransferEngine (libmf_smem.so's smem_trans_*), the receiver a
            "Decode" engine that also serves the config store, the sender a "Prefill" engine
  mooncake  mooncake.engine.TransferEngine (PyPI mooncake-transfer-engine-non-cuda), protocol
            "tcp", peer-to-peer handshake metadata ("P2PHANDSHAKE": no metadata server)

The sender times, for every case and engine, blocking writes into the receiver's buffer:

  batch     batch_transfer_sync_write of COUNT blocks of BLOCK bytes (KV-cache-like: block i
            of the source to block COUNT-1-i of the destination, so no two neighbours touch),
            at most 256 MiB a batch
  single    transfer_sync_write of SIZE bytes

A round is ITERS calls back to back (ITERS chosen so a round moves about 64 MiB, 1 to 50
calls), preceded by one untimed call; the engines alternate within a round, the one going
first alternating between rounds. A figure is the median over rounds of the time per call
(per-batch latency) and the bytes per call over it (GB/s = 1e9 B/s). After each round the
sender reads back, with the same engine, the stamp (one per case and engine) it wrote into the
first and last source block just before it, so a figure always belongs to bytes that arrived.

Setup (Mooncake in its own virtual environment, our wheel beside it):

    python3 -m venv ~/.cache/shmem/mooncake-venv && ~/.cache/shmem/mooncake-venv/bin/pip \
        install mooncake-transfer-engine-non-cuda numpy build/python/wheels/memfabric_hybrid-*.whl
    ~/.cache/shmem/mooncake-venv/bin/python bench/mf_trans_vs_mooncake.py --json out.json

Without Mooncake importable, only our engine runs (and the table says so). --table-from
redraws the table of a --json file. --smoke: two block
sizes, two counts, two single sizes, one round, every stamp checked (ctest
python.bench_mf_trans_smoke).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

BUF = 256 << 20
KIB, MIB = 1 << 10, 1 << 20
BLOCKS = [16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB]
COUNTS = [1, 16, 128, 1024]
SINGLES = [4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB]
ROUND_BYTES = 64 * MIB
TIMEOUT = 1800


def size_arg(text):
    """16K, 4M, 4096 -> bytes."""
    mult = {"K": KIB, "M": MIB, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        return int(text[:-1] if mult > 1 else text) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4096, 16K, 4M)")


def size_list(text):
    return [size_arg(t) for t in text.split(",") if t]


def human(n):
    for unit, m in (("M", MIB), ("K", KIB)):
        if n >= m and n % m == 0:
            return f"{n // m}{unit}"
    return str(n)


def have_mooncake():
    try:
        from mooncake.engine import TransferEngine  # noqa: F401
        return True
    except ImportError:
        return False


# free_port(): a free port below the kernel's ephemeral range (one bind(0) hands out can be
# taken by an outgoing connection's source port before the server binds it).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))
from free_port import free_port  # noqa: E402


def touched(fill):
    buf = np.empty(BUF, dtype=np.uint8)
    buf.fill(fill)  # every page faulted in before anything is timed
    return buf


class Ours:
    name = "ours"

    def __init__(self, role, url, host, buf, extra=()):
        import memfabric_hybrid as mf
        from mf_adapter import TransferEngine, create_config_store
        self.mf = mf
        if role == "Decode":
            self.check(create_config_store(url), "create_config_store", url)
        self.e = TransferEngine()
        self.sid = f"{host}:{self.e.get_rpc_port()}"
        self.check(self.e.initialize(url, self.sid, role, 0), "initialize", url)
        for b in (buf, *extra):
            self.check(self.e.register_memory(b.ctypes.data, b.nbytes), "register_memory", b.nbytes)

    def check(self, rc, call, arg):
        if rc != 0:
            raise SystemExit(f"ours: {call}({arg}) returned {rc}: {self.mf.get_last_err_msg()}")

    def close(self):
        self.e.destroy()
        self.e.unInitialize()


class Mooncake:
    name = "mooncake"

    def __init__(self, host, buf, extra=()):
        from mooncake.engine import TransferEngine
        self.e = TransferEngine()
        rc = self.e.initialize(host, "P2PHANDSHAKE", "tcp", "")
        if rc != 0:
            raise SystemExit(f"mooncake: initialize({host!r}, 'P2PHANDSHAKE', 'tcp') returned {rc}")
        self.sid = f"{host}:{self.e.get_rpc_port()}"
        for b in (buf, *extra):
            rc = self.e.register_memory(b.ctypes.data, b.nbytes)
            if rc != 0:
                raise SystemExit(f"mooncake: register_memory({b.nbytes}) returned {rc}")


def receiver(args):
    dst = touched(0)
    engines = []
    if "ours" in args.engines:
        engines.append(Ours("Decode", args.url, args.hosts[0], dst))
    if "mooncake" in args.engines:
        engines.append(Mooncake(args.hosts[0], dst))
    print("READY", dst.ctypes.data, *[f"{e.name}={e.sid}" for e in engines], flush=True)
    sys.stdin.readline()  # the driver writes a line when the sender is done
    for e in engines:
        if e.name == "ours":
            e.close()
    print("RECEIVER OK", flush=True)


def cases(args):
    for bs in args.blocks:
        for n in args.counts:
            if bs * n <= BUF:
                yield "batch", bs, n
    for size in args.singles:
        if size <= BUF:
            yield "single", size, 1


def sender(args):
    src = touched(1)
    scratch = np.zeros(4096, dtype=np.uint8)
    peers = dict(p.split("=", 1) for p in args.peers)
    engines = []
    if "ours" in peers:
        engines.append(Ours("Prefill", args.url, args.hosts[1], src, (scratch,)))
    if "mooncake" in peers:
        engines.append(Mooncake(args.hosts[1], src, (scratch,)))
    s, d = src.ctypes.data, args.dst
    stamp = 0
    for kind, bs, n in cases(args):
        total = bs * n
        iters = args.iters or max(1, min(50, ROUND_BYTES // total))
        if kind == "batch":
            srcs = [s + i * bs for i in range(n)]
            dsts = [d + (n - 1 - i) * bs for i in range(n)]
            lens = [bs] * n
            calls = {e.name: (lambda e=e: e.e.batch_transfer_sync_write(
                peers[e.name], srcs, dsts, lens)) for e in engines}
            marks = [(0, n - 1), (n - 1, 0)]  # (source block, destination block)
        else:
            calls = {e.name: (lambda e=e: e.e.transfer_sync_write(peers[e.name], s, d, bs))
                     for e in engines}
            marks = [(0, 0)]
        times = {e.name: [] for e in engines}
        # ucx_perftest's put_bw at this size, run by the driver right beside each round
        # (--perftest-beside: before the engines in odd rounds, after them in even ones)
        beside = args.perftest_beside and kind == "single" and bs >= MIB
        floor = []
        stamps = {}
        for e in engines:  # one stamp per engine, written before its first call of this case
            stamp += 1
            stamps[e.name] = stamp
        for r in range(args.rounds):
            order = engines if r % 2 == 0 else engines[::-1]
            if beside and r % 2 == 1:
                floor.append(perftest_now(total))
            for e in order:
                for sb, _ in marks:
                    src[sb * bs:sb * bs + 8] = np.frombuffer(
                        stamps[e.name].to_bytes(8, "little"), dtype=np.uint8)
                call = calls[e.name]
                rc = call()  # untimed
                if rc != 0:
                    raise SystemExit(f"{e.name}: {kind} write of {n} x {bs} B returned {rc}")
                t0 = time.perf_counter()
                failed = sum(call() != 0 for _ in range(iters))
                t1 = time.perf_counter()
                if failed:
                    raise SystemExit(f"{e.name}: {kind} write of {n} x {bs} B: {failed} of "
                                     f"{iters} calls returned non-zero")
                times[e.name].append((t1 - t0) / iters)
                for _, db in marks:  # the stamp is at the receiver, read back by this engine
                    scratch[:8] = 0
                    rc = e.e.transfer_sync_read(peers[e.name], scratch.ctypes.data,
                                                d + db * bs, 8)
                    got = int.from_bytes(scratch[:8].tobytes(), "little")
                    if rc != 0 or got != stamps[e.name]:
                        raise SystemExit(f"{e.name}: {kind} {n} x {bs} B: destination block "
                                         f"{db} holds stamp {got}, expected {stamps[e.name]} "
                                         f"(read rc {rc})")
            if beside and r % 2 == 0:
                floor.append(perftest_now(total))
        for e in engines:
            t = times[e.name]
            med = statistics.median(t)
            rec = {"kind": kind, "block": bs, "count": n, "bytes": total, "engine": e.name,
                   "iters": iters, "rounds": len(t), "us": med * 1e6,
                   "gbps": total / med / 1e9, "gbps_min": total / max(t) / 1e9,
                   "gbps_max": total / min(t) / 1e9}
            pairs = [(total / x / 1e9) / f for x, f in zip(t, floor) if f]
            if pairs:  # the median over rounds of the in-round ratio to ucx_perftest
                rec["perftest"] = {"gbps": statistics.median([f for f in floor if f]),
                                   "gbps_min": min(f for f in floor if f),
                                   "gbps_max": max(f for f in floor if f),
                                   "ratio": statistics.median(pairs), "runs": len(pairs)}
            print("RESULT", json.dumps(rec), flush=True)
    for e in engines:
        if e.name == "ours":
            e.close()
    print("SENDER OK", flush=True)


def perftest_now(nbytes):
    """Sender side of --perftest-beside: asks the driver to run ucx_perftest's put_bw at
    `nbytes` now (this process waits) and returns its GB/s, None where it failed."""
    print(f"PERFTEST {nbytes}", flush=True)
    reply = sys.stdin.readline().split()
    return float(reply[1]) if len(reply) == 2 and reply[1] != "none" else None


def run_perftest(args, nbytes):
    """Driver side of --perftest-beside: ucx_perftest's put_bw at `nbytes` between the two
    namespaces (server beside the receiver on CPU 1, client beside the sender on CPU 0), at
    least 512 MiB a run, UCX's settings from the environment; its GB/s, or None."""
    iters = max(16, (512 * MIB) // nbytes)
    port = free_port()
    ns_recv, ns_send = args.netns
    pt = args.perftest_beside
    srv = subprocess.Popen(["ip", "netns", "exec", ns_recv, pt, "-p", str(port), "-c",
                            str(1 % os.cpu_count())], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            ss = subprocess.run(["ip", "netns", "exec", ns_recv, "ss", "-Hltn",
                                 f"sport = :{port}"], capture_output=True, text=True)
            if ss.stdout.strip():
                break
            time.sleep(0.05)
        cli = subprocess.run(["ip", "netns", "exec", ns_send, pt, args.hosts[0], "-p", str(port),
                              "-c", "0", "-t", "ucp_put_bw", "-s", str(nbytes), "-n", str(iters),
                              # One put outstanding: with no limit (its default), one run
                              # in two or three at 16-64 MiB stalls for seconds at its end.
                              "-w", str(iters // 10 + 1), "-O", "1", "-v"],
                             capture_output=True, text=True, timeout=120)
        final = [l.strip() for l in cli.stdout.splitlines()
                 if l.strip()[:1].isdigit() and l.count(",") >= 7]
        if not final:
            print(f"ucx_perftest put_bw of {nbytes} B beside the rounds failed (rc "
                  f"{cli.returncode}): {(cli.stderr or cli.stdout).strip()[-300:]}",
                  file=sys.stderr)
            return None
        # overall_bw (MB/s of 2^20 bytes) is the sixth field of the CSV line
        return float(final[-1].split(",")[5]) * MIB / 1e9
    except subprocess.TimeoutExpired:
        print(f"ucx_perftest put_bw of {nbytes} B beside the rounds: no result in 120 s",
              file=sys.stderr)
        return None
    finally:
        stop(srv)


def start(args, role, *extra):
    ns = args.netns[0 if role == "receiver" else 1] if args.netns else None
    cmd = ["ip", "netns", "exec", ns] if ns else []
    cmd += [sys.executable, os.path.abspath(__file__), "--role", role, "--url", args.url,
           "--hosts", ",".join(args.hosts),
           "--engines", ",".join(args.engines), "--rounds", str(args.rounds),
           "--iters", str(args.iters),
           "--blocks", ",".join(map(str, args.blocks)),
           "--counts", ",".join(map(str, args.counts)),
           "--singles", ",".join(map(str, args.singles)), *(["--pin"] if args.pin else []),
           *(["--perftest-beside", args.perftest_beside] if args.perftest_beside else []),
           *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if args.verbose else subprocess.DEVNULL,
                            text=True, start_new_session=True)


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def table(results, engines, perftest=()):
    """The Markdown table; with `perftest` (ucx_perftest's put_bw figures of the same run, by
    size), a column of ours against it on the single writes of those sizes."""
    rows = {}
    for r in results:
        rows.setdefault((r["kind"], r["block"], r["count"]), {})[r["engine"]] = r
    floor = {f["size"]: f for f in perftest}
    # ucx_perftest run beside the rounds of our single writes (--perftest-beside) takes the
    # place of the runs after the whole comparison
    floor.update({r["bytes"]: r["perftest"] for r in results
                  if r["engine"] == "ours" and r["kind"] == "single" and "perftest" in r})
    head = "| kind | block | blocks | bytes |"
    sep = "|---|---|---|---|"
    for e in engines:
        head += f" {e} µs | {e} GB/s |"
        sep += "---|---|"
    both = len(engines) == 2
    if both:
        head += " ours/mooncake |"
        sep += "---|"
    if floor and "ours" in engines:
        head += " ucx_perftest put_bw GB/s | ours/perftest |"
        sep += "---|---|"
    lines = [head, sep]
    for (kind, bs, n), per in rows.items():
        line = f"| {kind} | {human(bs)} | {n} | {human(bs * n)} |"
        for e in engines:
            r = per[e]
            line += (f" {r['us']:.1f} | {r['gbps']:.2f} "
                     f"<sub>{r['gbps_min']:.2f}–{r['gbps_max']:.2f}</sub> |")
        if both:
            line += f" {per['ours']['gbps'] / per['mooncake']['gbps']:.2f}× |"
        if floor and "ours" in engines:
            f = floor.get(bs * n) if kind == "single" else None
            # runs beside each round (--perftest-beside): the median in-round ratio
            ratio = f and (f["ratio"] if "ratio" in f else per["ours"]["gbps"] / f["gbps"])
            line += (f" {f['gbps']:.2f} <sub>{f['gbps_min']:.2f}–{f['gbps_max']:.2f}</sub> |"
                     f" {ratio:.2f}× |" if f else " | |")
        lines.append(line)
    return "\n".join(lines)


def plot(saved, path):
    """Two panels: single writes by size (with ucx_perftest's put_bw where the run has it), and
    batch writes by bytes a batch, one line per engine and block size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    results, engines = saved["results"], saved["engines"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    style = {"ours": dict(marker="o"), "mooncake": dict(marker="s", linestyle="--")}
    for e in engines:
        pts = sorted((r["bytes"], r) for r in results if r["engine"] == e and r["kind"] == "single")
        if pts:
            a1.errorbar([b for b, _ in pts], [r["gbps"] for _, r in pts],
                        yerr=[[r["gbps"] - r["gbps_min"] for _, r in pts],
                              [r["gbps_max"] - r["gbps"] for _, r in pts]],
                        label=e, capsize=2, markersize=4, **style.get(e, {}))
        # A colour per block size, a line style per engine.
        for k, bs in enumerate(sorted({r["block"] for r in results if r["kind"] == "batch"})):
            pts = sorted((r["bytes"], r) for r in results
                         if r["engine"] == e and r["kind"] == "batch" and r["block"] == bs)
            if pts:
                a2.plot([b for b, _ in pts], [r["gbps"] for _, r in pts], color=f"C{k}",
                        label=f"{e}, {human(bs)} blocks", markersize=4, **style.get(e, {}))
    f = [{"size": r["bytes"], "gbps": r["perftest"]["gbps"]} for r in results
         if r["engine"] == "ours" and r["kind"] == "single" and "perftest" in r]
    f = sorted(f, key=lambda x: x["size"]) or saved.get("perftest")
    if f:
        a1.plot([x["size"] for x in f], [x["gbps"] for x in f], linestyle=":", marker=".",
                label="ucx_perftest ucp_put_bw")
    for ax, title, xlabel in ((a1, "single writes", "bytes a write"),
                              (a2, "batch writes", "bytes a batch")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("GB/s (median over rounds)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def driver(args):
    if args.engines is None:
        args.engines = ["ours"] + (["mooncake"] if have_mooncake() else [])
        if "mooncake" not in args.engines:
            print("mooncake: not importable in this Python (mooncake.engine); our engine alone")
    port = free_port() if not args.netns else 10000 + os.getpid() % 20000  # below 32768
    args.url = f"tcp://{args.hosts[0]}:{port}"
    recv = start(args, "receiver")
    send = None
    try:
        line = recv.stdout.readline()
        while line and not line.startswith("READY"):
            print(line, end="") if args.verbose else None
            line = recv.stdout.readline()
        if not line:
            raise SystemExit(f"receiver exited (rc {recv.wait()}) before it was ready")
        _, dst, *peers = line.split()
        send = start(args, "sender", "--dst", dst, "--peers", *peers)
        results = []
        # A sender that hangs silently is killed after TIMEOUT s; its output then ends.
        watchdog = threading.Timer(TIMEOUT, stop, [send])
        watchdog.start()
        try:
            for line in send.stdout:
                if line.startswith("RESULT "):
                    results.append(json.loads(line[7:]))
                elif line.startswith("PERFTEST "):
                    gbps = run_perftest(args, int(line.split()[1]))
                    send.stdin.write(f"PERFTEST {'none' if gbps is None else gbps}\n")
                    send.stdin.flush()
                elif args.verbose or not line.startswith("SENDER OK"):
                    print(line, end="")
        finally:
            watchdog.cancel()
        if send.wait() != 0:
            raise SystemExit(f"sender failed (rc {send.returncode}; killed after {TIMEOUT} s "
                             "if it was still running)")
        recv.stdin.write("done\n")
        recv.stdin.flush()
        out, _ = recv.communicate(timeout=60)
        if recv.returncode != 0 or "RECEIVER OK" not in out:
            raise SystemExit(f"receiver failed (rc {recv.returncode}):\n{out}")
    finally:
        for p in (send, recv):
            if p is not None:
                stop(p)
    print(table(results, args.engines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"engines": args.engines, "rounds": args.rounds,
                       "load": os.getloadavg(), "results": results}, f, indent=1)
    got = {(r["kind"], r["block"], r["count"]) for r in results}
    want = set(cases(args))
    if got != want:
        raise SystemExit(f"cases without figures: {sorted(want - got)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", type=lambda t: t.split(","), default=None,
                    help="ours,mooncake (default: both where Mooncake imports)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; medians over them (5)")
    ap.add_argument("--iters", type=int, default=0,
                    help="calls per round (default: about 64 MiB a round, 1 to 50)")
    ap.add_argument("--blocks", type=size_list, default=BLOCKS, help="batch block sizes")
    ap.add_argument("--counts", type=lambda t: [int(x) for x in t.split(",")], default=COUNTS,
                    help="blocks per batch")
    ap.add_argument("--singles", type=size_list, default=SINGLES, help="single write sizes")
    ap.add_argument("--hosts", type=lambda t: t.split(","), default=["127.0.0.1"] * 2,
                    help="RECEIVER_IP,SENDER_IP the engines use (default 127.0.0.1 both)")
    ap.add_argument("--netns", type=lambda t: t.split(","),
                    help="RECEIVER_NS,SENDER_NS: start the two sides in these network namespaces")
    ap.add_argument("--pin", action="store_true",
                    help="the sender (all its threads) on CPU 0, the receiver on CPU 1, as "
                         "ucx_perftest's client and server run with -c 0 and -c 1")
    ap.add_argument("--perftest-beside", metavar="UCX_PERFTEST",
                    help="with --netns: run this ucx_perftest's put_bw between the namespaces "
                         "right beside every round of the single writes from 1 MiB, and give "
                         "each the median in-round ratio of ours to it")
    ap.add_argument("--smoke", action="store_true", help="a few cases, one round (ctest)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--plot", metavar="PNG",
                    help="with --table-from: draw its figures here (needs matplotlib)")
    ap.add_argument("--table-from", metavar="JSON",
                    help="print the table of a --json file and exit (nothing is run)")
    ap.add_argument("--verbose", action="store_true", help="the engines' own output too")
    ap.add_argument("--role", choices=["receiver", "sender"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--dst", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--peers", nargs="*", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smoke:
        args.blocks, args.counts = [16 * KIB, MIB], [1, 4]
        args.singles, args.rounds, args.iters = [4 * KIB, MIB], 1, 2
    for name in args.engines or []:
        if name not in ("ours", "mooncake"):
            ap.error(f"--engines: {name!r} is not ours or mooncake")
    if args.pin and args.role:
        # Before any engine starts a thread: its threads inherit the CPU.
        os.sched_setaffinity(0, {(1 if args.role == "receiver" else 0) % os.cpu_count()})
    if args.table_from:
        with open(args.table_from) as f:
            saved = json.load(f)
        print(table(saved["results"], saved["engines"], saved.get("perftest", ())))
        if args.plot:
            plot(saved, args.plot)
    elif args.role == "receiver":
        receiver(args)
    elif args.role == "sender":
        sender(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
