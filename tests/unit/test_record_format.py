"""The kops-execution/1 record: derived from its declaration both ways, it keeps the bytes kops wrote before
(moves and the election as rows, `edited_plan_sections` and `rolling` only when there is something to say),
reads back to the same record, and a damaged one is one line naming the JSON location."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kops.executor import record as records
from kops.executor.record import DONE, RUNNING, STOPPED, BatchRecord, ConfigRecord, ExecutionRecord, RecordError
from kops.model.partitions import TopicPartition
from kops.model.plan import Move, Rolling

# what the hand-written converters the declaration replaced wrote for `full()`: the bytes must not change
WRITTEN = (b'{"batches":[{"estimate_seconds":12.5,"finished_at":1700000002.0,"index":1,"moves":[["orders",0,[1,2,3],['
           b'4,2,3],1024],["orders",1,[2,3],[3,2],0]],"progress_at":1700000001.5,"started_at":1700000001.0,"status":"'
           b'done"},{"estimate_seconds":null,"finished_at":null,"index":2,"moves":[["pay",3,[5],[6],7]],"progress_at"'
           b':null,"started_at":1700000003.0,"status":"running"}],"cluster_id":"c1","configs":[{"after":{"retention.m'
           b's":"2"},"before":{"retention.ms":"1"},"entity":"orders","entity_type":"topics"}],"edited_plan_sections":'
           b'["batches","summary"],"election":[["orders",0],["pay",3]],"election_done":true,"format":"kops-execution/'
           b'1","holder":{"host":"ops-1","pid":42,"plan":null,"started":1.5,"user":"ops"},"id":"exec-2","irreversible'
           b'":["created topic new"],"kind":"rollback","of":"exec-1","plan_digest":"dddddddd","plan_path":"plans/p.js'
           b'on","rate":10000000,"rolling":{"max_moves":5,"max_moves_per_broker":2},"started_at":1700000000.25,"statu'
           b's":"stopped","steps_done":["create:new","config:topics/orders"],"stop_reason":"stall: orders-0","throttl'
           b'es_before":{"topics/orders":{"follower.replication.throttled.replicas":"*","leader.replication.throttled'
           b'.replicas":null}},"throttles_written":{"topics/orders":{"leader.replication.throttled.replicas":"0:1"}},'
           b'"updated_at":1700000004.0}')


def full() -> ExecutionRecord:
    """A stopped rollback with every key filled: configs, throttles found absent, rolling caps, edited sections."""
    return ExecutionRecord(
        id="exec-2", kind="rollback", plan_digest="d" * 8, plan_path="plans/p.json", cluster_id="c1",
        started_at=1700000000.25, holder={"host": "ops-1", "pid": 42, "user": "ops", "started": 1.5, "plan": None},
        batches=[BatchRecord(1, [Move("orders", 0, (1, 2, 3), (4, 2, 3), 1024), Move("orders", 1, (2, 3), (3, 2), 0)],
                             DONE, 12.5, 1700000001.0, 1700000002.0, 1700000001.5),
                 BatchRecord(2, [Move("pay", 3, (5,), (6,), 7)], RUNNING, None, 1700000003.0)],
        rate=10_000_000, of="exec-1", status=STOPPED, stop_reason="stall: orders-0", updated_at=1700000004.0,
        steps_done=["create:new", "config:topics/orders"],
        configs=[ConfigRecord("topics", "orders", {"retention.ms": "1"}, {"retention.ms": "2"})],
        throttles_before={"topics/orders": {"leader.replication.throttled.replicas": None,
                                            "follower.replication.throttled.replicas": "*"}},
        throttles_written={"topics/orders": {"leader.replication.throttled.replicas": "0:1"}},
        election=[TopicPartition("orders", 0), TopicPartition("pay", 3)], election_done=True,
        irreversible=["created topic new"], edited=["batches", "summary"], rolling=Rolling(2, 5))


def bare() -> ExecutionRecord:
    """An apply just started: no batch begun, unthrottled, nothing optional."""
    return ExecutionRecord(id="exec-1", kind="apply", plan_digest="d", plan_path="p.json", cluster_id=None,
                           started_at=0.0, holder={}, batches=[BatchRecord(1, [Move("t", 0, (1,), (2,))])])


def test_the_full_record_keeps_its_bytes_and_reads_back_the_same() -> None:
    assert records.dumps(full()) == WRITTEN
    back = records.loads(WRITTEN, "r.json")
    assert back == full()
    assert isinstance(back.election[0], TopicPartition) and back.batches[0].moves[0].from_replicas == (1, 2, 3)


def test_a_bare_record_round_trips_and_leaves_the_optional_keys_out() -> None:
    data = records.dumps(bare())
    doc = json.loads(data)
    assert "edited_plan_sections" not in doc and "rolling" not in doc
    assert doc["batches"][0]["moves"] == [["t", 0, [1], [2], 0]] and doc["rate"] is None
    assert records.loads(data, "r.json") == bare()
    assert records.dumps(records.loads(data, "r.json")) == data


def test_a_record_with_no_edited_sections_reads_them_as_none() -> None:
    doc = json.loads(records.dumps(bare()))
    doc["edited_plan_sections"] = None
    assert records.loads(json.dumps(doc).encode(), "r.json").edited == []


def _damaged(change: Any) -> str:
    doc = json.loads(WRITTEN)
    change(doc)
    with pytest.raises(RecordError) as caught:
        records.loads(json.dumps(doc).encode(), "r.json")
    line = caught.value.one_line()
    assert line.startswith("r.json: unreadable execution record: ") and "\n" not in line
    return line


@pytest.mark.parametrize("change, words", [
    (lambda d: d["batches"][0]["moves"][0].__setitem__(2, []), "batches[0].moves[0][2] is empty"),
    (lambda d: d["batches"][0]["moves"][0].pop(), "batches[0].moves[0]"),
    (lambda d: d["election"].append(["orders", -1]), "election[2][1] is out of range"),
    (lambda d: d["batches"].append(d["batches"][0]), "batches holds batch 1 twice"),
    (lambda d: d["rolling"].update(max_moves=0), "rolling.max_moves"),
    (lambda d: d.update(kind="undo"), "kind must be"),
    (lambda d: d["holder"].update(host=[1]), "record: holder.host must be a JSON string, got [1]"),  # no union branch
])
def test_a_damaged_record_is_one_line_naming_the_location(change: Any, words: str) -> None:
    assert words in _damaged(change)
