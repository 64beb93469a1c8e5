"""What a rollback undoes, decided from an execution record and a snapshot (no cluster), and the record format."""

from __future__ import annotations

import json

import pytest

from kops.executor import record as records
from kops.executor.executor import Executor, Stale
from kops.executor.record import BatchRecord, ConfigRecord, ExecutionRecord
from kops.executor.steps import expected_seconds, rollback_of
from kops.model.brokers import Broker
from kops.model.partitions import Partition, TopicPartition
from kops.model.plan import Move
from kops.model.snapshot import ControllerInfo, Snapshot
from kops.model.topics import Topic


def snapshot(replicas: dict[int, tuple[int, ...]]) -> Snapshot:
    topic = Topic("t", {p: Partition(r) for p, r in replicas.items()})
    return Snapshot("c1", ControllerInfo(1, 1), tuple(Broker(b, "localhost", 9092) for b in range(1, 7)), {"t": topic})


def forward(batches: list[tuple[str, list[Move]]], configs: list[ConfigRecord] | None = None) -> ExecutionRecord:
    return ExecutionRecord("20261122T000000Z-abc-apply", "apply", "abc", "plan.json", "c1", 0.0, {},
                           [BatchRecord(i + 1, moves, status) for i, (status, moves) in enumerate(batches)],
                           configs=configs or [], steps_done=["create:new", "add:t"])


P0 = Move("t", 0, (1, 2, 3), (4, 2, 3), 100)
P1 = Move("t", 1, (2, 3, 1), (2, 3, 4), 100)
P2 = Move("t", 2, (3, 1, 2), (3, 1, 4), 100)


def test_the_worked_example_of_the_module() -> None:
    record = forward([("done", [P0, P1]), ("cancelled", [P2]), ("pending", [Move("t", 3, (1, 2), (5, 6))])])
    undo = rollback_of(record, snapshot({0: (4, 2, 3), 1: (2, 3, 4), 2: (3, 1, 4), 3: (1, 2)}), {})
    assert [[(m.partition, m.from_replicas, m.to_replicas) for m in b.moves] for b in undo.batches] == [
        [(2, (3, 1, 4), (3, 1, 2))],
        [(0, (4, 2, 3), (1, 2, 3)), (1, (2, 3, 4), (2, 3, 1))],
    ]
    assert undo.election == [TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)]
    assert not undo.drift
    assert any("topic new was created" in note for note in undo.irreversible)
    assert len(undo.irreversible) == 2  # what was done (a creation, an addition), each once


def test_partitions_still_at_their_originals_need_nothing_and_others_are_drift() -> None:
    record = forward([("done", [P0]), ("running", [P1, P2])])
    undo = rollback_of(record, snapshot({0: (4, 2, 3), 1: (2, 3, 1), 2: (5, 1, 4)}), {})
    assert [m.partition for b in undo.batches for m in b.moves] == [0]
    assert undo.drift == ["t-2 has replicas [5, 1, 4], neither the original [3, 1, 2] nor the target [3, 1, 4]"]


def test_a_partition_back_on_its_original_set_in_another_order_gets_its_order_back() -> None:
    record = forward([("cancelled", [Move("t", 0, (1, 2), (2, 1, 3), 100)])])
    undo = rollback_of(record, snapshot({0: (2, 1)}), {})
    assert [(m.from_replicas, m.to_replicas, m.bytes, m.kind) for b in undo.batches for m in b.moves] == [
        ((2, 1), (1, 2), 0, "leader")]
    assert undo.election == [TopicPartition("t", 0)] and not undo.drift


def test_configs_come_back_only_where_the_execution_left_them() -> None:
    changed = ConfigRecord("topics", "t", before={"retention.ms": "1"}, after={"retention.ms": "2"})
    touched = ConfigRecord("topics", "u", before={}, after={"cleanup.policy": "compact"})
    record = forward([("done", [])], [changed, touched])
    undo = rollback_of(record, snapshot({}),
                       {"topics/t": {"retention.ms": "2"}, "topics/u": {"cleanup.policy": "delete"}})
    assert undo.configs == [ConfigRecord("topics", "t", before={"retention.ms": "2"}, after={"retention.ms": "1"})]
    assert undo.drift == ["config of topics/u changed since the execution set it "
                          "(cleanup.policy is 'delete', where the execution set cleanup.policy='compact')"]


def test_records_round_trip_and_refuse_garbage() -> None:
    record = forward([("done", [P0]), ("pending", [P1])], [ConfigRecord("brokers", "1", {}, {"a": "b"})])
    record.throttles_before = {"topics/t": {"leader.replication.throttled.replicas": None}}
    record.election = [TopicPartition("t", 0)]
    assert records.loads(records.dumps(record), "x") == record
    with pytest.raises(records.RecordError, match="format is \"other\", expected 'kops-execution/1'"):
        records.loads(b'{"format": "other"}', "x")
    with pytest.raises(records.RecordError, match="unreadable execution record: id is missing"):
        records.loads(b'{"format": "kops-execution/1"}', "x")
    damaged = json.loads(records.dumps(record))
    damaged["batches"][0]["moves"][0][2] = [1, 1]
    with pytest.raises(records.RecordError, match=r"batches\[0\]\.moves\[0\]\[2\] names a broker twice"):
        records.loads(json.dumps(damaged).encode(), "x")


def test_throttles_an_interrupted_batch_left_are_not_config_drift() -> None:
    """kill -9 mid-batch leaves the batch's throttles on the topic; the rollback restores them itself, so they do
    not make the topic's config look changed by someone else."""
    changed = ConfigRecord("topics", "t", before={}, after={"retention.ms": "2"})
    record = forward([("running", [P0])], [changed])
    record.throttles_written = {"topics/t": {"leader.replication.throttled.replicas": "0:1,0:2,0:3"}}
    current = {"topics/t": {"retention.ms": "2", "leader.replication.throttled.replicas": "0:1,0:2,0:3"}}
    undo = rollback_of(record, snapshot({0: (4, 2, 3)}), current)
    assert undo.drift == [] and undo.configs == [ConfigRecord("topics", "t", before={"retention.ms": "2"}, after={})]


def test_a_resume_follows_a_move_shown_mid_flight_and_refuses_one_moved_elsewhere() -> None:
    """Kafka 4's metadata can still show a just-finished move's full replica set (original and target) after
    the controller's reassignment list has dropped it: that is our move, not drift."""
    batch = BatchRecord(1, [P0, P1], "running")
    assert Executor.todo(batch, snapshot({0: (1, 2, 3), 1: (2, 3, 4)})) == [P0]  # P0 not submitted yet, P1 done
    assert Executor.todo(batch, snapshot({0: (4, 2, 3, 1), 1: (2, 3, 1, 4)})) == []  # both seen mid-flight
    with pytest.raises(Stale, match=r"1 partition\(s\) drifted: t-0 has \[5, 2, 3\], expected \[1, 2, 3\]"):
        Executor.todo(batch, snapshot({0: (5, 2, 3), 1: (2, 3, 4)}))


def test_a_batch_is_estimated_the_same_before_and_after_its_record_round_trip() -> None:
    """A record's move rows keep no leader: read back, every move's bytes out had counted on one port, and a
    resumed batch printed twice its estimate (an outside check on Kafka 3.9: 12 s, then 25 s after kill -9 and
    --resume). The two moves leave brokers 1 and 2 (their first replicas) for 4 and 5: 100 B on each port at
    10 B/s, 10 s (counted on one port, 20 s)."""
    planned = [Move("t", 0, (1, 2, 3), (4, 2, 3), 100, leader=1), Move("t", 1, (2, 3, 1), (2, 3, 5), 100, leader=2)]
    batch = BatchRecord(1, planned, estimate_seconds=None)
    record = forward([])
    record.batches = [batch]
    read_back = records.loads(records.dumps(record), "x").batches[0]
    assert [m.leader for m in read_back.moves] == [-1, -1]
    assert expected_seconds(batch, 10) == expected_seconds(read_back, 10) == 10.0
