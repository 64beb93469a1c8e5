"""KIP-253 in the lab (seed 003): counts, expansion with epochs, shrink, drain, removal, expansion again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kops.errors import KopsError
from kops.lab import traffic
from kops.model.features import KIP253_PARTITION_DELETION
from kops.model.topics import TopicAssignment
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.topics import decode_topic, encode_topic
from kops.zk_layout.reader import read_snapshot
from tests.labtools import broker_status, replica, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024


def topic(zk: ZkClient, name: str) -> TopicAssignment:
    return decode_topic(zk.get(paths.topic(name)).data, "t")


def end(zk: ZkClient, name: str, p: int) -> int:
    leader = state(zk, name, p).leader
    row = replica(zk, leader, name, p)
    return row["end"] if row else -1


def test_shrink_drain_remove_and_expand_again_with_the_epoch_maps(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, time_scale=60.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        assert KIP253_PARTITION_DELETION in read_snapshot(zk).cluster_features()
        tool_writes.create_topic(zk, "keyed", {0: (1, 2), 1: (2, 3)})
        wait_until(lambda: (t := topic(zk, "keyed")).initial_partition_count == 2
                   and t.undeleted_partition_count == 2, what="counts written at creation")
        epochs = {p: state(zk, "keyed", p).leader_epoch for p in (0, 1)}

        # expansion: existing epochs bumped, new partitions record the epochs before the bump
        tool_writes.add_partitions(zk, "keyed", {2: (3, 1), 3: (1, 3)})
        wait_until(lambda: topic(zk, "keyed").undeleted_partition_count == 4, what="expansion counted")
        wait_until(lambda: state(zk, "keyed", 3) is not None, what="new partitions created")
        assert {p: state(zk, "keyed", p).leader_epoch for p in (0, 1)} == {p: e + 1 for p, e in epochs.items()}
        for p in (2, 3):
            assert state(zk, "keyed", p).leader_epoch_after_creation == epochs
        assert topic(zk, "keyed").initial_partition_count == 2

        # keyed ingest reaches every partition, the split ones and the new ones
        traffic.set_ingest(zk, "keyed", 4 * MB)
        wait_until(lambda: all(end(zk, "keyed", p) > 0 for p in range(4)), what="ingest on all partitions")

        # shrink: partition 3 is marked, 0..2 bumped, ingest to 3 stops, producing to it is refused
        before = {p: state(zk, "keyed", p).leader_epoch for p in range(3)}
        tool_writes.mark_partitions_for_deletion(zk, "keyed", 3)
        wait_until(lambda: state(zk, "keyed", 3).leader_epoch_before_deletion == before, what="partition 3 marked")
        wait_until(lambda: {p: state(zk, "keyed", p).leader_epoch for p in range(3)}
                   == {p: e + 1 for p, e in before.items()}, what="undeleted partitions' epochs bumped")
        leader = state(zk, "keyed", 3).leader
        wait_until(lambda: broker_status(zk, leader)["topic_counts"].get("keyed", [0, 0])[1] == 3,
                   what=f"broker {leader}, leading partition 3, learning it is marked (undeleted count 3)")
        frozen, growing = end(zk, "keyed", 3), end(zk, "keyed", 0)
        time.sleep(1.0)
        assert end(zk, "keyed", 3) == frozen and end(zk, "keyed", 0) > growing
        with pytest.raises(KopsError, match="marked for deletion"):
            traffic.produce(zk, "keyed", 1000, partition=3)

        # expansion while partition 3 is marked: the tool refuses, and so does the controller
        with pytest.raises(tool_writes.AdminRefused, match="marked"):
            tool_writes.add_partitions(zk, "keyed", {4: (2, 3)})
        node = zk.get(paths.topic("keyed"))
        forced = topic(zk, "keyed")
        forced.replicas[4] = (2, 3)
        zk.set(paths.topic("keyed"), encode_topic(forced), node.stat.version)
        wait_until(lambda: 4 not in topic(zk, "keyed").replicas, what="forced expansion rolled back")
        assert state(zk, "keyed", 4) is None

        # drain: retention empties partition 3 (no new data), then the controller removes it
        tool_writes.alter_config(zk, "topics", "keyed", {"retention.ms": "120000"})  # 2 simulated minutes
        wait_until(lambda: sorted(topic(zk, "keyed").replicas) == [0, 1, 2], timeout=60, what="partition 3 removed")
        assert zk.exists(paths.partition("keyed", 3)) is None
        wait_until(lambda: all(replica(zk, b, "keyed", 3) is None for b in (1, 3)), what="its replicas deleted")
        assert topic(zk, "keyed").undeleted_partition_count == 3

        # expansion again: the new partition 3 records the epochs of 0..2
        epochs = {p: state(zk, "keyed", p).leader_epoch for p in range(3)}
        tool_writes.add_partitions(zk, "keyed", {3: (2, 1)})
        wait_until(lambda: (s := state(zk, "keyed", 3)) is not None and s.leader_epoch_after_creation == epochs,
                   what="new partition with its epochs after creation")
        assert not state(zk, "keyed", 3).leader_epoch_before_deletion
        assert topic(zk, "keyed").undeleted_partition_count == 4
        wait_until(lambda: end(zk, "keyed", 3) > 0, what="ingest reaches the new partition")
