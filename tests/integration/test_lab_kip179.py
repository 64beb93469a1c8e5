"""KIP-179 in the lab (seed 001): AlterTopics through a broker and ReplicaStatus from the leaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.kip179.client import Kip179Client
from kops.kip179.protocol import (
    REPLICA_STATUS,
    AlteredTopic,
    ErrorCode,
    decode_replica_statuses,
    encode_replica_status_request,
)
from kops.lab import traffic
from kops.lab.controller.channel import call_registered_broker
from kops.model.features import KIP179_ADMIN
from kops.model.partitions import TopicPartition
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.reader import read_snapshot
from tests.labtools import configs_applied, produced, replica, replicas, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024


def errors(results: list) -> dict[str, ErrorCode]:
    return {r.topic: r.error for r in results}


def test_alter_topics_performs_changes_through_the_controller_and_answers_the_kips_errors(
        tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=3) as _lab, ZkClient(ZkSettings(zk_connect)) as zk, \
            Kip179Client(zk) as api:
        assert KIP179_ADMIN in read_snapshot(zk).cluster_features() and api.supported()
        tool_writes.create_topic(zk, "grow", {0: (1, 2), 1: (2, 3)})
        tool_writes.create_topic(zk, "wide", {0: (1,), 1: (2,)})
        wait_until(lambda: state(zk, "wide", 1) and state(zk, "grow", 1), what="topics created")

        # validate_only: accepted, nothing written
        assert errors(api.alter_topics([AlteredTopic("grow", num_partitions=4)],
                                       validate_only=True)) == {"grow": ErrorCode.NONE}
        assert sorted(replicas(zk, "grow")) == [0, 1]

        # partition count: written to the topic znode, created by the controller before the answer (timeout)
        assert errors(api.alter_topics([AlteredTopic("grow", num_partitions=4)],
                                       timeout_ms=10_000)) == {"grow": ErrorCode.NONE}
        assert sorted(replicas(zk, "grow")) == [0, 1, 2, 3] and state(zk, "grow", 3) is not None

        # replication factor: a reassignment the controller completes
        assert errors(api.alter_topics([AlteredTopic("wide", replication_factor=2)],
                                       timeout_ms=10_000)) == {"wide": ErrorCode.NONE}
        wait_until(lambda: all(len(r) == 2 for r in replicas(zk, "wide").values())
                   and zk.exists(paths.REASSIGN_PARTITIONS) is None, what="replication factor raised")

        # explicit assignment
        assert errors(api.alter_topics([AlteredTopic("grow", assignment={0: (3, 1)})],
                                       timeout_ms=10_000)) == {"grow": ErrorCode.NONE}
        wait_until(lambda: replicas(zk, "grow")[0] == (3, 1), what="partition moved")

        # errors, per topic, in one request; the valid entry still happens
        results = errors(api.alter_topics([
            AlteredTopic("missing", num_partitions=3),
            AlteredTopic("grow", num_partitions=2),
            AlteredTopic("wide", replication_factor=9),
        ]))
        assert results == {"missing": ErrorCode.INVALID_TOPIC_EXCEPTION, "grow": ErrorCode.INVALID_PARTITIONS,
                           "wide": ErrorCode.INVALID_REPLICATION_FACTOR}
        assert errors(api.alter_topics([AlteredTopic("grow", assignment={0: (1, 7)})])) \
            == {"grow": ErrorCode.UNKNOWN_MEMBER_ID}
        assert errors(api.alter_topics([AlteredTopic("grow", assignment={9: (1, 2)})])) \
            == {"grow": ErrorCode.INVALID_REPLICA_ASSIGNMENT}
        assert errors(api.alter_topics([AlteredTopic("grow", num_partitions=5),
                                        AlteredTopic("grow", num_partitions=6)])) \
            == {"grow": ErrorCode.INVALID_REQUEST}

        # only one reassignment at a time
        traffic.produce(zk, "grow", 40 * MB, 1)
        tool_writes.alter_config(zk, "brokers", "1", {"follower.replication.throttled.rate": str(MB)})
        tool_writes.alter_config(zk, "topics", "grow", {"follower.replication.throttled.replicas": "*"})
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("grow", 1, (2, 3, 1))])
        assert errors(api.alter_topics([AlteredTopic("wide", assignment={0: (2, 3)})])) \
            == {"wide": ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS}


def test_replica_status_reports_lag_that_shrinks_as_a_follower_catches_up(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, time_scale=10.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk, Kip179Client(zk) as api:
        tool_writes.create_topic(zk, "lag", {0: (1, 2)})
        wait_until(lambda: state(zk, "lag", 0), what="topic created")
        wait_until(lambda: produced(zk, "lag", 20 * MB, 0), what="produce")
        # the leader's high watermark at the end first: a new replica at or above it joins the ISR at once
        wait_until(lambda: (r := replica(zk, 2, "lag", 0)) and r["end"] == 20 * MB, what="follower 2 caught up")
        # 1 MB/s simulated
        tool_writes.alter_config(zk, "brokers", "3", {"follower.replication.throttled.rate": str(MB)})
        tool_writes.alter_config(zk, "topics", "lag", {"follower.replication.throttled.replicas": "*"})
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("lag", 0, (1, 2, 3))])
        tp = TopicPartition("lag", 0)

        def lag_of_3() -> int:
            s = api.replica_status([(tp, 3)])[0]
            return s.lag_bytes if s.error is ErrorCode.NONE and s.status_time_ms > 0 else -1

        first = wait_until(lambda: (lag := lag_of_3()) > 0 and lag, what="broker 3 fetching")
        later = wait_until(lambda: 0 < (lag := lag_of_3()) < first and lag, what="lag shrinking")
        status = api.replica_status([(tp, 3)])[0]
        assert status.lag == -(-status.lag_bytes // 1024)  # messages: the lab's 1 KiB records
        assert later < first
        leader, follower = api.replica_status([(tp, 1), (tp, 2)])
        assert leader.lag_bytes == 0 and follower.error is ErrorCode.NONE and follower.lag_bytes < 20 * MB

        # the KIP's errors
        unknown_topic, bad_partition, unknown_broker = api.replica_status(
            [(TopicPartition("nope", 0), 1), (TopicPartition("lag", 5), 1), (tp, 42)])
        assert unknown_topic.error is ErrorCode.INVALID_TOPIC_EXCEPTION
        assert bad_partition.error is ErrorCode.INVALID_PARTITIONS
        assert unknown_broker.error is ErrorCode.UNKNOWN_MEMBER_ID
        tool_writes.create_topic(zk, "solo", {0: (2,)})
        wait_until(lambda: state(zk, "solo", 0), what="solo created")
        assert api.replica_status([(TopicPartition("solo", 0), 1)])[0].error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # asked of a broker that does not lead: NOT_LEADER_OR_FOLLOWER (the client re-asks the leader itself)
        reply = call_registered_broker(zk, 2, REPLICA_STATUS, encode_replica_status_request([(tp, 3)]))
        assert decode_replica_statuses(reply)[0].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
