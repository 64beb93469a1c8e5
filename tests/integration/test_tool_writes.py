"""What Kafka's tools write, written by kops: checked znode by znode on a real ZooKeeper."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kops.lab.sample import sample_snapshot
from kops.lab.snapshot_writer import write_snapshot
from kops.model.partitions import TopicPartition
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.codecs.topics import decode_topic, encode_topic
from kops.zk_layout.reader import read_snapshot


def _notifications(zk: ZkClient) -> list[dict]:
    names = zk.children(paths.CONFIG_CHANGES) or []
    return [json.loads(zk.get(f"{paths.CONFIG_CHANGES}/{n}").data) for n in names]


def test_create_topic_writes_config_then_assignment_without_notification(zk: ZkClient) -> None:
    for path in paths.PERSISTENT_PATHS:
        zk.ensure_path(path)
    tool_writes.create_topic(zk, "events", {0: (1, 2), 1: (2, 1)}, {"retention.ms": "1000"})
    assert json.loads(zk.get("/config/topics/events").data) == {"version": 1, "config": {"retention.ms": "1000"}}
    assert json.loads(zk.get("/brokers/topics/events").data) == {
        "version": 3, "partitions": {"0": [1, 2], "1": [2, 1]}, "adding_replicas": {}, "removing_replicas": {}
    }
    assert _notifications(zk) == []
    with pytest.raises(tool_writes.AdminRefused, match="already exists"):
        tool_writes.create_topic(zk, "events", {0: (1,)})
    for bad in ("", "..", "a" * 250, "bad name"):
        with pytest.raises(tool_writes.AdminRefused):
            tool_writes.create_topic(zk, bad, {0: (1,)})
    with pytest.raises(tool_writes.AdminRefused, match="same replication factor"):
        tool_writes.create_topic(zk, "uneven", {0: (1, 2), 1: (1,)})


def test_alter_config_is_read_modify_write_with_v2_notification(zk: ZkClient) -> None:
    write_snapshot(zk, sample_snapshot())
    before = tool_writes.alter_config(zk, "topics", "clicks",
                                      {"follower.replication.throttled.replicas": "0:2", "x": None})
    assert before == {"leader.replication.throttled.replicas": "*"}
    assert json.loads(zk.get("/config/topics/clicks").data)["config"] == {
        "leader.replication.throttled.replicas": "*",
        "follower.replication.throttled.replicas": "0:2",
    }
    tool_writes.alter_config(zk, "brokers", "1", {"leader.replication.throttled.rate": None})
    assert _notifications(zk) == [
        {"version": 2, "entity_path": "topics/clicks"},
        {"version": 2, "entity_path": "brokers/1"},
    ]
    names = zk.children(paths.CONFIG_CHANGES)
    assert names == ["config_change_0000000000", "config_change_0000000001"]


def test_add_partitions_preserves_topic_id_and_in_flight_state(zk: ZkClient) -> None:
    write_snapshot(zk, sample_snapshot())
    tool_writes.add_partitions(zk, "payments", {3: (1, 2, 3)})
    snap = read_snapshot(zk)
    payments = snap.topics["payments"]
    assert payments.topic_id == "3vVbRSnQT0Ky1cQm3C4nWQ"
    assert payments.partitions[3].replicas == (1, 2, 3) and payments.partitions[1].adding == (4, 5, 6)
    with pytest.raises(tool_writes.AdminRefused, match="numbered from 4"):
        tool_writes.add_partitions(zk, "payments", {9: (1, 2, 3)})


def test_marking_partitions_for_deletion_follows_the_kip253_rules(zk: ZkClient) -> None:
    tool_writes.create_topic(zk, "keyed", {p: (1, 2) for p in range(6)})
    node = zk.get(paths.topic("keyed"))
    counted = decode_topic(node.data, "t")
    zk.set(paths.topic("keyed"), encode_topic(replace(counted, initial_partition_count=3, undeleted_partition_count=6)))
    with pytest.raises(tool_writes.AdminRefused, match="stay at or above initial_partition_count 3, got 2"):
        tool_writes.mark_partitions_for_deletion(zk, "keyed", 2)
    with pytest.raises(tool_writes.AdminRefused, match="must be lowered from 6"):
        tool_writes.mark_partitions_for_deletion(zk, "keyed", 6)
    tool_writes.mark_partitions_for_deletion(zk, "keyed", 4)
    after = decode_topic(zk.get(paths.topic("keyed")).data, "t")
    assert (after.initial_partition_count, after.undeleted_partition_count) == (3, 4)
    assert after.replicas == counted.replicas  # the controller removes partitions once drained, not the tool
    with pytest.raises(tool_writes.AdminRefused, match="partitions 4..5 are marked for deletion"):
        tool_writes.add_partitions(zk, "keyed", {6: (1, 2)})


def test_reassignment_and_election_refuse_while_in_progress(zk: ZkClient) -> None:
    write_snapshot(zk, sample_snapshot())  # has both znodes already
    with pytest.raises(tool_writes.AdminRefused, match="already in progress"):
        tool_writes.start_reassignment(zk, [ReassignmentTarget("orders", 0, (2, 3, 4))])
    with pytest.raises(tool_writes.AdminRefused, match="already in progress"):
        tool_writes.request_preferred_election(zk, [TopicPartition("orders", 0)])
    zk.delete(paths.REASSIGN_PARTITIONS)
    tool_writes.start_reassignment(zk, [ReassignmentTarget("orders", 0, (2, 3, 4))])
    assert zk.get(paths.REASSIGN_PARTITIONS).data == (
        b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3,4]}]}'
    )
    tool_writes.delete_topic(zk, "orders")
    tool_writes.delete_topic(zk, "orders")  # idempotent, as a queued deletion
    assert "orders" in read_snapshot(zk).pending_deletions
