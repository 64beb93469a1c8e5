"""What `kops state` and `kops status` say a cluster's controller is and where a reassignment in flight was read,
on each transport: on KRaft the metadata quorum's leader (DescribeQuorum), never DescribeCluster's random broker,
and no "(epoch None)"; "znode" only for what ZooKeeper's /admin/reassign_partitions holds. Pure parts; the
real-Kafka side is tests/integration/test_admin_snapshot.py."""

from __future__ import annotations

import dataclasses

import pytest

from kops.cli.state import controller_label, move_source, render
from kops.cli.status import started_by
from kops.cluster.admin.metadata import Quorum
from kops.cluster.admin.reader import controller_of
from kops.model import snapshot_format
from kops.model.snapshot import ControllerInfo, InFlight, RequestedMove, Snapshot
from kops.model.topics import Topic
from tests.builders import brokers, snapshot, topic

ADMIN = "kafka://b1:9092"
ZOOKEEPER = "zk1:2181/kafka"


def test_on_kraft_the_controller_is_the_quorum_leader_whatever_broker_describe_cluster_names() -> None:
    quorum = Quorum(leader=1, epoch=5, high_watermark=1200)
    assert {controller_of(random_broker, quorum, kraft=True) for random_broker in (2, 1, 3, 3, 2)} == {
        ControllerInfo(1, 5)}
    assert controller_of(2, Quorum(None, 6, 1300), kraft=True) == ControllerInfo(None, None)  # being elected
    assert controller_of(2, None, kraft=True) == ControllerInfo(None, None)  # the quorum not described to kops


def test_in_zookeeper_mode_the_controller_is_describe_clusters_without_an_epoch() -> None:
    assert controller_of(2, None, kraft=False) == ControllerInfo(2, None)


def _snap(controller: ControllerInfo, connect: str, metadata_version: int | None = None) -> Snapshot:
    return dataclasses.replace(snapshot(brokers(3), [topic("t", [(1, 2, 3)])]), controller=controller,
                               connect=connect, metadata_version=metadata_version)


@pytest.mark.parametrize(("controller", "connect", "version", "said"), [
    (ControllerInfo(1, 7), ZOOKEEPER, None, "broker 1 (epoch 7)"),
    (ControllerInfo(2, None), ADMIN, None, "broker 2"),  # ZooKeeper mode through the Admin API
    (ControllerInfo(1, 5), ADMIN, 27, "node 1 (KRaft quorum leader, epoch 5)"),
    (ControllerInfo(None, None), ADMIN, 27, "KRaft quorum (leader not reported through the Admin API)"),
    (ControllerInfo(None, None), ZOOKEEPER, None, "[red]none[/]"),
])
def test_the_controller_label_names_the_epoch_only_where_known(controller: ControllerInfo, connect: str,
                                                               version: int | None, said: str) -> None:
    assert controller_label(_snap(controller, connect, version)) == said


def test_a_kraft_snapshot_without_a_controller_renders_and_saves_cleanly(capsys) -> None:
    snap = _snap(ControllerInfo(None, None), ADMIN, 27)
    render(snap)
    out = " ".join(capsys.readouterr().out.split())  # as one line: rich wraps at the terminal's width (80 in CI)
    assert "controller KRaft quorum (leader not reported through the Admin API)" in out and "None" not in out
    saved = snapshot_format.dumps(snap)
    again = snapshot_format.loads(saved, "snap.json")
    assert again.controller == ControllerInfo(None, None) and snapshot_format.dumps(again) == saved


def _moving(requested: bool, replicas: tuple[int, ...] = (1, 2, 3, 4)) -> InFlight:
    return InFlight("t", 0, replicas, (4,) if replicas else (), (), (2, 3, 4), requested)


def test_a_reassignment_read_through_the_admin_api_is_never_a_znode() -> None:
    assert move_source(_moving(True), ADMIN) == started_by(True, ADMIN) == "Admin API (KIP-455)"
    assert move_source(_moving(True), ZOOKEEPER) == "znode + topic"
    assert move_source(_moving(True, ()), ZOOKEEPER) == "znode"
    assert move_source(_moving(False), ZOOKEEPER) == "topic (API)"
    assert started_by(True, ZOOKEEPER) == "znode" and started_by(False, ZOOKEEPER) == "admin API"
    assert move_source(_moving(True), None) == "znode + topic"  # a snapshot that names no cluster: ZooKeeper's


def test_state_shows_the_admin_api_as_the_source_of_a_move_on_kraft(capsys) -> None:
    moving = Topic("t", {0: dataclasses.replace(topic("t", [(1, 2, 3, 4)]).partitions[0], adding=(4,))})
    snap = dataclasses.replace(_snap(ControllerInfo(1, 5), ADMIN, 27), topics={"t": moving},
                               requested_moves=(RequestedMove("t", 0, (1, 2, 4)),))
    render(snap)
    table = capsys.readouterr().out.split("Reassignments in flight")[1]
    assert "Admin API (KIP-455)" in table.splitlines()[4] and "znode" not in table.split("Replica log dirs")[0]
