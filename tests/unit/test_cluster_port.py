"""The cluster port declares which of its calls write (`@writes`), and its adapters answer to it: every adapter
implements every call, and the in-memory one (tests/memory_cluster.py, which counts its writes) writes in exactly
the calls marked. The lock's fence checks the lock before those calls and no others."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.kops_log import LogRecords
from kops.cluster.port import RECORD_WRITES, WRITES, Cluster, Fenced, RecordStore
from kops.cluster.zookeeper import ZkCluster, ZkRecords
from kops.errors import KopsError
from kops.holder import LockLost
from kops.model.partitions import TopicPartition
from tests.memory_cluster import MemoryCluster, MemoryKafka, MemoryRecords

PAY0 = TopicPartition("pay", 0)
Call = Callable[[MemoryCluster], object]
CALLS: dict[str, Call] = {  # one call of each of the port's, on a cluster with topic pay: [1, 2] on brokers 1-4
    "snapshot": lambda c: c.snapshot(),
    "offers": lambda c: c.offers(),
    "sizes": lambda c: c.sizes(),
    "log_dirs": lambda c: c.log_dirs(),
    "records": lambda c: c.records(),
    "lock": lambda c: c.lock({"host": "h"}, 1.0, c.kafka.clock.sleep, c.kafka.clock.monotonic),
    "holder": lambda c: c.holder(),
    "capabilities": lambda c: c.capabilities(c.snapshot()),
    "create_topic": lambda c: c.create_topic("new", {0: (1, 2)}, {}),
    "add_partitions": lambda c: c.add_partitions("pay", {1: (2, 1)}),
    "shrink_partitions": lambda c: c.shrink_partitions("pay", 1),
    "delete_topic": lambda c: c.delete_topic("pay"),
    "read_config": lambda c: c.read_config("topics", "pay"),
    "alter_config": lambda c: c.alter_config("topics", "pay", {"retention.ms": "1"}),
    "read_configs": lambda c: c.read_configs([("topics", "pay"), ("brokers", "1")]),
    "alter_configs": lambda c: c.alter_configs({("topics", "pay"): {"retention.ms": "1"},
                                                ("brokers", "1"): {"leader.replication.throttled.rate": "9"}}),
    "submit": lambda c: c.submit([(PAY0, (3, 4))], c.snapshot()),
    "cancel": lambda c: c.cancel([PAY0], 1.0),
    "elect_preferred": lambda c: c.elect_preferred([PAY0], 1.0),
    "lags": lambda c: c.lags([(PAY0, 2)]),
    "replica_dirs": lambda c: c.replica_dirs(c.log_dirs()),
    "dir_copies": lambda c: c.dir_copies([(PAY0, 1)]),
    "alter_replica_dirs": lambda c: c.alter_replica_dirs({(PAY0, 1): "/var/lib/kafka/data"}),
    "close": lambda c: c.close(),
}
REFUSED = {"shrink_partitions"}  # KIP-253 is the kops engine's: Kafka refuses it before anything is written


def calls_of(protocol: type) -> set[str]:
    """Its public calls, inherited ones included (an adapter may take some from a mixin of the port's)."""
    return {name for klass in protocol.__mro__ if klass.__module__.startswith(("kops", "tests"))
            for name, value in vars(klass).items() if callable(value) and not name.startswith("_")}


def cluster() -> MemoryCluster:
    kafka = MemoryKafka(4)
    kafka.create_topic("pay", {0: (1, 2)}, {})
    return MemoryCluster(kafka)


def test_every_call_of_the_port_is_exercised_here_and_implemented_by_every_adapter() -> None:
    assert calls_of(Cluster) == set(CALLS) and set(CALLS) >= WRITES
    for adapter in (ZkCluster, AdminCluster, MemoryCluster):
        assert calls_of(Cluster) <= calls_of(adapter), adapter.__name__
    for store in (ZkRecords, LogRecords, MemoryRecords):
        assert calls_of(RecordStore) <= calls_of(store), store.__name__


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_writes_exactly_when_the_port_marks_it(name: str) -> None:
    port = cluster()
    if name in REFUSED:
        with pytest.raises(KopsError):
            CALLS[name](port)
        assert name in WRITES and port.writes == []
        return
    CALLS[name](port)
    assert bool(port.writes) == (name in WRITES), port.writes


def test_a_record_store_call_writes_exactly_when_the_port_marks_it() -> None:
    store = cluster().records()
    calls: dict[str, Callable[[], object]] = {
        "create": lambda: store.create("e1", b"{}"), "save": lambda: store.save("e1", b"{}"),
        "load": lambda: store.load("e1"), "ids": lambda: store.ids(),
        "set_cancel": lambda: store.set_cancel("e1", b"{}"), "get_cancel": lambda: store.get_cancel("e1"),
        "clear_cancel": lambda: store.clear_cancel("e1"), "note_absent": lambda: store.note_absent([3])}
    assert set(calls) == calls_of(RecordStore)
    for name, call in calls.items():  # in this order: clear_cancel finds the request set_cancel made
        before = len(store.port.writes)
        call()
        assert (len(store.port.writes) > before) == (name in RECORD_WRITES), name


class _Taken:
    """A lock another kops has taken."""

    lost: str | None = "taken by another kops"

    def acquire(self) -> None: ...
    def update(self, **fields: Any) -> None: ...
    def release(self) -> None: ...

    def ensure_held(self) -> None:
        raise LockLost("taken by another kops")


def test_the_fence_stops_each_write_and_no_read_once_the_lock_is_lost() -> None:
    port = cluster()
    fenced: Any = Fenced(port, _Taken())
    for name in sorted(WRITES - REFUSED):
        with pytest.raises(LockLost):
            CALLS[name](fenced)
    for name in sorted(set(CALLS) - WRITES - {"close"}):
        CALLS[name](fenced)
    with pytest.raises(LockLost):
        fenced.records().save("e1", b"{}")
    assert fenced.records().ids() == [] and port.writes == []


def test_the_memory_cluster_reports_its_disks_as_describe_log_dirs_v4_does() -> None:
    port = cluster()
    port.kafka.disks = {1: 10_000, 2: 10_000}
    port.kafka.produce("pay", 1_000)  # on replicas 1 and 2, acknowledged by the ISR
    port.kafka.stop_broker(4)
    dirs = {d.broker: d for d in port.log_dirs()}
    assert sorted(dirs) == [1, 2, 3]  # a stopped broker does not answer
    assert (dirs[1].total_bytes, dirs[1].usable_bytes) == (10_000, 9_000)
    assert dirs[3].total_bytes is None and not dirs[3].reported  # -1: no disk size said (Kafka before 3.3)
