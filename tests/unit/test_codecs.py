"""Codecs: Kafka-style payloads of every version in varied key orders, round trips, strictness as the spec says."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kops.errors import ZnodeFormatError
from kops.model.brokers import Broker, FeatureRange
from kops.model.partitions import PartitionState, TopicPartition
from kops.model.topics import TopicAssignment
from kops.zk_layout.codecs.admin_requests import (
    ReassignmentTarget,
    decode_partition_list,
    decode_reassignment,
    encode_partition_list,
    encode_reassignment,
)
from kops.zk_layout.codecs.brokers import decode_broker, encode_broker
from kops.zk_layout.codecs.cluster import (
    FeatureZNode,
    FinalizedFeature,
    MigrationState,
    decode_cluster_id,
    decode_feature,
    decode_migration,
    encode_cluster_id,
    encode_feature,
    encode_migration,
)
from kops.zk_layout.codecs.configs import decode_config, encode_config
from kops.zk_layout.codecs.controller import (
    ControllerRegistration,
    decode_controller,
    decode_controller_epoch,
    encode_controller,
    encode_controller_epoch,
)
from kops.zk_layout.codecs.notifications import (
    ConfigChange,
    LogDirEvent,
    decode_config_change,
    decode_isr_change,
    decode_log_dir_event,
    encode_config_change,
    encode_isr_change,
    encode_log_dir_event,
)
from kops.zk_layout.codecs.partition_state import decode_partition_state, encode_partition_state
from kops.zk_layout.codecs.topics import decode_topic, encode_topic


def orders(doc: dict) -> list[bytes]:
    """The document in every key order (capped), compact as Jackson writes it."""
    keys = list(doc)
    perms = itertools.islice(itertools.permutations(keys), 24)
    return [json.dumps({k: doc[k] for k in p}, separators=(",", ":")).encode() for p in perms]


# -- brokers -----------------------------------------------------------------------------------------------

BROKER_V5 = {
    "features": {},
    "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
    "endpoints": ["PLAINTEXT://kafka1:9092"],
    "rack": "r1",
    "jmx_port": -1,
    "port": 9092,
    "host": "kafka1",
    "version": 5,
    "timestamp": "1700000000000",
}


@pytest.mark.parametrize("data", orders(BROKER_V5))
def test_broker_v5_any_key_order(data: bytes) -> None:
    b = decode_broker(1, data, "/brokers/ids/1")
    assert (b.id, b.host, b.port, b.rack, b.version) == (1, "kafka1", 9092, "r1", 5)
    assert b.endpoints == ("PLAINTEXT://kafka1:9092",)
    assert b.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT"}
    assert b.features == {} and b.jmx_port == -1 and b.timestamp == "1700000000000"


def test_broker_v1_builds_plaintext_endpoint() -> None:
    data = b'{"jmx_port":-1,"timestamp":"1","host":"h","version":1,"port":9092}'
    b = decode_broker(3, data, "/brokers/ids/3")
    assert b.endpoints == ("PLAINTEXT://h:9092",) and b.rack is None and b.version == 1


def test_broker_v2_without_protocol_map_needs_protocol_listener_names() -> None:
    ok = b'{"version":2,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1","endpoints":["SSL://h:9093"]}'
    assert decode_broker(1, ok, "/b").endpoints == ("SSL://h:9093",)
    bad = ok.replace(b"SSL://", b"CLIENT://")
    with pytest.raises(ZnodeFormatError, match="listener 'CLIENT'"):
        decode_broker(1, bad, "/brokers/ids/1")


def test_broker_v4_custom_listener_and_ipv6() -> None:
    doc = {
        "listener_security_protocol_map": {"CLIENT": "SSL", "REPL": "PLAINTEXT"},
        "endpoints": ["CLIENT://[::1]:9093", "REPL://h:9094"],
        "rack": None,
        "jmx_port": 9999,
        "port": -1,
        "host": None,
        "version": 4,
        "timestamp": "1",
    }
    b = decode_broker(2, json.dumps(doc).encode(), "/brokers/ids/2")
    assert b.host is None and b.rack is None and b.jmx_port == 9999 and b.port == -1


def test_broker_features_and_unknown_fields_ignored() -> None:
    doc = dict(BROKER_V5, features={"kip236.cancel": {"min_version": 1, "max_version": 1}}, shiny=True)
    b = decode_broker(1, json.dumps(doc).encode(), "/b")
    assert b.features == {"kip236.cancel": FeatureRange(1, 1)} and b.supports("kip236.cancel")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"port": "9092"}, "port must be a JSON integer"),
        ({"version": 0}, "unsupported broker registration version 0"),
        ({"endpoints": "PLAINTEXT://h:1"}, "endpoints must be a JSON array"),
        ({"endpoints": ["nonsense"]}, "not an endpoint"),
        ({"rack": 7}, "rack must be a JSON string"),
        ({"timestamp": 1700000000000}, "timestamp must be a JSON string"),
        ({"version": 5.0}, "version must be a JSON integer"),
        ({"port": True}, "port must be a JSON integer"),
    ],
)
def test_broker_wrong_types_rejected_with_path(change: dict, message: str) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        decode_broker(1, json.dumps(dict(BROKER_V5, **change)).encode(), "/brokers/ids/1")
    assert info.value.path == "/brokers/ids/1" and message in info.value.problem


@pytest.mark.parametrize("data", [None, b"", b"not json", b"[1,2]", b"\xff\xfe", b'{"version":NaN}'])
def test_broker_garbage_rejected(data: bytes | None) -> None:
    with pytest.raises(ZnodeFormatError):
        decode_broker(1, data, "/brokers/ids/1")


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_broker_encode_each_version_reads_back(version: int) -> None:
    broker = Broker(
        id=4, host="h", port=9092, endpoints=("PLAINTEXT://h:9092",), rack="r2",
        features={"f": FeatureRange(1, 2)}, listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        timestamp="5", version=version,
    )
    doc = json.loads(encode_broker(broker))
    assert doc["version"] == version and ("rack" in doc) == (version >= 3) and ("features" in doc) == (version == 5)
    back = decode_broker(4, encode_broker(broker), "/b")
    assert back.endpoints == broker.endpoints and back.port == 9092
    assert back.rack == (broker.rack if version >= 3 else None)


# -- topics ------------------------------------------------------------------------------------------------

TOPIC_V3 = {
    "partitions": {"0": [4, 5, 6, 1, 2, 3], "1": [2, 3, 1]},
    "topic_id": "ZgLy5YjLS1y7j6B4v0xN3w",
    "adding_replicas": {"0": [4, 5, 6]},
    "removing_replicas": {"0": [1, 2, 3]},
    "version": 3,
}


@pytest.mark.parametrize("data", orders(TOPIC_V3))
def test_topic_v3_any_key_order(data: bytes) -> None:
    t = decode_topic(data, "/brokers/topics/t")
    assert t.replicas == {0: (4, 5, 6, 1, 2, 3), 1: (2, 3, 1)}
    assert t.adding == {0: (4, 5, 6)} and t.removing == {0: (1, 2, 3)}
    assert t.topic_id == "ZgLy5YjLS1y7j6B4v0xN3w"


def test_topic_v1_and_v2() -> None:
    v1 = decode_topic(b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}', "/t")
    assert v1.replicas == {0: (1, 2), 1: (2, 1)} and v1.adding == {} and v1.topic_id is None
    v2 = decode_topic(b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[]},"removing_replicas":{}}', "/t")
    assert v2.adding == {}


def test_topic_version_value_ignored_like_kafka() -> None:
    assert decode_topic(b'{"version":"x","partitions":{"0":[1]}}', "/t").replicas == {0: (1,)}


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"partitions": {"a": [1]}}, "not an integer"),
        ({"partitions": {"0": ["1"]}}, "must be a JSON integer"),
        ({"partitions": {"0": [1]}, "topic_id": "short"}, "not a Kafka UUID"),
        ({"partitions": {"0": [1]}, "topic_id": "!!!!!!!!!!!!!!!!!!!!!!"}, "not a Kafka UUID"),
        ({"partitions": {"0": [1]}, "adding_replicas": {"3": [2]}}, "not in partitions"),
        ({"version": 3}, "partitions is missing"),
    ],
)
def test_topic_rejections(doc: dict, message: str) -> None:
    with pytest.raises(ZnodeFormatError, match=message):
        decode_topic(json.dumps(doc).encode(), "/brokers/topics/t")


replica_lists = st.lists(st.integers(0, 2000), min_size=1, max_size=5, unique=True).map(tuple)


@given(
    st.dictionaries(st.integers(0, 50), replica_lists, min_size=1, max_size=8),
    st.booleans(),
    st.sampled_from([2, 3]),
)
def test_topic_round_trip(replicas: dict, with_id: bool, version: int) -> None:
    adding = {p: r[:1] for p, r in replicas.items() if len(r) > 1 and p % 2}
    a = TopicAssignment(
        replicas=replicas, adding=adding, topic_id="3vVbRSnQT0Ky1cQm3C4nWQ" if with_id else None, version=version
    )
    back = decode_topic(encode_topic(a), "/t")
    assert back.replicas == replicas and back.adding == adding
    assert back.topic_id == (a.topic_id if version >= 3 else None)


def test_topic_encode_shape_and_kip253_counts() -> None:
    a = TopicAssignment(replicas={0: (1, 2)}, initial_partition_count=1, undeleted_partition_count=1)
    assert encode_topic(a, version=2) == (
        b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{},'
        b'"initial_partition_count":1,"undeleted_partition_count":1}'
    )
    back = decode_topic(encode_topic(a), "/t")
    assert (back.initial_partition_count, back.undeleted_partition_count) == (1, 1)


# -- partition state ----------------------------------------------------------------------------------------

STATE = {"controller_epoch": 10, "leader": 1, "version": 1, "leader_epoch": 6, "isr": [1, 2, 3]}


@pytest.mark.parametrize("data", orders(STATE))
def test_state_any_key_order(data: bytes) -> None:
    s = decode_partition_state(data, "/s")
    assert (s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.leader_recovery_state) == (1, 6, (1, 2, 3), 10, 0)


def test_state_recovering_and_epoch_maps() -> None:
    doc = dict(STATE, leader_recovery_state=1, leaderEpochBeforeDeletion={"0": 4, "1": 7})
    s = decode_partition_state(json.dumps(doc).encode(), "/s")
    assert s.leader_recovery_state == 1 and s.leader_epoch_before_deletion == {0: 4, 1: 7}
    assert decode_partition_state(encode_partition_state(s), "/s") == s


def test_state_recovered_is_never_written() -> None:
    s = PartitionState(leader=-1, leader_epoch=0, isr=(), controller_epoch=1)
    assert b"leader_recovery_state" not in encode_partition_state(s)
    assert encode_partition_state(s) == b'{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":0,"isr":[]}'


@pytest.mark.parametrize(
    "change, message",
    [({"leader_recovery_state": 2}, "0 or 1"), ({"isr": [1, "2"]}, "isr\\[1\\]"), ({"leader": 2**31}, "out of range")],
)
def test_state_rejections(change: dict, message: str) -> None:
    with pytest.raises(ZnodeFormatError, match=message):
        decode_partition_state(json.dumps(dict(STATE, **change)).encode(), "/s")


# -- controller, cluster id, feature, migration ---------------------------------------------------------------


@pytest.mark.parametrize(
    "doc, kraft",
    [
        ({"version": 1, "brokerid": 1, "timestamp": "1700000000000"}, -1),
        ({"version": 2, "brokerid": 1, "timestamp": "1700000000000", "kraftControllerEpoch": -1}, -1),
        ({"version": 2, "brokerid": 3000, "timestamp": "1", "kraftControllerEpoch": 5}, 5),
    ],
)
def test_controller_versions(doc: dict, kraft: int) -> None:
    for data in orders(doc):
        reg = decode_controller(data, "/controller")
        assert reg.broker_id == doc["brokerid"] and reg.kraft_controller_epoch == kraft
    reg = ControllerRegistration(doc["brokerid"], doc["timestamp"], doc["version"], kraft)
    assert json.loads(encode_controller(reg)) == doc


def test_controller_epoch_is_plain_text() -> None:
    assert decode_controller_epoch(b"5", "/controller_epoch") == 5
    assert encode_controller_epoch(12) == b"12"
    with pytest.raises(ZnodeFormatError, match="decimal integer"):
        decode_controller_epoch(b'{"epoch":5}', "/controller_epoch")


def test_cluster_id() -> None:
    assert encode_cluster_id("abc") == b'{"version":"1","id":"abc"}'
    assert decode_cluster_id(b'{"id":"abc","version":"1"}', "/cluster/id") == "abc"
    with pytest.raises(ZnodeFormatError):
        decode_cluster_id(b'{"id":5}', "/cluster/id")


def test_feature_v1_v2() -> None:
    v2 = decode_feature(b'{"features":{},"version":2,"status":1}', "/feature")
    assert v2 == FeatureZNode(2, True, {})
    v1 = FeatureZNode(1, True, {"metadata.version": FinalizedFeature(7, 1)})
    assert decode_feature(encode_feature(v1), "/feature") == v1
    with pytest.raises(ZnodeFormatError, match="status"):
        decode_feature(b'{"features":{},"version":2,"status":3}', "/feature")


def test_migration_round_trip() -> None:
    m = MigrationState(3000, 5, 2**40, 7)
    assert decode_migration(encode_migration(m), "/migration") == m


# -- admin requests ----------------------------------------------------------------------------------------


def test_reassignment_exact_format() -> None:
    data = encode_reassignment([ReassignmentTarget("b", 0, (3, 1)), ReassignmentTarget("a", 2, (1, 2))])
    assert data == (
        b'{"version":1,"partitions":[{"topic":"a","partition":2,"replicas":[1,2]},'
        b'{"topic":"b","partition":0,"replicas":[3,1]}]}'
    )


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1], "log_dirs": ["any"]}]},
        {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1], "original_replicas": [2]}]},
        {"version": 1, "partitions": [], "extra": 1},
    ],
)
def test_reassignment_unknown_fields_make_kafka_ignore_it(doc: dict) -> None:
    with pytest.raises(ZnodeFormatError, match="Kafka ignores the whole reassignment"):
        decode_reassignment(json.dumps(doc).encode(), "/admin/reassign_partitions")


def test_reassignment_data_binding_coercions_and_missing_version() -> None:
    doc = {"partitions": [{"replicas": ["3", 1.0], "partition": "2", "topic": "a"}]}
    assert decode_reassignment(json.dumps(doc).encode(), "/r") == [ReassignmentTarget("a", 2, (3, 1))]


def test_reassignment_encoder_refuses_duplicates() -> None:
    with pytest.raises(ValueError):
        encode_reassignment([ReassignmentTarget("a", 0, (1, 1))])
    with pytest.raises(ValueError):
        encode_reassignment([ReassignmentTarget("a", 0, (1,)), ReassignmentTarget("a", 0, (2,))])


targets = st.lists(
    st.builds(ReassignmentTarget, st.sampled_from(["a", "b.c", "d_e-f"]), st.integers(0, 100), replica_lists),
    max_size=20,
    unique_by=lambda t: (t.topic, t.partition),
)


@given(targets)
def test_reassignment_round_trip(items: list[ReassignmentTarget]) -> None:
    assert decode_reassignment(encode_reassignment(items), "/r") == sorted(items)


def test_preferred_election_formats() -> None:
    tps = [TopicPartition("b", 1), TopicPartition("a", 0)]
    assert encode_partition_list(tps) == (
        b'{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":1}]}'
    )
    tool_file = b'{"partitions":[{"topic":"a","partition":0}],"note":"ignored"}'
    assert decode_partition_list(tool_file, "/admin/preferred_replica_election") == [TopicPartition("a", 0)]


# -- notifications and configs ------------------------------------------------------------------------------


def test_isr_change_and_log_dir_event() -> None:
    tps = [TopicPartition("t", 3)]
    assert decode_isr_change(encode_isr_change(tps), "/isr_change_notification/isr_change_0000000001") == tps
    assert encode_log_dir_event(LogDirEvent(2)) == b'{"version":1,"broker":2,"event":1}'
    assert decode_log_dir_event(b'{"event":1,"broker":2,"version":1}', "/x") == LogDirEvent(2, 1)


def test_config_change_v2_written_relative() -> None:
    assert encode_config_change(ConfigChange("brokers",
                                             "<default>")) == b'{"version":2,"entity_path":"brokers/<default>"}'
    assert decode_config_change(b'{"entity_path":"users/alice/clients/app1","version":2}', "/c") == ConfigChange(
        "users", "alice/clients/app1"
    )


def test_config_change_v1_and_rejections() -> None:
    assert decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"t"}', "/c") == ConfigChange(
        "topics", "t"
    )
    for bad in (
        b'{"version":1,"entity_type":"brokers","entity_name":"1"}',
        b'{"version":2,"entity_path":"/config/topics/t"}',
        b'{"version":3,"entity_path":"topics/t"}',
    ):
        with pytest.raises(ZnodeFormatError):
            decode_config_change(bad, "/config/changes/config_change_0000000000")


def test_config_values_are_strings() -> None:
    assert encode_config({"retention.ms": "1000"}) == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert decode_config(b'{"config":{"a":"1"},"version":1}', "/config/topics/t") == {"a": "1"}
    assert decode_config(None, "/config/topics/t") == {}
    with pytest.raises(ZnodeFormatError, match="config.retention.ms must be a JSON string"):
        decode_config(b'{"version":1,"config":{"retention.ms":1000}}', "/config/topics/t")
    with pytest.raises(ValueError):
        encode_config({"retention.ms": 1000})  # type: ignore[dict-item]  # the wrong type is the point


@given(st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=30), max_size=10))
def test_config_round_trip(config: dict[str, str]) -> None:
    assert decode_config(encode_config(config), "/c") == config


@pytest.mark.parametrize("data", [b"--5", b"\xd9\xa1", b"5.0", b"", b"99999999999"])
def test_controller_epoch_rejects_what_is_not_a_plain_integer(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        decode_controller_epoch(data, "/controller_epoch")
