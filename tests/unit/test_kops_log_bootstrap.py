"""How the `__kops` producer and consumer pick the bootstrap server they start from (kops/cluster/admin/kops_log.py).

Found by an outside check on Kafka 4.3.1: a stopped broker listed first in `-b` (connection refused) added about
20 s to every `kops rebalance --heal-after`, which `kops state` did not pay: alone, kafka-python retries a refused
server for its whole bootstrap timeout (--connect-timeout, 10 s), once for the consumer (the lock holder) and once
more for the producer (the absence note). Now a server that refuses the connection is passed over at once, and
the one that answered last goes first. Real sockets, no Kafka: `make` is what would build the client.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from kafka.errors import KafkaTimeoutError

from kops.cluster.admin.connection import AdminSettings
from kops.cluster.admin.kops_log import KopsLog
from kops.errors import ConnectionFailed


@pytest.fixture
def listening() -> Iterator[str]:
    """A port that takes TCP connections (as a broker does, even a paused one)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"127.0.0.1:{server.getsockname()[1]}"


def refused() -> str:
    """A port nothing listens on: connection refused, as a stopped broker's."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def log_over(*servers: str) -> KopsLog:
    return KopsLog(AdminSettings(",".join(servers), connect_timeout_ms=10_000), admin=lambda: None)  # type: ignore[arg-type, return-value]  # never asked


def test_a_server_that_refuses_the_connection_is_passed_over_at_once(listening: str) -> None:
    dead = refused()
    log = log_over(dead, listening)
    tried: list[list[str]] = []
    made = log._bootstrapped(lambda arguments: tried.append(arguments["bootstrap_servers"]) or "client", {})
    assert made == "client" and tried == [[listening]]  # never the dead one: no 10 s of retries


def test_the_server_that_answered_last_goes_first_and_a_silent_one_is_still_tried_past(listening: str) -> None:
    """A server that takes connections but whose client times out (a paused broker) is passed as before."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        second = f"127.0.0.1:{other.getsockname()[1]}"
        log = log_over(listening, second)
        tried: list[str] = []

        def make(arguments: dict) -> str:
            (server,) = arguments["bootstrap_servers"]
            tried.append(server)
            if server == listening:
                raise KafkaTimeoutError("Unable to bootstrap")  # silent: its handshake outlasts the timeout
            return server

        assert log._bootstrapped(make, {}) == second and tried == [listening, second]
        tried.clear()
        assert log._bootstrapped(make, {}) == second and tried == [second]  # the producer after the consumer


def test_no_server_answering_is_one_line(listening: str) -> None:
    log = log_over(refused(), refused())
    with pytest.raises(ConnectionFailed, match="no broker answered to reach __kops"):
        log._bootstrapped(lambda arguments: pytest.fail("a refused server was tried"), {})
