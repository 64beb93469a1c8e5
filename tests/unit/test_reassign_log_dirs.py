"""kafka-reassign-partitions JSON naming log dirs (issue 37, docs/design/jbod.md §4), read as Kafka's tool reads it
(ReassignPartitionsCommand `parsePartitionReassignmentData`: one entry per replica, "any" or a path) and written
back unchanged; a path that is not absolute is refused with its entry. Until the executor runs disk moves, a
file naming a dir is refused on import (tests/unit/test_tool_formats.py)."""

from __future__ import annotations

import json

import pytest

from kops.errors import DocumentError
from kops.zk_layout.codecs.reassign_tool import ToolReassignment, read_reassignment_json, write_reassignment_json

FILE = {"version": 1, "partitions": [
    {"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["/data/d2", "any"]},
    {"topic": "orders", "partition": 1, "replicas": [2, 3]},
    {"topic": "orders", "partition": 2, "replicas": [3, 1], "log_dirs": ["any", "any"]},
]}


def test_paths_are_read_per_replica_and_written_back_as_kafka_s_tool_reads_them() -> None:
    entries = read_reassignment_json(json.dumps(FILE), "moves.json", disk_moves=True)
    assert [e.placed for e in entries] == [[(1, "/data/d2")], [], []]
    assert entries[0] == ToolReassignment("orders", 0, (1, 2), ("/data/d2", "any"))
    written = json.loads(write_reassignment_json(entries))
    assert written["partitions"][0]["log_dirs"] == ["/data/d2", "any"]
    assert written["partitions"][1]["log_dirs"] == ["any", "any"]  # absent reads as "any" for every replica
    assert read_reassignment_json(write_reassignment_json(entries), "again.json", disk_moves=True)[0] == entries[0]


def test_without_disk_moves_a_file_naming_a_dir_is_refused_in_one_line() -> None:
    with pytest.raises(DocumentError) as caught:
        read_reassignment_json(json.dumps(FILE), "moves.json")
    assert caught.value.where == "moves.json"
    assert "this reader takes no log dirs: 1 replica(s) of this file name a log dir, first " \
           "orders-0 on broker 1 to /data/d2" in caught.value.one_line()
    unplaced = {"partitions": FILE["partitions"][1:]}
    assert [e.placed for e in read_reassignment_json(json.dumps(unplaced), "m.json")] == [[], []]


@pytest.mark.parametrize("bad", ["data/d2", "", "./d2"])
def test_a_path_no_broker_could_have_is_refused_with_its_entry(bad: str) -> None:
    doc = {"partitions": [{"topic": "orders", "partition": 4, "replicas": [1, 2], "log_dirs": ["any", bad]}]}
    with pytest.raises(DocumentError) as caught:
        read_reassignment_json(json.dumps(doc), "moves.json", disk_moves=True)
    assert f"partitions[0].log_dirs[1] is {bad!r} for orders-4: a broker knows its log dirs by absolute path" \
        in caught.value.one_line()


def test_the_tools_generate_output_as_printed_is_refused_with_what_to_keep() -> None:
    """Found by an outside check: the two headed documents kafka-reassign-partitions --generate prints, saved
    as they are, were refused with 'fix the kafka-reassign-partitions JSON' alone."""
    proposal = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}'
    printed = (f"Current partition replica assignment\n{proposal}\n\n"
               f"Proposed partition reassignment configuration\n{proposal}\n")
    with pytest.raises(DocumentError) as refused:
        read_reassignment_json(printed, "gen.txt")
    assert "keep only the JSON line after 'Proposed partition reassignment configuration'" in refused.value.one_line()
    assert len(read_reassignment_json(proposal, "gen.json")) == 1
