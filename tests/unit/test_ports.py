"""The lab's ports: never from the range the kernel gives outgoing connections, always free when picked."""

from __future__ import annotations

import socket

from kops.lab import ports


def test_picked_ports_are_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = ports.ephemeral_range()
    picked = [ports.free_port() for _ in range(200)]
    assert all(not low <= p <= high and p >= ports.LOWEST for p in picked)
    assert len(set(picked)) > 150  # random, so two labs starting together do not pick alike
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", picked[0]))


def test_a_port_in_use_is_not_picked(monkeypatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (taken + 1, 65535))
        monkeypatch.setattr(ports, "LOWEST", taken - 1000)  # a span of 1,001 ports that holds the busy one
        picked = {ports.free_port() for _ in range(300)}
        assert taken not in picked and all(taken - 1000 <= p < taken for p in picked)
