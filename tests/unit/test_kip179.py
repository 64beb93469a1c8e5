"""KIP-179 without a cluster: what AlterTopics decides for each entry, and the wire format."""

from __future__ import annotations

import pytest

from kops.kip179.protocol import (
    AlteredTopic,
    ErrorCode,
    ProtocolError,
    ReplicaStatus,
    TopicResult,
    decode_alter_topics,
    decode_replica_status_request,
    decode_replica_statuses,
    decode_topic_results,
    encode_alter_topics,
    encode_replica_status_request,
    encode_replica_statuses,
    encode_topic_results,
    lag_messages,
)
from kops.lab.broker.alteration import Alteration, decide
from kops.model.partitions import TopicPartition
from kops.model.topics import TopicAssignment

LIVE = {1, 2, 3, 4}
T = TopicAssignment({0: (1, 2), 1: (2, 3), 2: (3, 1)})


def error_of(request: AlteredTopic, current: TopicAssignment | None = T, busy: bool = False) -> ErrorCode:
    result = decide(request, current, LIVE, LIVE, busy)
    assert isinstance(result, TopicResult), result
    return result.error


def test_partition_count_increase_places_new_partitions_round_robin_with_the_topic_rf() -> None:
    result = decide(AlteredTopic("t", num_partitions=5), T, LIVE, LIVE, False)
    assert result == Alteration("t", new_partitions={3: (4, 1), 4: (1, 2)})
    assert decide(AlteredTopic("t", num_partitions=3), T, LIVE, LIVE, False) == Alteration("t")  # unchanged


def test_partition_count_errors() -> None:
    assert error_of(AlteredTopic("t", num_partitions=2)) is ErrorCode.INVALID_PARTITIONS
    assert error_of(AlteredTopic("t", num_partitions=0)) is ErrorCode.INVALID_PARTITIONS
    marked = TopicAssignment(T.replicas, initial_partition_count=2, undeleted_partition_count=2)
    assert error_of(AlteredTopic("t", num_partitions=4), marked) is ErrorCode.INVALID_PARTITIONS
    wide = TopicAssignment({0: (1, 2, 3, 4, 5)})
    assert error_of(AlteredTopic("t", num_partitions=2), wide) is ErrorCode.INVALID_REPLICATION_FACTOR


def test_replication_factor_up_adds_least_loaded_brokers_and_down_keeps_the_first_replicas() -> None:
    up = decide(AlteredTopic("t", replication_factor=3), T, LIVE, LIVE, False)
    assert up == Alteration("t", targets={0: (1, 2, 4), 1: (2, 3, 4), 2: (3, 1, 2)})  # 4 twice, then the tie to 2
    assert isinstance(up, Alteration)
    counts = {b: sum(b in r for r in up.targets.values()) for b in LIVE}
    assert max(counts.values()) - min(counts.values()) <= 1  # 9 replicas over 4 brokers: 3,2,2,2
    down = decide(AlteredTopic("t", replication_factor=1), T, LIVE, LIVE, False)
    assert down == Alteration("t", targets={0: (1,), 1: (2,), 2: (3,)})
    assert error_of(AlteredTopic("t", replication_factor=5)) is ErrorCode.INVALID_REPLICATION_FACTOR
    assert error_of(AlteredTopic("t", replication_factor=0)) is ErrorCode.INVALID_REPLICATION_FACTOR
    assert error_of(AlteredTopic("t", replication_factor=3), busy=True) is ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS


def test_explicit_assignment_and_its_errors() -> None:
    ok = decide(AlteredTopic("t", assignment={0: (3, 4), 1: (2, 3)}), T, LIVE, LIVE, False)
    assert ok == Alteration("t", targets={0: (3, 4)})  # partition 1 unchanged: dropped
    assert error_of(AlteredTopic("t", assignment={7: (1, 2)})) is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert error_of(AlteredTopic("t", assignment={0: ()})) is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert error_of(AlteredTopic("t", assignment={0: (1, 1)})) is ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert error_of(AlteredTopic("t", assignment={0: (1, 9)})) is ErrorCode.UNKNOWN_MEMBER_ID
    assert error_of(AlteredTopic("t", assignment={0: (3, 4)}),
                    busy=True) is ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS
    moving = TopicAssignment({0: (3, 1, 2)}, adding={0: (3,)}, removing={0: (2,)})
    assert error_of(AlteredTopic("t", assignment={0: (1, 2)}), moving) is ErrorCode.PARTITION_REASSIGNMENT_IN_PROGRESS


def test_request_level_errors() -> None:
    assert error_of(AlteredTopic("nope", num_partitions=4), None) is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert error_of(AlteredTopic("t", num_partitions=4, assignment={0: (1, 2)})) is ErrorCode.INVALID_REQUEST
    assert error_of(AlteredTopic("t", num_partitions=4, replication_factor=3)) is ErrorCode.INVALID_REQUEST


def test_wire_round_trips() -> None:
    topics = [AlteredTopic("t", assignment={0: (1, 2)}), AlteredTopic("u", num_partitions=6)]
    assert decode_alter_topics(encode_alter_topics(topics, True, 500)) == (topics, True, 500)
    results = [TopicResult("t", ErrorCode.NONE), TopicResult("u", ErrorCode.INVALID_PARTITIONS, "why")]
    assert decode_topic_results(encode_topic_results(results)) == results
    asked = [(TopicPartition("t", 0), 2)]
    assert decode_replica_status_request(encode_replica_status_request(asked)) == asked
    statuses = [ReplicaStatus(TopicPartition("t", 0), 2, ErrorCode.NONE, 1700000000000, 3, 2500)]
    assert decode_replica_statuses(encode_replica_statuses(statuses)) == statuses
    assert lag_messages(0) == 0 and lag_messages(1) == 1 and lag_messages(2048) == 2


@pytest.mark.parametrize("body, message", [
    ({}, "alter_topic_requests must be a list"),
    ({"alter_topic_requests": [{"num_partitions": 3}]}, "with a topic name"),
    ({"alter_topic_requests": [{"topic": "t", "num_partitions": "3"}]}, "num_partitions must be an integer"),
    ({"alter_topic_requests": [{"topic": "t", "partition_assignment": [{"partition_id": 0, "brokers": ["1"]}]}]},
     "brokers must be a list of broker ids"),
])
def test_malformed_requests_are_refused_with_the_field_named(body: dict, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_alter_topics(body)
