"""The lab's ports: never from the range the kernel gives outgoing connections, always free when picked."""

from __future__ import annotations

import os
import socket
import time

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


def test_a_port_another_process_claimed_is_not_picked_until_its_claim_is_old(monkeypatch, tmp_path) -> None:
    """Two labs starting at once in two processes: the second must not pick a port the first picked but whose
    server has not bound it yet (a Kafka JVM binds seconds after the pick)."""
    monkeypatch.setattr(ports, "CLAIMS", tmp_path)
    low, _high = ports.ephemeral_range()
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (low, 65535))
    monkeypatch.setattr(ports, "LOWEST", low - 1001)  # 1,001 ports to pick from
    claimed = low - 1001 + 7
    (tmp_path / str(claimed)).touch()  # another process's fresh claim, its server not listening yet
    picked = [ports.free_port() for _ in range(300)]
    assert claimed not in picked and len(set(picked)) == len(picked)  # and this process never picks one twice
    old = tmp_path / str(picked[0])
    os.utime(old, (time.time() - ports.HOLD_SECONDS - 1,) * 2)
    assert ports._claimed(picked[0]) and not ports._claimed(picked[0])  # an old claim is taken over, once
