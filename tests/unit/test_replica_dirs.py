"""Which log dir holds each replica (issue 37, docs/design/jbod.md §2, §4): the snapshot's `replica_dirs`, kept
for the brokers with several dirs, read back as written, refused when it names a dir its broker did not report;
and what `Snapshot.dir_of` answers: the only dir, the dir read, or unknown. On real Kafka:
tests/integration/test_jbod_real.py."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from kops.cli.state import render
from kops.errors import DocumentError
from kops.model import snapshot_format
from kops.model.capacity import LogDirUsage
from kops.model.partitions import TopicPartition
from kops.model.placement import ReplicaDir, dirs_by_broker, jbod_brokers
from kops.model.snapshot import Snapshot
from tests.builders import brokers, snapshot, topic

TP = TopicPartition("orders", 0)
DIRS = (LogDirUsage(1, "/d1", 100, 60), LogDirUsage(1, "/d2", 100, 30), LogDirUsage(2, "/only", 100, 60))


def jbod() -> Snapshot:
    """Broker 1 has two dirs, broker 2 one; orders-0 on broker 1 moves from /d1 to /d2."""
    base = snapshot(brokers(2), [topic("orders", [(1, 2), (2, 1)])], log_dirs=DIRS)
    rows = (ReplicaDir("orders", 0, 1, "/d1"), ReplicaDir("orders", 0, 1, "/d2", future=True),
            ReplicaDir("orders", 1, 1, "/d2"))
    return replace(base, replica_dirs=rows, replica_dirs_read=True)


def test_only_brokers_with_several_dirs_are_asked() -> None:
    by_broker = dirs_by_broker((d.broker, d.path) for d in DIRS)
    assert by_broker == {1: ("/d1", "/d2"), 2: ("/only",)}
    assert jbod_brokers(by_broker) == [1]


def test_a_replica_is_in_its_broker_s_only_dir_or_the_dir_read() -> None:
    snap = jbod()
    assert snap.dir_of(TP, 1) == "/d1" and snap.future_dir_of(TP, 1) == "/d2"
    assert snap.dir_of(TopicPartition("orders", 1), 1) == "/d2"
    assert snap.future_dir_of(TopicPartition("orders", 1), 1) is None
    assert snap.dir_of(TP, 2) == "/only"
    assert [(r.topic, r.partition, r.broker, r.path) for r in snap.dir_moves()] == [("orders", 0, 1, "/d2")]
    assert snap.placement_known(1) and snap.placement_known(2)


def test_through_zookeeper_several_dirs_leave_the_placement_unknown() -> None:
    snap = replace(jbod(), replica_dirs=(), replica_dirs_read=False)
    assert not snap.placement_known(1) and snap.dir_of(TP, 1) is None
    assert snap.placement_known(2) and snap.dir_of(TP, 2) == "/only"
    assert not replace(snap, log_dirs=()).placement_known(2)


def test_round_trip_keeps_rows_sorted_and_an_old_file_reads_as_not_read() -> None:
    snap = jbod()
    data = snapshot_format.dumps(snap)
    doc = json.loads(data)
    assert doc["replica_dirs_read"] is True
    assert doc["replica_dirs"] == [["orders", 0, 1, "/d1", False], ["orders", 0, 1, "/d2", True],
                                   ["orders", 1, 1, "/d2", False]]
    assert snapshot_format.loads(data, "snap.json") == snap
    del doc["replica_dirs"], doc["replica_dirs_read"]
    old = snapshot_format.loads(json.dumps(doc), "old.json")
    assert old.replica_dirs == () and not old.replica_dirs_read
    assert "replica_dirs" not in snapshot_format.to_document(old)


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d["replica_dirs"][1].__setitem__(3, "/gone"),
     "replica_dirs[1] names log dir /gone on broker 1, which is not one of its log_dirs"),
    (lambda d: d["replica_dirs"].append(["orders", 0, 1, "/d2", False]),
     "replica_dirs[3] lists orders-0 on broker 1 twice"),
    (lambda d: d.pop("replica_dirs_read"), "replica_dirs lists replicas but replica_dirs_read is not true"),
    (lambda d: d["replica_dirs"][0].__setitem__(4, "no"), "replica_dirs[0][4] must be true or false"),
])
def test_a_bad_row_is_refused_with_where_it_is(edit: Any, said: str) -> None:
    doc = json.loads(snapshot_format.dumps(jbod()))
    edit(doc)
    with pytest.raises(DocumentError) as caught:
        snapshot_format.loads(json.dumps(doc), "snap.json")
    assert said in str(caught.value)


def test_kops_state_counts_replicas_per_dir_and_shows_moves_in_flight(capsys: Any) -> None:
    from kops.cli import console

    console.out.width = 200
    render(jbod())
    out = capsys.readouterr().out
    counts = {tuple(line.split()[:2]): line.split()[-3] for line in out.splitlines()  # Replicas, Volume, Error
              if line.split()[1:2] in (["/d1"], ["/d2"], ["/only"])}
    assert counts == {("1", "/d1"): "1", ("1", "/d2"): "1", ("2", "/only"): "2"}
    assert "Log-dir moves in flight" in out
    assert any(line.split()[:4] == ["orders-0", "1", "/d1", "/d2"] for line in out.splitlines())
    render(replace(jbod(), replica_dirs=(), replica_dirs_read=False))
    out = capsys.readouterr().out
    assert "not read through ZooKeeper" in out
    assert [line.split()[-3] for line in out.splitlines() if line.split()[:2] == ["1", "/d1"]] == ["?"]
