"""Ports for the lab's servers, picked outside the kernel's ephemeral range.

A port the kernel hands out for `bind(0)` comes from the same range as the source ports of outgoing
connections, so between picking it and the server binding it, any client connecting anywhere can take it: a
Kafka node then dies at start-up with "Address already in use" (seen in CI with two test workers running
clusters side by side). Below that range only servers that chose a port bind, and a random pick makes two
labs starting at once unlikely to choose the same one; a pick is checked by binding it.

Unlikely is not never: a lab picks its ports, then its JVMs bind them seconds later, and a lab starting meanwhile
in another process (the other test worker's) could pick one of them (seen in CI: a Kafka 3.9 node died with
"Address already in use" on a port of that range). So a pick is also claimed across processes, by creating a file
named for it exclusively in a shared folder; a claim holds for `HOLD_SECONDS`, long enough for a server to bind.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from pathlib import Path

LOWEST = 10_000  # below: well-known and registered services a developer's machine may run
_RANDOM = random.Random()  # its own generator: tests that seed the global one must not make labs collide
_ATTEMPTS = 100
CLAIMS = Path(tempfile.gettempdir()) / "kops-lab-ports"
HOLD_SECONDS = 300.0


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' source ports (Linux's default when unreadable)."""
    try:
        low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _claimed(port: int) -> bool:
    """Claim `port` for this process unless another claimed it within HOLD_SECONDS; whether this one did."""
    CLAIMS.mkdir(parents=True, exist_ok=True)
    claim = CLAIMS / str(port)
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        try:
            if time.time() - claim.stat().st_mtime < HOLD_SECONDS:
                return False
            os.utime(claim)  # an old claim: its server bound the port long ago, or never started
            return True
        except FileNotFoundError:
            return False


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on, outside the ephemeral range when there is room for one."""
    low, high = ephemeral_range()
    spans = [(a, b) for a, b in ((LOWEST, low - 1), (high + 1, 65535)) if b - a >= 1000]
    for _ in range(_ATTEMPTS if spans else 0):
        start, end = _RANDOM.choice(spans)
        port = _RANDOM.randint(start, end)
        if _bindable(port) and _claimed(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room outside: the kernel's choice
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
