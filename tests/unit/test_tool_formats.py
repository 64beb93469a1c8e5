"""kafka-reassign-partitions.sh JSON and kafka-log-dirs.sh output."""

from __future__ import annotations

import json

import pytest

from kops.errors import DocumentError
from kops.zk_layout.codecs.log_dirs import LogDirsReport, encode_log_dirs, parse_log_dirs
from kops.zk_layout.codecs.reassign_tool import ToolReassignment, read_reassignment_json, write_reassignment_json


def test_write_sorted_with_log_dirs_any() -> None:
    data = write_reassignment_json([ToolReassignment("foo", 1, (3, 1)), ToolReassignment("bar", 0, (2,))])
    assert json.loads(data) == {
        "version": 1,
        "partitions": [
            {"topic": "bar", "partition": 0, "replicas": [2], "log_dirs": ["any"]},
            {"topic": "foo", "partition": 1, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        ],
    }


def test_read_accepts_tool_files_with_and_without_version() -> None:
    text = '{"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}'
    [entry] = read_reassignment_json(text, "r.json")
    assert entry == ToolReassignment("foo", 1, (1, 2, 3), ("any", "any", "any"))
    assert read_reassignment_json(write_reassignment_json([entry]), "r.json") == [entry]


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"version": 2, "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}, "Not supported version"),
        ({"version": 1, "partitions": []}, "empty"),
        ({"partitions": [{"topic": "a", "partition": 0, "replicas": []}]}, "empty replica list"),
        ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]}, "duplicate replicas"),
        (
            {"partitions": [{"topic": "a", "partition": 0, "replicas": [1]},
                            {"topic": "a", "partition": 0, "replicas": [2]}]},
            "duplicate partition",
        ),
        ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]},
         "different from size"),
        ({"partitions": [{"topic": "a", "partition": "0", "replicas": [1]}]}, "partition must be a JSON integer"),
        ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1], "log_dirs": None}]},
         "log_dirs is null for a-0"),
        ({"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "/data/d2"]}]},
         "this reader takes no log dirs: 1 replica(s) of this file name a log dir, first a-0 on "
         "broker 2 to /data/d2"),
    ],
)
def test_read_rejections_name_file(doc: dict, message: str) -> None:
    with pytest.raises(DocumentError) as info:
        read_reassignment_json(json.dumps(doc), "moves.json")
    assert info.value.where == "moves.json" and message in info.value.one_line()


LOG_DIRS = (
    "Querying brokers for log directories information\n"
    "Received log directory information from brokers 1,2\n"
    '{"brokers":[{"logDirs":[{"partitions":[{"isFuture":false,"offsetLag":0,"size":1234,"partition":"my-topic-0"},'
    '{"partition":"my-topic-0","size":99,"offsetLag":5,"isFuture":true}],"error":null,"logDir":"/var/kafka/data"}],'
    '"broker":1},{"broker":2,"logDirs":[{"logDir":"/d","error":"org.apache.kafka.common.errors.KafkaStorageException",'
    '"partitions":[]}]}],"version":1}\n'
)


def test_log_dirs_after_status_lines_any_key_order() -> None:
    report = parse_log_dirs(LOG_DIRS, "logdirs.txt")
    b1, b2 = report.brokers
    assert b1.broker == 1 and b1.log_dirs[0].path == "/var/kafka/data" and b1.log_dirs[0].error is None
    real, future = b1.log_dirs[0].replicas
    assert (real.topic, real.partition, real.size, real.is_future) == ("my-topic", 0, 1234, False)
    assert future.is_future and future.offset_lag == 5
    assert b2.log_dirs[0].error.endswith("KafkaStorageException")
    again = parse_log_dirs(json.dumps(encode_log_dirs(report)), "x")
    assert again == report


def test_log_dirs_collector_timestamp_and_errors() -> None:
    assert parse_log_dirs('{"version":1,"brokers":[],"timestamp":1763700000000}', "f").timestamp_ms == 1763700000000
    assert parse_log_dirs('{"version":1,"brokers":[]}', "f") == LogDirsReport(())
    for bad in ("Querying brokers\nno json here", '{"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,'
                '"partitions":[{"partition":"nodash","size":1}]}]}]}', b"\xff\xfe"):
        with pytest.raises(DocumentError) as info:
            parse_log_dirs(bad, "bad.json")
        assert info.value.where == "bad.json"
