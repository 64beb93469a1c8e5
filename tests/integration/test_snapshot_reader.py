"""The snapshot reader against a real ZooKeeper holding clusters written in Kafka's formats."""

from __future__ import annotations

import dataclasses

import pytest

from kops.errors import NotAKafkaCluster
from kops.lab.sample import sample_snapshot
from kops.lab.snapshot_writer import write_snapshot
from kops.model.partitions import TopicPartition
from kops.model.snapshot import RequestedMove
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot


def _without_epochs(snapshot):
    return dataclasses.replace(
        snapshot, brokers=tuple(dataclasses.replace(b, epoch=None) for b in snapshot.brokers), connect=None
    )


def test_sample_cluster_reads_back_exactly(zk: ZkClient) -> None:
    expected = sample_snapshot()
    write_snapshot(zk, expected)
    got = read_snapshot(zk)
    assert got.complete and got.connect == str(zk.connect)
    assert all(b.epoch and b.epoch > 0 for b in got.brokers)  # czxid of the registration = broker epoch
    assert _without_epochs(got) == expected


def test_sample_cluster_field_by_field(zk: ZkClient) -> None:
    write_snapshot(zk, sample_snapshot())
    snap = read_snapshot(zk)
    assert snap.cluster_id == "kQKSmxAHRxiL5yEPdKUUpw"
    assert (snap.controller.id, snap.controller.epoch) == (1, 7)
    assert [(b.id, b.rack) for b in snap.brokers] == [
        (1, "rack-a"), (2, "rack-b"), (3, "rack-c"), (4, "rack-a"), (5, "rack-b"), (6, "rack-c")
    ]
    assert snap.broker(6).version == 4 and snap.broker(1).version == 5
    moving = snap.topics["payments"].partitions[1]
    assert moving.replicas == (4, 5, 6, 2, 3, 1) and moving.adding == (4, 5, 6) and moving.removing == (2, 3, 1)
    assert moving.original_replicas == (2, 3, 1) and moving.target_replicas == (4, 5, 6)
    assert moving.state.leader == 2 and moving.state.isr == (2, 3, 1, 4) and moving.state.leader_epoch == 5
    assert snap.topics["payments"].topic_id == "3vVbRSnQT0Ky1cQm3C4nWQ"
    assert snap.topics["payments"].config["follower.replication.throttled.replicas"] == "1:4,1:5,1:6"
    assert snap.topics["clicks"].config == {"leader.replication.throttled.replicas": "*"}
    assert snap.broker_configs["3"]["leader.replication.throttled.rate"] == "10485760"
    assert snap.requested_moves == (RequestedMove("payments", 1, (4, 5, 6)),)
    [flight] = snap.in_flight()
    assert (flight.topic, flight.partition, flight.target, flight.requested) == ("payments", 1, (4, 5, 6), True)
    assert snap.pending_deletions == ("retired-events",)
    assert snap.offline() == [TopicPartition("legacy", 0)]
    assert snap.under_replicated() == [TopicPartition("payments", 2)]
    assert snap.preferred_election == (TopicPartition("orders", 3),)
    assert not snap.migration


KAFKA_WRITTEN = {
    # Payloads as a Scala 2.13 build of Kafka 3.x writes them (spec §9 key orders), not through kops' encoders.
    "/cluster/id": b'{"version":"1","id":"Lz3Y5bK8TjOoYx4yJc8nUA"}',
    "/controller_epoch": b"12",
    "/controller": b'{"version":2,"brokerid":2,"timestamp":"1700000000000","kraftControllerEpoch":-1}',
    "/brokers/ids/1": b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://kafka1:9092"],"rack":"use1-az1","jmx_port":-1,"port":9092,"host":"kafka1",'
    b'"version":5,"timestamp":"1700000000000"}',
    "/brokers/ids/2": b'{"listener_security_protocol_map":{"CLIENT":"SSL","REPL":"PLAINTEXT"},'
    b'"endpoints":["CLIENT://kafka2:9093","REPL://kafka2:9094"],"rack":"use1-az2","jmx_port":-1,"port":-1,'
    b'"host":null,"version":4,"timestamp":"1700000000000"}',
    "/brokers/topics/events": b'{"partitions":{"0":[1,2],"1":[2,1]},"topic_id":"ZgLy5YjLS1y7j6B4v0xN3w",'
    b'"adding_replicas":{},"removing_replicas":{},"version":3}',
    "/brokers/topics/events/partitions/0/state": b'{"controller_epoch":12,"leader":1,"version":1,'
    b'"leader_epoch":6,"isr":[1,2]}',
    "/brokers/topics/events/partitions/1/state": b'{"controller_epoch":12,"leader":2,"version":1,'
    b'"leader_recovery_state":1,"leader_epoch":9,"isr":[2]}',
    "/brokers/topics/old": b'{"version":1,"partitions":{"0":[1]}}',
    "/brokers/topics/old/partitions/0/state":
        b'{"leader":-1,"leader_epoch":3,"isr":[1],"controller_epoch":4,"version":1}',
    "/config/topics/events": b'{"version":1,"config":{"retention.ms":"86400000"}}',
    "/config/brokers/<default>": b'{"version":1,"config":{"follower.replication.throttled.rate":"1000"}}',
}


def _write_raw(zk: ZkClient, nodes: dict[str, bytes]) -> None:
    for path in paths.PERSISTENT_PATHS:
        zk.ensure_path(path)
    for path, data in nodes.items():
        if zk.exists(path):
            zk.set(path, data)
        else:
            zk.create(path, data, makepath=True)


def test_reads_kafka_written_payloads(zk: ZkClient) -> None:
    _write_raw(zk, KAFKA_WRITTEN)
    snap = read_snapshot(zk)
    assert snap.complete, snap.problems
    assert snap.cluster_id == "Lz3Y5bK8TjOoYx4yJc8nUA" and snap.controller.id == 2 and snap.controller.epoch == 12
    b2 = snap.broker(2)
    assert b2.host is None and b2.endpoints == ("CLIENT://kafka2:9093", "REPL://kafka2:9094") and b2.rack == "use1-az2"
    events = snap.topics["events"]
    assert events.topic_id == "ZgLy5YjLS1y7j6B4v0xN3w" and events.config == {"retention.ms": "86400000"}
    assert events.partitions[1].state.leader_recovery_state == 1
    assert snap.topics["old"].partitions[0].leader == -1
    assert snap.topics["old"].config == {}
    assert snap.broker_configs == {"<default>": {"follower.replication.throttled.rate": "1000"}}
    assert snap.offline() == [TopicPartition("old", 0)]


def test_bad_znodes_are_reported_and_the_rest_is_read(zk: ZkClient) -> None:
    nodes = dict(KAFKA_WRITTEN)
    nodes["/brokers/topics/events/partitions/1/state"] = \
        b'{"leader":"2","leader_epoch":9,"isr":[2],"controller_epoch":1}'
    nodes["/brokers/topics/broken"] = b"this is not json"
    nodes["/admin/reassign_partitions"] = (
        b'{"version":1,"partitions":[{"topic":"events","partition":0,"replicas":[2,1],"log_dirs":["any","any"]}]}'
    )
    _write_raw(zk, nodes)
    snap = read_snapshot(zk)
    assert not snap.complete
    by_path = {p.path: p.message for p in snap.problems}
    assert "leader must be a JSON integer" in by_path["/brokers/topics/events/partitions/1/state"]
    assert "not valid JSON" in by_path["/brokers/topics/broken"]
    assert by_path["/admin/reassign_partitions"].startswith("Kafka ignores this reassignment znode")
    assert "broken" not in snap.topics and snap.topics["events"].partitions[1].state is None
    assert snap.topics["events"].partitions[0].state.leader == 1  # the rest is read
    assert snap.requested_moves == ()


def test_migration_is_detected(zk: ZkClient) -> None:
    nodes = dict(KAFKA_WRITTEN)
    nodes["/controller"] = b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":4}'
    nodes["/migration"] = (
        b'{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":4,"kraft_metadata_offset":100,'
        b'"kraft_metadata_epoch":2}'
    )
    _write_raw(zk, nodes)
    snap = read_snapshot(zk)
    assert snap.migration and snap.controller.kraft_controller_epoch == 4


def test_missing_chroot_and_non_kafka_path(zookeeper_server: str, zk: ZkClient) -> None:
    with ZkClient(ZkSettings(f"{zookeeper_server}/no/such/chroot")) as client, \
            pytest.raises(NotAKafkaCluster, match="does not exist"):
        read_snapshot(client)
    zk.ensure_path("/something/else")
    with pytest.raises(NotAKafkaCluster, match="/brokers is missing"):
        read_snapshot(zk)


def test_portable_read_path_gives_the_same_snapshot(zk: ZkClient) -> None:
    write_snapshot(zk, sample_snapshot())
    fast = read_snapshot(zk)
    zk._multiread_ok = False  # as against a ZooKeeper older than 3.6
    portable = read_snapshot(zk)
    assert portable == fast


def test_a_poll_of_some_partitions_reads_just_those(zk: ZkClient) -> None:
    expected = sample_snapshot()
    write_snapshot(zk, expected)
    wanted = sorted(TopicPartition(name, p) for name, t in expected.topics.items() for p in t.partitions)[::3]
    poll = read_snapshot(zk, only_partitions=wanted)
    assert sorted(TopicPartition(n, p) for n, t in poll.topics.items() for p in t.partitions) == wanted
    whole = read_snapshot(zk).narrowed(wanted)
    assert {n: t.partitions for n, t in poll.topics.items()} == {n: t.partitions for n, t in whole.topics.items()}
    assert poll.brokers and poll.requested_moves == expected.requested_moves


def test_get_many_keeps_order_and_reports_missing(zk: ZkClient) -> None:
    for i in range(1200):
        zk.create(f"/n/{i:04d}", str(i).encode(), makepath=True)
    wanted = [f"/n/{i:04d}" for i in range(0, 1200, 3)] + ["/n/missing"]
    nodes = zk.get_many(wanted)
    assert [n.data.decode() for n in nodes[:-1]] == [str(i) for i in range(0, 1200, 3)]
    assert nodes[-1] is None
    assert zk.children_many(["/n", "/nope"])[1] is None
    assert len(zk.children_many(["/n"])[0]) == 1200
