"""Where a run's ranks meet: the loopback address, a free port on it, and the socket settings that keep
Gloo and NCCL on it (bench/collectives, bench/dataparallel).

A run starts its ranks itself, on this machine; they meet over TCP on 127.0.0.1 (containers run without
a network but with loopback). Standard library only, CPython 3.6-clean.
"""

import datetime
import os
import socket

HOST = "127.0.0.1"
# Gloo and NCCL open their own sockets after the rendezvous: on the loopback interface, so a run
# needs no network (a value the caller set wins).
SOCKET_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
# A rank waits this long for the others at the rendezvous, at a barrier and in a collective before it fails.
TIMEOUT = datetime.timedelta(minutes=10)


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def pin_sockets() -> None:
    """Point Gloo's and NCCL's sockets at the loopback interface, in this process and the ranks it starts
    (values already set win)."""
    for name, value in SOCKET_ENV.items():
        os.environ.setdefault(name, value)
