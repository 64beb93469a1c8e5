"""The kops-snapshot/1 file: deterministic bytes, lossless round trip, clear errors."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kops.errors import DocumentError
from kops.lab.sample import sample_snapshot
from kops.model import snapshot_format
from kops.model.capacity import LogDirUsage
from kops.model.partitions import Partition, PartitionState, TopicPartition
from kops.model.snapshot import EligibleLeaders, Problem, Snapshot
from kops.model.topics import Topic


def test_round_trip_is_lossless_and_deterministic() -> None:
    snap = sample_snapshot()
    data = snapshot_format.dumps(snap)
    back = snapshot_format.loads(data, "snap.json")
    assert back == snap
    assert snapshot_format.dumps(back) == data


def test_document_has_the_documented_keys() -> None:
    doc = snapshot_format.to_document(sample_snapshot())
    assert doc["format"] == "kops-snapshot/1"
    for key in ("cluster_id", "controller", "brokers", "topics", "broker_configs", "reassigning",
                "pending_deletions", "migration"):
        assert key in doc
    assert set(doc["brokers"][0]) >= {"id", "rack", "host", "port", "endpoints", "features"}
    part = doc["topics"]["payments"]["partitions"]["1"]
    assert set(part) >= {"replicas", "adding", "removing", "leader", "leader_epoch", "isr"}
    assert doc["reassigning"][0]["topic"] == "payments" and doc["reassigning"][0]["target"] == [4, 5, 6]
    assert doc["broker_configs"]["<default>"] == {"log.cleaner.threads": "2"}
    assert doc["summary"]["offline"] == 1


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(format="kops-snapshot/9"), "format"),
        (lambda d: d["topics"]["orders"]["partitions"]["0"].update(replicas="1,2"),
         "topics.orders.partitions.0.replicas"),
        (lambda d: d["brokers"].append(dict(d["brokers"][0])), "twice"),
        (lambda d: d["topics"]["payments"]["partitions"]["1"].update(adding=[9]), "not in replicas"),
    ],
)
def test_bad_documents_name_the_field(mutate, message: str) -> None:
    doc = json.loads(snapshot_format.dumps(sample_snapshot()))
    mutate(doc)
    with pytest.raises(DocumentError) as info:
        snapshot_format.loads(json.dumps(doc), "snap.json")
    assert info.value.where == "snap.json" and message in info.value.one_line()


@pytest.mark.parametrize("data", [b"", b"\x00\x01", b"[]", b"{"])
def test_garbage_is_a_document_error(data: bytes) -> None:
    with pytest.raises(DocumentError):
        snapshot_format.loads(data, "snap.json")


def _unusual() -> Snapshot:
    """What the sample lacks: a partition with no state, KIP-704 and KIP-253 state, fenced brokers, log dirs,
    a problem and the KIP-253 partition counts, listed out of order where the file sorts them."""
    base = sample_snapshot()
    kip253 = PartitionState(leader=1, leader_epoch=7, isr=(1, 2), controller_epoch=4, leader_recovery_state=1,
                            leader_epoch_after_creation={10: 3, 2: 1}, leader_epoch_before_deletion={0: 5})
    topic = Topic("grown", {1: Partition((1, 2), state=kip253), 0: Partition((2, 1))}, initial_partition_count=1,
                  undeleted_partition_count=2)
    return replace(base, brokers=tuple(reversed(base.brokers)), topics={**base.topics, "grown": topic},
                   fenced=(9, 8), problems=(Problem("/brokers/topics/x", "not JSON"),),
                   log_dirs=(LogDirUsage(2, "/data", 100, 40), LogDirUsage(1, "/b", None, None, "offline"),
                             LogDirUsage(1, "/a", 100, 50)))


def test_a_partition_state_is_written_flat_and_read_back() -> None:
    data = snapshot_format.dumps(_unusual())
    doc = json.loads(data)
    grown = doc["topics"]["grown"]
    assert grown["partitions"]["0"] == {"replicas": [2, 1], "adding": [], "removing": [], "leader": None,
                                        "leader_epoch": None, "isr": None, "controller_epoch": None}
    assert grown["partitions"]["1"]["leader_recovery_state"] == 1
    assert grown["partitions"]["1"]["leader_epoch_after_creation"] == {"2": 1, "10": 3}
    assert grown["initial_partition_count"] == 1 and "initial_partition_count" not in doc["topics"]["orders"]
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3, 4, 5, 6] and doc["fenced_brokers"] == [8, 9]
    assert [(d["broker"], d["path"]) for d in doc["log_dirs"]] == [(1, "/a"), (1, "/b"), (2, "/data")]
    assert doc["complete"] is False and doc["summary"]["topics"] == 6
    back = snapshot_format.loads(data, "snap.json")
    assert back.topics["grown"] == _unusual().topics["grown"] and back.topics["grown"].name == "grown"
    assert back.brokers == tuple(sorted(_unusual().brokers, key=lambda b: b.id)) and back.fenced == (8, 9)
    assert back.log_dirs == tuple(sorted(_unusual().log_dirs)) and back.problems == _unusual().problems
    assert snapshot_format.dumps(back) == data


def test_a_leader_without_a_controller_epoch_reads_as_epoch_0() -> None:
    doc = json.loads(snapshot_format.dumps(sample_snapshot()))
    doc["topics"]["orders"]["partitions"]["0"]["controller_epoch"] = None
    state = snapshot_format.loads(json.dumps(doc), "snap.json").topics["orders"].partitions[0].state
    assert state is not None and state.controller_epoch == 0 and state.leader_epoch_after_creation == {}


def test_eligible_leader_replicas_are_written_sorted_and_read_back_and_older_files_have_none() -> None:
    """KIP-966's eligible leader replicas of partitions without a live leader (read through the Admin API): kept
    in the file, sorted; a file written before them (or with none read) has no key and reads as none."""
    older = snapshot_format.dumps(sample_snapshot())
    assert b"eligible_leaders" not in older and snapshot_format.loads(older, "snap.json").eligible_leaders == ()
    read = (EligibleLeaders("payments", 1, (2,), (2,)), EligibleLeaders("orders", 0))
    data = snapshot_format.dumps(replace(sample_snapshot(), eligible_leaders=read))
    assert json.loads(data)["eligible_leaders"] == [
        {"topic": "orders", "partition": 0, "replicas": [], "last_known": []},
        {"topic": "payments", "partition": 1, "replicas": [2], "last_known": [2]}]
    back = snapshot_format.loads(data, "snap.json")
    assert back.eligible_leaders == tuple(sorted(read)) and snapshot_format.dumps(back) == data
    assert back.eligible(TopicPartition("payments", 1)) == read[0]
    assert back.eligible(TopicPartition("orders", 1)) is None  # not read
