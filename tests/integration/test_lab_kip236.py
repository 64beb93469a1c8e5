"""KIP-236 in the lab (seed 000): cancel, freeze and queue, driven through their znodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kops.model.features import KIP236_CANCEL, KIP236_FREEZE, KIP236_QUEUE
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget, encode_reassignment
from kops.zk_layout.codecs.topics import decode_topic
from kops.zk_layout.reader import read_snapshot
from tests.labtools import configs_applied, controller, produced, replica, replicas, running_lab, state, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024


def slow_topic(zk: ZkClient, name: str, assignment: dict[int, tuple[int, ...]], slow_brokers: tuple[int, ...]) -> None:
    """A topic with 50 MB per partition whose new replicas on `slow_brokers` copy at 1 MB/s (50 s simulated)."""
    tool_writes.create_topic(zk, name, assignment)
    wait_until(lambda: all(state(zk, name, p) for p in assignment), what="partitions created")
    for p in assignment:
        wait_until(lambda p=p: produced(zk, name, 50 * MB, p), what="produce")
    for p, replicas_ in assignment.items():  # the high watermark at the end: a new replica below it stays out of
        for b in replicas_:                    # the ISR, and throttled, until it has copied the log
            wait_until(lambda p=p, b=b: (r := replica(zk, b, name, p)) and r["end"] == 50 * MB,
                       what=f"{name}-{p} on broker {b} caught up")
    for broker in slow_brokers:
        tool_writes.alter_config(zk, "brokers", str(broker), {"follower.replication.throttled.rate": str(1 * MB)})
    tool_writes.alter_config(zk, "topics", name, {"follower.replication.throttled.replicas": "*"})
    configs_applied(zk)


def in_flight(zk: ZkClient, name: str) -> dict[int, tuple[int, ...]]:
    return decode_topic(zk.get(paths.topic(name)).data, "t").adding


def test_the_lab_advertises_kip236(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=2) as _lab, ZkClient(ZkSettings(zk_connect)) as zk:
        features = read_snapshot(zk).cluster_features()
        assert {KIP236_CANCEL, KIP236_FREEZE, KIP236_QUEUE} <= set(features)


def test_cancel_mid_move_restores_the_original_order_and_drops_new_replicas(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=4, time_scale=10.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        slow_topic(zk, "pay", {0: (2, 1), 1: (3, 4)}, slow_brokers=(1, 2, 3, 4))
        tool_writes.start_reassignment(zk, [ReassignmentTarget("pay", 0, (1, 3)), ReassignmentTarget("pay", 1, (1, 2))])
        wait_until(lambda: in_flight(zk, "pay") == {0: (3,), 1: (1, 2)}, what="both moves in flight")
        wait_until(lambda: replica(zk, 3, "pay", 0), what="the new replica exists")
        zk.create(paths.CANCEL_REASSIGNMENT, b"")
        wait_until(lambda: zk.exists(paths.CANCEL_REASSIGNMENT) is None, what="cancel znode removed")
        assert zk.exists(paths.REASSIGN_PARTITIONS) is None
        assert replicas(zk, "pay") == {0: (2, 1), 1: (3, 4)}  # original order, not RS order [1, 3, 2] minus adding
        assert in_flight(zk, "pay") == {}
        s0, s1 = state(zk, "pay", 0), state(zk, "pay", 1)
        assert s0.leader in (2, 1) and set(s0.isr) <= {1, 2} and s1.leader in (3, 4) and set(s1.isr) <= {3, 4}
        wait_until(lambda: replica(zk, 3, "pay", 0) is None, what="dropped replica deleted")
        assert replica(zk, 1, "pay", 1) is None and replica(zk, 2, "pay", 1) is None


def test_cancel_skips_a_partition_that_would_go_offline(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=4, time_scale=10.0) as lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        active = wait_until(lambda: controller(zk), what="a controller")
        while active in (1, 2):  # keep the controller alive through the test: move it to 3 or 4
            lab.kill_broker(active)
            new = wait_until(lambda gone=active: (c := controller(zk)) is not None and c != gone and c,
                             what="a new controller")
            lab.start_broker(active)
            active = new
        slow_topic(zk, "risky", {0: (1, 2)}, slow_brokers=(3,))
        # the operator allows it
        tool_writes.alter_config(zk, "topics", "risky", {"unclean.leader.election.enable": "true"})
        tool_writes.alter_config(zk, "brokers", "4", {"follower.replication.throttled.rate": "1024"})  # 4 stays behind
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("risky", 0, (3, 4))])
        wait_until(lambda: in_flight(zk, "risky") == {0: (3, 4)}, what="move in flight")
        wait_until(lambda: (r := replica(zk, 3, "risky", 0)) and r["end"] > 5 * MB, what="broker 3 holds data")
        lab.kill_broker(1)
        lab.kill_broker(2)  # originals gone; the new replicas live on (unclean leader among them)
        wait_until(lambda: (s := state(zk, "risky", 0)) and s.leader in (3, 4), what="leader among new replicas")
        zk.create(paths.CANCEL_REASSIGNMENT, b"")
        wait_until(lambda: zk.exists(paths.CANCEL_REASSIGNMENT) is None, what="cancel processed")
        assert in_flight(zk, "risky") == {0: (3, 4)}  # not rolled back: it would have gone offline
        log = "".join(p.read_text() for p in (tmp_path / "lab" / "logs").glob("state-change-*.log"))
        assert "risky-0: cancellation skipped" in log


def test_freeze_cancels_what_is_pending_and_starts_nothing_while_present(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, time_scale=10.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        slow_topic(zk, "frozen", {0: (1, 2), 1: (2, 3)}, slow_brokers=(1, 2, 3))
        tool_writes.start_reassignment(zk, [ReassignmentTarget("frozen", 0, (3, 2))])
        wait_until(lambda: in_flight(zk, "frozen") == {0: (3,)}, what="move in flight")
        zk.create(paths.REASSIGN_CANCEL, b"")
        wait_until(lambda: in_flight(zk, "frozen") == {} and zk.exists(paths.REASSIGN_PARTITIONS) is None,
                   what="pending move cancelled and its znode removed")
        assert replicas(zk, "frozen") == {0: (1, 2), 1: (2, 3)}
        zk.create(paths.REASSIGN_PARTITIONS, encode_reassignment([ReassignmentTarget("frozen", 1, (1, 3))]))
        wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="frozen request removed")
        assert replicas(zk, "frozen") == {0: (1, 2), 1: (2, 3)} and in_flight(zk, "frozen") == {}
        assert zk.exists(paths.REASSIGN_CANCEL) is not None  # stays until an operator removes it
        zk.delete(paths.REASSIGN_CANCEL)
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("frozen", 1, (2, 3, 1))])
        wait_until(lambda: in_flight(zk, "frozen") == {1: (1,)}, what="moves start again once unfrozen")


def test_queue_adds_moves_in_flight_and_retargets_a_pending_one(tmp_path: Path, zk_connect: str) -> None:
    with running_lab(tmp_path / "lab", zk_connect, brokers=4, time_scale=10.0) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        slow_topic(zk, "q", {0: (1, 2), 1: (2, 3)}, slow_brokers=(1, 2, 3, 4))
        tool_writes.start_reassignment(zk, [ReassignmentTarget("q", 0, (3, 2))])
        wait_until(lambda: in_flight(zk, "q") == {0: (3,)}, what="first move in flight")
        zk.create(paths.REASSIGN_QUEUE, encode_reassignment([ReassignmentTarget("q", 1, (4, 3))]))
        wait_until(lambda: in_flight(zk, "q") == {0: (3,), 1: (4,)}, what="queued move started alongside")
        wait_until(lambda: zk.exists(paths.REASSIGN_QUEUE) is None, what="queue znode taken in and deleted")
        zk.create(paths.REASSIGN_QUEUE, encode_reassignment([ReassignmentTarget("q", 0, (4, 1))]))
        wait_until(lambda: in_flight(zk, "q").get(0) == (4,), what="pending move re-targeted")
        assert decode_topic(zk.get(paths.topic("q")).data, "t").replicas[0] == (4, 1, 2)  # from [1, 2], not [3, 2, 1]
        wait_until(lambda: replica(zk, 3, "q", 0) is None, what="the abandoned new replica is deleted")
        for broker in (1, 2, 3, 4):
            tool_writes.alter_config(zk, "brokers", str(broker),
                                     {"follower.replication.throttled.rate": str(1000 * MB)})
        wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, timeout=60, what="both moves complete")
        assert replicas(zk, "q") == {0: (4, 1), 1: (4, 3)}
