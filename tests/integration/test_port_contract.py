"""The cluster port's contract: what the executor relies on a cluster to do, asserted by the same test functions
over the in-memory cluster (tests/memory_cluster.py) and over real Kafka 4 through the Admin API. The memory
cluster is the executor's fast test bed (tests/unit/test_executor_memory.py); these tests hold it to Kafka's
behaviour: where it differs, the kafka-4 run of the same function fails.

Waits go through the side under test: on Kafka they poll in real time, on memory they drive the clock (the
same `wait` loop, with `time.sleep` or the driven clock's). One real cluster for the module, emptied between
tests (tests/engines.py: kafka4_cluster, reset_admin_cluster, as the `admin_engine` fixture does).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kops.holder import Locked, holder_info
from kops.model.partitions import Partition, TopicPartition
from kops.model.snapshot import RequestedMove, Snapshot
from kops.model.throttle_keys import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from tests.engines import EngineLab
from tests.memory_cluster import MemoryCluster, MemoryKafka

T = TypeVar("T")
MB = 1024 * 1024
Layout = dict[int, tuple[int, ...]]


@dataclass
class Side:
    """One implementation of the port under test, with what a test needs around it."""

    kind: str
    open_port: Callable[[], Any]  # a new connection (another kops process) to the same cluster
    sleep: Callable[[float], None]
    monotonic: Callable[[], float]
    write_data: Callable[[str, Layout, int], None]  # bytes into every partition of a topic
    stop_broker: Callable[[int], None]  # a clean stop
    start_broker: Callable[[int], None]
    ports: list[Any] = field(default_factory=list)

    @property
    def port(self) -> Any:
        if not self.ports:
            self.other()
        return self.ports[0]

    def other(self) -> Any:
        self.ports.append(self.open_port())
        return self.ports[-1]

    def wait(self, check: Callable[[], T], what: str, timeout: float = 60.0) -> T:
        """`check` until truthy: polling on Kafka, driving the clock on memory."""
        deadline = self.monotonic() + timeout
        while True:
            found = check()
            if found:
                return found
            if self.monotonic() > deadline:
                raise AssertionError(f"{self.kind}: timed out after {timeout:g} s waiting for {what}")
            self.sleep(0.1)

    def topic_with_data(self, name: str, layout: Layout, nbytes: int) -> Snapshot:
        assert self.port.create_topic(name, layout, {})
        if nbytes:
            self.write_data(name, layout, nbytes)
        return self.wait(lambda: settled(self.port.snapshot(), name, layout), f"{name} created, in sync")


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineLab]:
    from tests.engines import kafka4_cluster

    with kafka4_cluster(tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


@pytest.fixture(params=["memory", pytest.param("kafka-4", marks=pytest.mark.lab)])
def port_cluster(request: pytest.FixtureRequest) -> Iterator[Side]:
    side = _memory() if request.param == "memory" else _kafka4(request.getfixturevalue("kafka4"))
    try:
        yield side
    finally:
        for port in side.ports:
            port.close()


def _memory() -> Side:
    kafka = MemoryKafka(4)

    def write(name: str, _layout: Layout, nbytes: int) -> None:
        kafka.produce(name, nbytes)

    return Side("memory", lambda: MemoryCluster(kafka), kafka.clock.sleep, kafka.clock.monotonic, write,
                kafka.stop_broker, kafka.start_broker)


def _kafka4(cluster: EngineLab) -> Side:
    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from tests.engines import fill_real, reset_admin_cluster

    bootstrap = cluster.bootstrap
    assert bootstrap is not None
    reset_admin_cluster(cluster.lab, bootstrap)

    def write(name: str, layout: Layout, nbytes: int) -> None:
        fill_real(bootstrap, {name: layout}, nbytes / MB)

    return Side("kafka-4", lambda: AdminCluster(AdminSettings(bootstrap)), time.sleep, time.monotonic, write,
                cluster.lab.stop_broker, cluster.lab.start_broker)  # the next test's reset starts every broker


def settled(snapshot: Snapshot, topic: str, layout: Layout) -> Snapshot | None:
    """The snapshot once `topic` has `layout`, nothing moving, each led by its first replica, all in sync."""
    found = snapshot.topics.get(topic)
    if found is None or {p: part.replicas for p, part in found.partitions.items()} != layout:
        return None
    parts = found.partitions.values()
    ok = all(not p.reassigning and p.leader == p.replicas[0] and set(p.isr) == set(p.replicas) for p in parts)
    return snapshot if ok else None


def quiet(snapshot: Snapshot) -> Snapshot | None:
    """The snapshot once nothing in it is moving (no partition reassigning, no reassignment listed) and the brokers
    agree on it: a poll does not wait for them, and one broker may still show the replicas being removed."""
    return None if snapshot.in_flight() or snapshot.requested_moves or snapshot.problems else snapshot


def partition(side: Side, tp: TopicPartition) -> Partition:
    part = side.port.snapshot(only_partitions=[tp]).partition(tp)
    assert part is not None, f"{tp} is gone"
    return part


def throttle(side: Side, topic: str, moves: dict[int, tuple[tuple[int, ...], tuple[int, ...]]], rate: int) -> None:
    """Kafka's tool's throttles for `moves` (partition -> (from, to)): lists on the topic, rates on its brokers."""
    leaders = ",".join(sorted(f"{p}:{b}" for p, (old, _new) in moves.items() for b in old))
    followers = ",".join(sorted(f"{p}:{b}" for p, (old, new) in moves.items() for b in new if b not in old))
    side.port.alter_config("topics", topic, {LEADER_REPLICAS: leaders, FOLLOWER_REPLICAS: followers})
    for broker in sorted({b for old, new in moves.values() for b in (*old, *new)}):
        side.port.alter_config("brokers", str(broker), {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)})


def unthrottle(side: Side, topic: str) -> None:
    side.port.alter_config("topics", topic, {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None})
    for broker in range(1, 5):
        side.port.alter_config("brokers", str(broker), {LEADER_RATE: None, FOLLOWER_RATE: None})


def test_a_created_topic_is_in_the_snapshot_as_created(port_cluster: Side) -> None:
    side = port_cluster
    layout = {0: (1, 2, 3), 1: (2, 3, 4)}
    assert side.port.create_topic("orders", layout, {"retention.ms": "3600000"})
    snap = side.wait(lambda: settled(side.port.snapshot(), "orders", layout), "orders created, in sync")
    topic = snap.topics["orders"]
    assert topic.config == {"retention.ms": "3600000"} and topic.topic_id
    assert {1, 2, 3, 4} <= snap.live_broker_ids and snap.cluster_id
    assert snap.connect is not None and snap.connect.startswith("kafka://") and not snap.requested_moves
    assert not side.port.create_topic("orders", {0: (1,)}, {}), "a topic that exists is not created again"
    narrowed = side.port.snapshot(only_partitions=[TopicPartition("orders", 1)])
    assert list(narrowed.topics["orders"].partitions) == [1]


def test_a_move_is_in_flight_as_kafka_lists_it_then_completes_in_target_order(port_cluster: Side) -> None:
    """KIP-455: replicas = target + removing (adding and removing sorted) until the target is in sync; then the
    target in its order, the leader kept where it is in the target, else the target's first in sync."""
    side = port_cluster
    moves = {0: ((1, 2), (3, 4, 1)), 1: ((2, 1), (4, 3))}
    snap = side.topic_with_data("moves", {p: old for p, (old, _new) in moves.items()}, MB)
    throttle(side, "moves", moves, 256 * 1024)  # about 4 s of copying on Kafka
    side.port.submit([(TopicPartition("moves", p), new) for p, (_old, new) in moves.items()], snap)
    tp0, tp1 = TopicPartition("moves", 0), TopicPartition("moves", 1)
    moving = side.wait(lambda: (s := side.port.snapshot({"moves"})).in_flight() and s, "the moves in flight")
    first, second = moving.partition(tp0), moving.partition(tp1)
    assert first is not None and second is not None
    assert (first.replicas, first.adding, first.removing, first.leader) == ((3, 4, 1, 2), (3, 4), (2,), 1)
    assert (second.replicas, second.adding, second.removing, second.leader) == ((4, 3, 1, 2), (3, 4), (1, 2), 2)
    assert set(moving.requested_moves) == {RequestedMove("moves", 0, (3, 4, 1)), RequestedMove("moves", 1, (4, 3))}
    lags = side.port.lags([(tp0, 3), (tp0, 4)])
    assert set(lags) == {(tp0, 3), (tp0, 4)} and all(lag > 0 for lag in lags.values()), lags
    done = side.wait(lambda: quiet(side.port.snapshot({"moves"})), "the moves complete", timeout=120)
    first, second = done.partition(tp0), done.partition(tp1)
    assert first is not None and second is not None
    assert (first.replicas, first.leader, set(first.isr)) == ((3, 4, 1), 1, {1, 3, 4})  # leader kept
    assert (second.replicas, set(second.isr)) == ((4, 3), {3, 4}) and second.leader == 4  # the target's first
    unthrottle(side, "moves")


def test_throttle_configs_read_back_as_written_and_go_with_none(port_cluster: Side) -> None:
    side = port_cluster
    assert side.port.create_topic("limits", {0: (1, 2), 1: (2, 3)}, {})
    topic = {LEADER_REPLICAS: "0:1,0:2,1:2,1:3", FOLLOWER_REPLICAS: "0:3,1:4"}
    rates = {LEADER_RATE: "1048576", FOLLOWER_RATE: "2097152"}
    side.port.alter_config("topics", "limits", topic)
    side.port.alter_config("brokers", "2", rates)
    assert side.port.read_config("topics", "limits") == topic
    assert side.port.read_config("brokers", "2") == rates
    snap = side.port.snapshot()
    assert snap.topics["limits"].config == topic and snap.broker_configs.get("2") == rates
    side.port.alter_config("topics", "limits", {FOLLOWER_REPLICAS: None})
    assert side.port.read_config("topics", "limits") == {LEADER_REPLICAS: topic[LEADER_REPLICAS]}
    side.port.alter_config("topics", "limits", {LEADER_REPLICAS: None})
    side.port.alter_config("brokers", "2", {LEADER_RATE: None, FOLLOWER_RATE: None})
    assert side.port.read_config("topics", "limits") == {} and side.port.read_config("brokers", "2") == {}
    assert "2" not in side.port.snapshot().broker_configs


def test_several_entities_configs_change_and_read_back_together(port_cluster: Side) -> None:
    """A batch's throttles in one call: a topic's lists and two brokers' rates written, read and removed at
    once, each entity reading back what was written to it (on Kafka, each broker's rates from that broker)."""
    side = port_cluster
    assert side.port.create_topic("together", {0: (1, 2)}, {})
    changes = {("topics", "together"): {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3"},
               ("brokers", "1"): {LEADER_RATE: "1048576"}, ("brokers", "3"): {FOLLOWER_RATE: "2097152"}}
    side.port.alter_configs(changes)
    assert side.port.read_configs(list(changes)) == changes
    side.port.alter_configs({entity: dict.fromkeys(values) for entity, values in changes.items()})
    assert side.port.read_configs(list(changes)) == dict.fromkeys(changes, {})


def test_cancel_restores_the_original_replica_set_in_the_order_kafka_gives_it(port_cluster: Side) -> None:
    """KIP-455's cancel: the original set, in the reassignment's order minus the replicas being added ([3, 1]
    moving to [4, 1, 2] comes back as [1, 3]); kops.executor.order puts the original order back itself."""
    side = port_cluster
    tp = TopicPartition("cancels", 0)
    snap = side.topic_with_data("cancels", {0: (3, 1)}, MB)
    throttle(side, "cancels", {0: ((3, 1), (4, 1, 2))}, 32 * 1024)  # half a minute of copying on Kafka
    side.port.submit([(tp, (4, 1, 2))], snap)
    moving = side.wait(lambda: (p := partition(side, tp)).reassigning and p, "the move in flight")
    assert moving.replicas == (4, 1, 2, 3) and moving.adding == (2, 4) and moving.removing == (3,)
    side.port.cancel([tp], 60.0)
    back = side.wait(lambda: not (p := partition(side, tp)).reassigning and p, "the move cancelled")
    assert set(back.replicas) == {3, 1}, "the original replica set"
    assert back.replicas == (1, 3), "Kafka's order after a cancel: the reassignment's, the added replicas gone"
    assert back.leader == 3 and set(back.isr) == {1, 3} and not side.port.snapshot({"cancels"}).requested_moves
    side.port.cancel([tp], 60.0)  # nothing moving any more: no error
    unthrottle(side, "cancels")


def test_a_reorder_completes_at_once_and_elect_preferred_makes_the_first_replica_leader(port_cluster: Side) -> None:
    side = port_cluster
    tp = TopicPartition("elect", 0)
    snap = side.topic_with_data("elect", {0: (1, 2, 3)}, 0)
    side.port.submit([(tp, (2, 3, 1))], snap)
    reordered = side.wait(lambda: (p := partition(side, tp)).replicas == (2, 3, 1) and not p.reassigning and p,
                          "the reorder done")
    assert reordered.leader == 1, "a reorder keeps the leader: it is in the target"
    assert side.port.elect_preferred([tp], 30.0)
    side.wait(lambda: partition(side, tp).leader == 2, "the preferred leader elected")
    assert side.port.elect_preferred([tp], 30.0), "no election needed is success"


def test_a_stopped_broker_leaves_the_live_set_and_the_isr_and_rejoins_when_back(port_cluster: Side) -> None:
    """Broker 4 (not the quorum controller) stops: its leadership passes to the first replica in sync."""
    side = port_cluster
    tp = TopicPartition("stops", 0)
    side.topic_with_data("stops", {0: (4, 2, 3)}, 0)
    side.stop_broker(4)
    gone = side.wait(lambda: 4 not in (s := side.port.snapshot()).live_broker_ids and s, "broker 4 gone")
    part = side.wait(lambda: (p := partition(side, tp)).leader != 4 and p, "a new leader")
    assert part.leader == 2 and set(part.isr) == {2, 3} and part.replicas == (4, 2, 3)
    assert gone.under_replicated() == [tp] or tp in side.port.snapshot().under_replicated()
    side.start_broker(4)
    back = side.wait(lambda: set((p := partition(side, tp)).isr) == {2, 3, 4} and p, "broker 4 in sync again")
    assert back.leader == 2, "rejoining the ISR elects no one"
    assert side.port.elect_preferred([tp], 30.0)
    side.wait(lambda: partition(side, tp).leader == 4, "broker 4 leads again once elected")


def test_records_are_created_saved_loaded_and_listed(port_cluster: Side, tmp_path: Path) -> None:
    side = port_cluster
    store, other = side.port.records(), side.other().records()
    name = "20260101T000000Z-0123abcd-apply"
    assert store.load(name) is None and store.max_bytes >= 100_000
    store.create(name, b'{"status": "running"}')
    store.save(name, b'{"status": "done"}')
    assert store.load(name) == b'{"status": "done"}' and name in store.ids()
    assert other.load(name) == b'{"status": "done"}' and name in other.ids(), "another kops sees it"
    assert store.get_cancel(name) is None
    other.set_cancel(name, b'{"now": false}')
    assert store.get_cancel(name) == b'{"now": false}'
    store.clear_cancel(name)
    assert other.get_cancel(name) is None


def test_absences_are_noted_once_by_the_store_s_clock_and_forgotten_when_back(port_cluster: Side) -> None:
    side = port_cluster
    store, other = side.port.records(), side.other().records()
    first, now = store.note_absent([7])
    assert set(first) == {7} and first[7] <= now
    side.sleep(1.5)
    again, later = other.note_absent([7, 8])  # another kops, another host: the same first sighting of 7
    assert again[7] == first[7] and later - first[7] >= 1000 and first[7] < again[8] <= later
    assert store.note_absent([8])[0] == {8: again[8]}  # 7 is back: forgotten
    assert other.note_absent([7])[0][7] > first[7]  # gone again: a new first sighting
    assert store.note_absent([])[0] == {}  # all back: forgotten
    assert store.note_absent([]) == ({}, 0)  # nothing absent, nothing noted: nothing written


def test_one_lock_holder_at_a_time(port_cluster: Side) -> None:
    side = port_cluster
    first, second = side.port, side.other()
    lock = first.lock(holder_info("a.json", None, time.time()), 1.0, side.sleep, side.monotonic)
    lock.acquire()
    try:
        lock.ensure_held()
        assert lock.lost is None
        lock.update(execution="e-1")
        holder = second.holder()
        assert holder is not None and holder["pid"] == os.getpid() and holder["execution"] == "e-1"
        refused = second.lock(holder_info("b.json", None, time.time()), 1.0, side.sleep, side.monotonic)
        with pytest.raises(Locked, match="locked by"):
            refused.acquire()
        lock.ensure_held()  # a refused contender takes nothing away
    finally:
        lock.release()
    assert second.holder() is None
    after = second.lock(holder_info("b.json", None, time.time()), 1.0, side.sleep, side.monotonic)
    after.acquire()
    after.release()
