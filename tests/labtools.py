"""Helpers for tests that drive a lab cluster from outside, as an operator or Kafka's tools would."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kops.errors import KopsError
from kops.lab import traffic
from kops.lab.controller.channel import call_registered_broker
from kops.lab.kops_engine import Lab
from kops.model.partitions import PartitionState
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.controller import decode_controller
from kops.zk_layout.codecs.partition_state import decode_partition_state
from kops.zk_layout.codecs.topics import decode_topic

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 30.0, what: str = "condition") -> T:
    """Poll `check` until it returns something truthy; fail the test after `timeout` seconds.

    The pause between checks is 50 ms, or twice what the last check took (at most a second): many checks open a
    client or read every znode, and polled every 50 ms they took a core of the two the processes a test waits for
    need, while a cheap check (a znode's existence) still sees a short window."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        began = time.monotonic()
        last = check()
        if last:
            return last
        time.sleep(min(1.0, max(0.05, 2 * (time.monotonic() - began)), max(0.0, deadline - time.monotonic())))
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


def wait_while_running(process: subprocess.Popen, check: Callable[[], T], timeout: float = 90.0,
                       what: str = "condition") -> T:
    """`wait_until` beside a kops subprocess: fail at once, with its output, if it ends before `check` holds, and
    on a timeout stop it and show what it printed. A bare wait for an apply's first batch only said it timed out
    (a CI failure whose cause the apply's own lines would have named)."""
    ended = object()

    def ready() -> Any:
        return check() or (ended if process.poll() is not None else None)

    try:
        found = wait_until(ready, timeout=timeout, what=what)
    except Exception as exc:  # a timeout, or the check itself failing: the process must not go on beside the next test
        process.kill()
        out, err = process.communicate(timeout=30)
        raise AssertionError(f"{exc!r}; the process printed:\n{out[-2500:]}\n{err[-2500:]}") from exc
    if found is ended:
        out, err = process.communicate(timeout=30)
        raise AssertionError(f"the process ended (exit {process.returncode}) before {what}:\n{out[-2500:]}\n"
                             f"{err[-2500:]}")
    return found


def settles(read: Callable[[], T], expected: T, timeout: float = 15.0) -> bool:
    """True once `read()` gives `expected`; after `timeout`, an AssertionError showing the last read.

    For what real Kafka reports after kops changed it: a KRaft broker applies a config change from the metadata
    log on its own time, so a broker other than the one kops read its write back from (kops/cluster/admin/adapter.py)
    may answer for a moment with the value before it. Kafka's propagation is eventual; what kops leaves behind is
    what it settles to."""
    seen: list[T] = []

    def matches() -> bool:
        seen[:] = [read()]
        return seen[0] == expected

    try:
        return wait_until(matches, timeout, what=f"{expected!r}")
    except AssertionError:
        raise AssertionError(f"expected {expected!r} within {timeout:g}s, last read {seen[0]!r}") from None


def produced(client: ZkClient, topic: str, nbytes: int, partition: int | None = None) -> dict[int, int] | None:
    """`traffic.produce` on the kops engine, or None when a leader was elected between its read and its append
    (that broker refuses: poll again, as a producer retries on NotLeaderForPartition)."""
    try:
        return traffic.produce(client, topic, nbytes, partition)
    except KopsError:
        return None


@contextmanager
def running_lab(directory: Path, zookeeper: str, brokers: int = 3, **options: Any) -> Iterator[Lab]:
    """A lab whose brokers die with the test process, torn down even when the test fails."""
    lab = Lab(directory, detached=False)
    lab.up(brokers=brokers, zookeeper=zookeeper, session_timeout=options.pop("session_timeout", 3.0), **options)
    try:
        yield lab
    finally:
        lab.down()
        assert not lab.pids_alive(), "a broker process survived lab.down()"


def state(client: ZkClient, topic: str, partition: int) -> PartitionState | None:
    node = client.get(paths.partition_state(topic, partition))
    return None if node is None else decode_partition_state(node.data, "state")


def replicas(client: ZkClient, topic: str) -> dict[int, tuple[int, ...]]:
    node = client.get(paths.topic(topic))
    return {} if node is None else decode_topic(node.data, "topic").replicas


def controller(client: ZkClient) -> int | None:
    node = client.get(paths.CONTROLLER)
    return None if node is None else decode_controller(node.data, "controller").broker_id


def broker_status(client: ZkClient, broker: int) -> dict[str, Any]:
    """The broker's own view (RPC `status`): its replicas and, if active, its controller's figures."""
    return call_registered_broker(client, broker, "status")


def configs_applied(client: ZkClient, brokers: tuple[int, ...] | None = None, timeout: float = 30.0) -> None:
    """Until every broker (registered ones by default) has applied every config change notification written so
    far: brokers follow `config_change_` notifications asynchronously, as Kafka's do."""
    names = client.children(paths.CONFIG_CHANGES) or []
    prefix = len(paths.CONFIG_CHANGE_PREFIX)
    latest = max((int(n[prefix:]) for n in names if n[prefix:].isdigit()), default=-1)
    ids = brokers or tuple(int(b) for b in client.children(paths.BROKER_IDS) or [] if b.isdigit())
    wait_until(lambda: all(broker_status(client, b).get("config_sequence", -1) >= latest for b in ids), timeout,
               what=f"brokers {list(ids)} applying config change {latest}")


def replica(client: ZkClient, broker: int, topic: str, partition: int) -> dict[str, Any] | None:
    keys = ("topic", "partition", "role", "online", "start", "end", "hw", "leader", "leader_epoch", "isr",
            "created_at", "caught_up_at", "fetch_error")
    for row in broker_status(client, broker)["replicas"]:
        if row[0] == topic and row[1] == partition:
            return dict(zip(keys, row))
    return None
