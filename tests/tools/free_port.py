"""A free TCP port for a server a test starts: a random one below the kernel's ephemeral range
(net.ipv4.ip_local_port_range), so that no outgoing connection's source port can take it between
this probe and the server's bind (a port the kernel hands out, bind(0), can be). Import
free_port(host), or run `python3 free_port.py [HOST]` to print one (default 127.0.0.1)."""

import errno
import os
import random
import socket
import sys
import time


def free_port(host="127.0.0.1"):
    """A port nothing on `host` is bound to now, in 10000 up to the ephemeral range's start.
    OSError where `host` is no address of this machine."""
    start = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            start = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    first, last = 10000, start - 1 if start > 11000 else 30000
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    pick = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(1000):
        port = pick.randint(first, last)
        with socket.socket(family) as s:
            try:
                s.bind((host, port))
            except OSError as e:
                if e.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise  # no such address here: no port will do
            return port
    raise RuntimeError(f"free_port: no free port on {host} in {first}..{last}")


if __name__ == "__main__":
    print(free_port(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"))
