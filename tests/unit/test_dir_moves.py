"""Replicas placed in log dirs (issue 37, docs/design/jbod.md §4): a kafka-reassign-partitions file naming
`log_dirs` becomes a plan whose new replicas carry their `to_dirs` and whose replicas that stay but change dir
are disk moves (kind `disk`, a batch of their own, undone by the rollback); the plan file carries both and
refuses what cannot be run; and the export writes them back as Kafka's tool reads them. The executor's side:
tests/unit/test_executor_log_dirs.py; on real Kafka: tests/integration/test_jbod_real.py."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from kops.errors import DocumentError
from kops.model import plan_format
from kops.model.capacity import LogDirUsage
from kops.model.dir_moves import place
from kops.model.partitions import TopicPartition
from kops.model.placement import ReplicaDir
from kops.model.plan import ALTER_LOG_DIRS_RATE, Plan
from kops.model.snapshot import Snapshot
from kops.planner.planner import plan_targets
from kops.zk_layout.codecs.reassign_tool import exported, read_reassignment_json, write_reassignment_json
from tests.builders import brokers, snapshot, topic

MB = 1024 * 1024
DIRS = tuple(LogDirUsage(b, f"/data/b{b}/d{d}", 100 * MB, 50 * MB) for b in (1, 2, 3) for d in (1, 2))
SIZES = {TopicPartition("orders", p): (p + 1) * MB for p in range(3)}


def jbod() -> Snapshot:
    """Three brokers with two dirs each; orders-P on brokers (1, 2), (2, 1), (1, 2), every replica in d1."""
    base = snapshot(brokers(3), [topic("orders", [(1, 2), (2, 1), (1, 2)])], log_dirs=DIRS)
    rows = tuple(ReplicaDir("orders", p, b, f"/data/b{b}/d1") for p in range(3) for b in (1, 2))
    return replace(base, replica_dirs=rows, replica_dirs_read=True)


FILE = {"version": 1, "partitions": [
    # a disk move alone: broker 1's replica to d2, broker 2's stays where it is
    {"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["/data/b1/d2", "/data/b2/d1"]},
    # a move to broker 3, born in its d2
    {"topic": "orders", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "/data/b3/d2"]},
    # no placement
    {"topic": "orders", "partition": 2, "replicas": [2, 3]},
]}


def imported(doc: dict[str, Any] = FILE, snap: Snapshot | None = None, throttle: int | None = 10 * MB) -> Plan:
    """As `kops plan --import-kafka` makes it."""
    snap = snap or jbod()
    entries = read_reassignment_json(json.dumps(doc), "r.json", disk_moves=True)
    moved = plan_targets(snap, {TopicPartition(e.topic, e.partition): e.replicas for e in entries}, "c",
                         sizes=SIZES, where="r.json")
    placed = {TopicPartition(e.topic, e.partition): e.placed for e in entries if e.placed}
    return place(moved, snap, placed, SIZES, throttle, float(10 * MB), "r.json", "imported")


def test_new_replicas_get_their_dirs_and_staying_ones_become_disk_moves() -> None:
    plan = imported()
    placed = {m.partition: m.to_dirs for m in plan.moves}
    assert placed == {1: (None, "/data/b3/d2"), 2: None}
    [disk] = plan.disk_moves
    assert (disk.kind, disk.topic, disk.partition, disk.broker, disk.from_dir, disk.to_dir, disk.replicas,
            disk.bytes) == ("disk", "orders", 0, 1, "/data/b1/d1", "/data/b1/d2", (1, 2), MB)
    last = plan.batches[-1]
    assert last.moves == () and last.disk_moves == (disk,) and last.index == len(plan.batches)
    assert last.throttle.brokers == {1: {ALTER_LOG_DIRS_RATE: str(10 * MB)}} and last.estimate.seconds == 0.1
    assert plan.rollback.batches[0].disk_moves == (disk.inverse(),)
    assert plan.summary.disk_moves == 1 and plan.summary.disk_bytes == MB
    assert any("disk moves" in w for w in plan.warnings)
    assert set(plan.fingerprint["topics"]) == {"orders"}  # type: ignore[arg-type]  # fingerprint values are typed object: this one is a dict


def test_a_lower_alter_log_dirs_throttle_found_is_kept_and_none_is_set_unthrottled() -> None:
    snap = replace(jbod(), broker_configs={"1": {ALTER_LOG_DIRS_RATE: str(MB)}})
    assert imported(snap=snap).batches[-1].throttle.brokers == {1: {ALTER_LOG_DIRS_RATE: str(MB)}}
    unthrottled = imported(throttle=None).batches[-1]
    assert unthrottled.throttle.brokers == {} and unthrottled.throttle.rate is None


def test_the_plan_file_carries_dirs_and_disk_moves_and_reads_back_the_same() -> None:
    plan = imported()
    data = plan_format.dumps(plan)
    again = plan_format.loads(data, "p.json")
    assert (again.batches, again.rollback) == (plan.batches, plan.rollback) and plan_format.dumps(again) == data
    assert (again.summary.disk_moves, again.summary.disk_bytes) == (1, MB)
    doc = json.loads(data)
    assert doc["batches"][-1]["disk_moves"][0]["kind"] == "disk"
    assert "to_dirs" not in json.dumps(doc["rollback"])  # the way back places nothing


def resealed(doc: dict[str, Any]) -> bytes:
    doc["seal"] = plan_format.seal(doc)
    return json.dumps(doc).encode()


def refused(doc: dict[str, Any]) -> str:
    with pytest.raises(DocumentError) as caught:
        plan_format.loads(resealed(doc), "p.json")
    return caught.value.one_line()


def test_a_plan_file_with_dirs_that_cannot_be_run_is_refused_naming_the_field() -> None:
    good = json.loads(plan_format.dumps(imported()))
    move = next(i for i, m in enumerate(good["batches"][0]["moves"]) if "to_dirs" in m)
    cases = [
        (("batches", 0, "moves", move, "to_dirs"), ["data/b2/d1", None], "absolute path"),
        (("batches", 0, "moves", move, "to_dirs"), ["/data/b2/d2", None], "does not add"),
        (("batches", 0, "moves", move, "to_dirs"), [None], "1 entries for 2 replicas"),
        (("batches", -1, "disk_moves", 0, "to_dir"), "/data/b1/d1", "the dir the replica is in already"),
        (("batches", -1, "disk_moves", 0, "from_dir"), "d1", "absolute path"),
        (("batches", -1, "disk_moves", 0, "broker"), 3, "holds no replica"),
        (("rollback", "batches", 0, "disk_moves", 0, "to_dir"), "/data/b1/d9", "do not undo exactly the plan's disk"),
        (("summary", "disk_bytes"), 7, "summary.disk_moves"),
    ]
    for path, value, words in cases:
        doc = json.loads(json.dumps(good))
        at: Any = doc
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value
        assert words in refused(doc), (path, value)


def test_a_dir_the_broker_lacks_or_a_placement_not_read_is_refused_on_import() -> None:
    doc = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2],
                                         "log_dirs": ["/data/b9/d1", "any"]}]}
    with pytest.raises(DocumentError, match="log dir /data/b9/d1 on broker 1, which has /data/b1/d1, /data/b1/d2$"):
        imported(doc)
    through_zookeeper = replace(jbod(), replica_dirs=(), replica_dirs_read=False)
    with pytest.raises(DocumentError) as caught:
        imported(snap=through_zookeeper)
    assert "which dir holds it now is not known" in caught.value.one_line()
    assert "plan it with -b BOOTSTRAP" in caught.value.one_line()


def test_a_replica_already_in_the_dir_named_is_no_move() -> None:
    doc = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2],
                                         "log_dirs": ["/data/b1/d1", "/data/b2/d1"]}]}
    plan = imported(doc)
    assert plan.disk_moves == [] and not plan.batches


def test_the_export_writes_the_dirs_back_as_kafka_s_tool_reads_them() -> None:
    plan = imported()
    entries = exported(plan)
    assert [(e.partition, e.replicas, e.log_dirs) for e in entries] == [
        (0, (1, 2), ("/data/b1/d2", "any")),  # the disk move: replicas unchanged, the tool only alters the dir
        (1, (2, 3), ("any", "/data/b3/d2")),
        (2, (2, 3), None),
    ]
    back = read_reassignment_json(write_reassignment_json(entries), "out.json", disk_moves=True)
    assert [e.placed for e in back] == [[(1, "/data/b1/d2")], [(3, "/data/b3/d2")], []]
