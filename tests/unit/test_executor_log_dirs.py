"""The executor puts replicas in named log dirs (issue 37, docs/design/jbod.md §6; kops/executor/log_dirs.py),
against the in-memory cluster with two dirs per broker (tests/memory_cluster.py, Kafka's KIP-113 semantics): a
disk move and a new replica placed by its move reach their dirs under the alter-log-dirs throttle, which is
restored after; rollback puts the replica back; a kill -9 at any write resumes to the same end; an offline dir
is a health stop naming broker and dir; a port that cannot move replicas between dirs (ZooKeeper, the kops
engine) refuses the plan in one line before anything is written. On real Kafka: tests/integration/test_jbod_real.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from kops.cluster.port import Capabilities
from kops.cluster.zookeeper import ZkCluster
from kops.errors import ExitCode, Refused
from kops.executor.executor import Controls, Executor
from kops.model.brokers import FeatureRange
from kops.model.dir_moves import place
from kops.model.features import KIP236_QUEUE
from kops.model.partitions import TopicPartition
from kops.model.plan import ALTER_LOG_DIRS_RATE
from kops.model.snapshot import Snapshot
from kops.planner.planner import plan_targets
from kops.zk_layout.codecs.reassign_tool import read_reassignment_json
from tests.builders import brokers
from tests.memory_cluster import Crash, MemoryCluster, MemoryKafka
from tests.unit.test_executor_memory import Bed as MemoryBed

MB = 1024 * 1024
DIGEST = "0123456789abcdef"
ORDERS0, ORDERS1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def d(broker: int, n: int) -> str:
    return f"/data/b{broker}/d{n}"


FILE = {"version": 1, "partitions": [
    {"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": [d(1, 2), "any"]},  # a disk move
    {"topic": "orders", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", d(1, 2)]},  # 1 born in d2
]}


def read(port: MemoryCluster) -> Snapshot:
    """What `kops plan -b` reads: the snapshot, the dirs, and which dir holds each replica."""
    dirs = port.log_dirs()
    return replace(port.snapshot(), log_dirs=dirs, replica_dirs=port.replica_dirs(dirs), replica_dirs_read=True)


class Bed(MemoryBed):
    """test_executor_memory's bed (executor, apply, record) over a cluster whose brokers have two dirs each."""

    def where(self) -> tuple[str, str, tuple[int, ...]]:
        """orders-0's dir on broker 1, orders-1's dir on broker 1 (if it holds one) and orders-1's replicas."""
        part = self.kafka.part(ORDERS1)
        assert part is not None
        held = self.kafka.dir_of(ORDERS1, 1) if 1 in part.logs else "-"
        return self.kafka.dir_of(ORDERS0, 1), held, tuple(part.replicas)

    def settled(self) -> bool:
        return not self.kafka.futures and not any(p.adding or p.removing for p in self.kafka._parts())


def bed(tmp_path: Path, throttle: int | None = 2 * MB) -> Bed:
    kafka = MemoryKafka(3)
    kafka.dirs = {b: (d(b, 1), d(b, 2)) for b in (1, 2, 3)}
    kafka.create_topic("orders", {0: (1, 2), 1: (2, 3), 2: (3, 1)}, {})
    kafka.produce("orders", 8 * MB)
    port = MemoryCluster(kafka)
    snap = read(port)
    entries = read_reassignment_json(json.dumps(FILE), "r.json", disk_moves=True)
    sizes = port.sizes()
    moved = plan_targets(snap, {TopicPartition(e.topic, e.partition): e.replicas for e in entries}, "memory",
                         sizes=sizes, where="r.json")
    if throttle is not None:
        moved = replace(moved, batches=tuple(replace(b, throttle=replace(b.throttle, rate=throttle))
                                             for b in moved.batches))
    placed = {TopicPartition(e.topic, e.partition): e.placed for e in entries if e.placed}
    plan = place(moved, snap, placed, sizes, throttle, float(throttle or MB), "r.json", "test")
    assert len(plan.disk_moves) == 1 and plan.moves[0].to_dirs == (None, d(1, 2))
    return Bed(kafka, plan, str(tmp_path / "plan.json"))


def test_a_disk_move_and_a_placed_replica_reach_their_dirs_under_the_alter_log_dirs_throttle(tmp_path: Path) -> None:
    b = bed(tmp_path)
    assert b.where() == (d(1, 1), "-", (2, 3))
    seen: list[str | None] = []
    b.kafka.clock.listeners.append(lambda _step: seen.append(b.kafka.read_config("brokers", "1").get(
        ALTER_LOG_DIRS_RATE)) if b.kafka.futures else None)
    writes = MemoryCluster(b.kafka)
    outcome = b.apply(writes)
    assert outcome.exit_code == ExitCode.OK, outcome.reason
    assert b.where() == (d(1, 2), d(1, 2), (2, 1)) and b.settled()
    assert seen and set(seen) == {str(2 * MB)}  # the future replica copied under the throttle
    assert ALTER_LOG_DIRS_RATE not in b.kafka.read_config("brokers", "1")  # and it was restored
    first_place = writes.writes.index("alter_replica_dirs 1")
    assert first_place < writes.writes.index("submit 1")  # the new replica's dir asked for before it existed
    assert b.record().batches[-1].disk_moves == [replace(m, reason="") for m in b.plan.disk_moves]  # as recorded


def test_a_lower_alter_log_dirs_throttle_of_the_operator_is_kept_and_restored(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.kafka.alter_config("brokers", "1", {ALTER_LOG_DIRS_RATE: str(MB)})
    seen: set[str | None] = set()
    b.kafka.clock.listeners.append(lambda _step: seen.add(b.kafka.read_config("brokers", "1").get(
        ALTER_LOG_DIRS_RATE)) if b.kafka.futures else None)
    assert b.apply().exit_code == ExitCode.OK
    assert seen == {str(MB)} and b.kafka.read_config("brokers", "1") == {ALTER_LOG_DIRS_RATE: str(MB)}


def test_rollback_puts_the_replica_back_in_its_dir(tmp_path: Path) -> None:
    b = bed(tmp_path)
    assert b.apply().exit_code == ExitCode.OK
    outcome = b.executor().rollback(b.path, DIGEST, b.plan.cluster_id)
    assert outcome.exit_code == ExitCode.OK, outcome.reason
    assert b.where() == (d(1, 1), "-", (2, 3)) and b.settled()
    assert ALTER_LOG_DIRS_RATE not in b.kafka.read_config("brokers", "1")


def count_writes(tmp_path: Path) -> int:
    b = bed(tmp_path)
    port = MemoryCluster(b.kafka)
    assert b.apply(port).exit_code == ExitCode.OK
    return len(port.writes)


def test_resume_after_a_crash_at_every_write_ends_with_every_replica_in_its_dir(tmp_path: Path) -> None:
    writes = count_writes(tmp_path / "count")
    assert writes > 8
    for n in range(1, writes + 1):
        b = bed(tmp_path / "absent")
        writes = b.crash_then_resume(n)
        assert b.where() == (d(1, 2), d(1, 2), (2, 1)) and b.settled(), (n, writes[-3:])
        assert ALTER_LOG_DIRS_RATE not in b.kafka.read_config("brokers", "1"), (n, writes[-3:])


def test_rollback_after_a_kill_mid_move_drops_the_copy_and_keeps_the_replica_where_it_was(tmp_path: Path) -> None:
    b = bed(tmp_path, throttle=MB // 4)
    crashing = MemoryCluster(b.kafka)
    b.kafka.clock.listeners.append(lambda _step: setattr(crashing, "crashed", True)
                                   if b.kafka.futures.get((ORDERS0, 1), ("", 0))[1] > MB else None)
    with pytest.raises(Crash):
        b.apply(crashing)
    assert b.kafka.futures  # killed while the future replica copies
    outcome = b.executor().rollback(b.path, DIGEST, b.plan.cluster_id)
    assert outcome.exit_code == ExitCode.OK, outcome.reason
    assert b.where() == (d(1, 1), "-", (2, 3)) and b.settled()


def test_an_offline_dir_mid_move_is_a_health_stop_naming_broker_and_dir(tmp_path: Path) -> None:
    b = bed(tmp_path, throttle=MB // 4)
    b.kafka.clock.listeners.append(lambda _step: b.kafka.offline.add((1, d(1, 2)))
                                   if b.kafka.futures.get((ORDERS0, 1), ("", 0))[1] > MB else None)
    outcome = b.apply()
    assert outcome.exit_code == ExitCode.STOPPED
    assert outcome.reason is not None and f"health stop in batch 2: broker 1's log dir {d(1, 2)} is offline" \
        in outcome.reason


def test_a_rollback_finishes_while_the_dir_that_failed_stays_offline(tmp_path: Path) -> None:
    """The copy died with its target dir (Kafka drops the future replica), so orders-0's replica on broker 1 never
    left its own dir: the rollback has nothing to move there and finishes, the failed dir still offline. (It used to
    stop on any offline dir of a broker it touched, moving or not.)"""
    b = bed(tmp_path, throttle=MB // 4)
    b.kafka.clock.listeners.append(lambda _step: b.kafka.offline.add((1, d(1, 2)))
                                   if b.kafka.futures.get((ORDERS0, 1), ("", 0))[1] > MB else None)
    assert b.apply().exit_code == ExitCode.STOPPED
    assert b.kafka.dir_of(ORDERS0, 1) == d(1, 1) and (ORDERS0, 1) not in b.kafka.futures
    assert b.executor().rollback(b.path, DIGEST, b.plan.cluster_id).exit_code == ExitCode.OK
    assert b.kafka.dir_of(ORDERS0, 1) == d(1, 1) and (1, d(1, 2)) in b.kafka.offline


class _Through(MemoryCluster):
    """The memory cluster answering as another adapter would about what it can do."""

    can: Capabilities

    def capabilities(self, snapshot: Snapshot) -> Capabilities:
        return self.can


@pytest.mark.parametrize(("features", "words"), [
    (False, "needs the Admin API (AlterReplicaLogDirs), which ZooKeeper does not offer: reach the cluster with -b "
            "BOOTSTRAP"),
    (True, "is Kafka's (JBOD): the kops engine's brokers have one log dir each"),
])
def test_without_the_admin_api_a_plan_with_disk_moves_is_refused_in_one_line(tmp_path: Path, features: bool,
                                                                              words: str) -> None:
    b = bed(tmp_path)
    port = _Through(b.kafka)
    seeds = brokers(3)
    if features:
        seeds = tuple(replace(x, features={KIP236_QUEUE: FeatureRange(1, 1)}) for x in seeds)
    port.can = ZkCluster(None, "zk:2181").capabilities(replace(b.kafka.snapshot("zk"), brokers=seeds))  # type: ignore[arg-type]  # capabilities reads the snapshot only
    with pytest.raises(Refused) as caught:
        b.apply(port)
    line = caught.value.one_line()
    assert line.endswith(f"2 replica(s) are to go into named log dirs, and moving replicas between log dirs {words}")
    assert port.writes == []


def test_the_memory_cluster_answers_the_log_dir_calls_as_kafka_does() -> None:
    """The same function as over real Kafka 4 and 3.9 in tests/integration/test_jbod_real.py."""
    from tests.integration.test_jbod_real import LAYOUT, TOPIC, moves_between_dirs_and_places_one_a_reassignment_brings

    kafka = MemoryKafka(3)
    kafka.dirs = {b: (d(b, 1), d(b, 2)) for b in (1, 2, 3)}
    kafka.create_topic(TOPIC, LAYOUT, {})
    kafka.produce(TOPIC, MB)
    port = MemoryCluster(kafka)

    def wait(ready: Callable[[], bool], what: str) -> None:
        for _ in range(600):
            if ready():
                return
            kafka.clock.sleep(0.5)
        raise AssertionError(f"not reached: {what}")

    moves_between_dirs_and_places_one_a_reassignment_brings(port, lambda b: list(kafka.log_dirs_of(b)), wait)


def test_cancel_now_mid_copy_drops_the_copy_and_restores_the_throttle(tmp_path: Path) -> None:
    b = bed(tmp_path, throttle=MB // 4)
    controls = Controls()
    b.kafka.clock.listeners.append(lambda _step: controls.cancel_now.set()
                                   if b.kafka.futures.get((ORDERS0, 1), ("", 0))[1] > MB else None)
    outcome = Executor(MemoryCluster(b.kafka), b.events.append, controls, clock=b.kafka.clock,  # type: ignore[arg-type]  # the driven clock has Clock's three methods
                       poll_seconds=0.5).apply(b.plan, b.path, DIGEST)
    assert outcome.exit_code == ExitCode.STOPPED and outcome.reason is not None
    assert outcome.reason.startswith("batch 2 cancelled in flight: 1 log-dir move(s) dropped")
    assert not b.kafka.futures and b.kafka.dir_of(ORDERS0, 1) == d(1, 1)
    assert ALTER_LOG_DIRS_RATE not in b.kafka.read_config("brokers", "1")


def test_a_copy_that_stops_progressing_stops_the_batch_as_stalled(tmp_path: Path) -> None:
    b = bed(tmp_path, throttle=MB // 4)
    b.kafka.clock.listeners.append(lambda _step: b.kafka.stick_broker(1)
                                   if b.kafka.futures.get((ORDERS0, 1), ("", 0))[1] > MB and 1 not in b.kafka.stuck
                                   else None)
    outcome = Executor(MemoryCluster(b.kafka), b.events.append, clock=b.kafka.clock,  # type: ignore[arg-type]  # the driven clock has Clock's three methods
                       poll_seconds=0.5, stall_timeout=60.0).apply(b.plan, b.path, DIGEST)
    assert outcome.exit_code == ExitCode.STOPPED and outcome.reason is not None
    assert outcome.reason.startswith("batch 2 stalled: no log-dir move progressed for 6")
    assert f"first orders-0 on broker 1 to {d(1, 2)}" in outcome.reason


def test_a_target_dir_without_room_for_the_copy_stops_before_it_starts(tmp_path: Path) -> None:
    """Once batch 1 placed orders-1's new replica (8 MiB) in broker 1's /d2, each dir turns out to be 16 MiB: the
    disk move of orders-0 (8 MiB) into that dir would leave nothing of the 20% margin."""
    b = bed(tmp_path)

    def shrink(_step: float) -> None:
        part = b.kafka.part(ORDERS1)
        if part is not None and part.replicas == [2, 1] and not b.kafka.disks:
            b.kafka.disks = {1: 16 * MB, 2: 16 * MB, 3: 16 * MB}
    b.kafka.clock.listeners.append(shrink)
    outcome = b.apply()
    assert outcome.exit_code == ExitCode.STOPPED and outcome.reason is not None
    assert outcome.reason.startswith(f"batch 2: broker 1's log dir {d(1, 2)} has 8.0 MiB usable, needs 8.0 MiB for "
                                     f"its 1 replica(s) + 3.2 MiB margin (limit 0.8 of 16.0 MiB); free space on it")
    assert not b.kafka.futures and ALTER_LOG_DIRS_RATE not in b.kafka.read_config("brokers", "1")
