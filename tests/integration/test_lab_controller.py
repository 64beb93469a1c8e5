"""The lab's controller and brokers as real processes on a real ZooKeeper, driven from outside in Kafka's
formats (what kafka-topics.sh / kafka-reassign-partitions.sh / kafka-configs.sh write)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from kops.lab import traffic
from kops.lab.controller.channel import call_registered_broker
from kops.lab.controller.context import LeaderState
from kops.lab.controller.effects import Effects
from kops.lab.controller.store import ControllerMoved, ControllerStore
from kops.model.partitions import TopicPartition
from kops.rpc import RpcError
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.codecs.controller import decode_controller_epoch
from tests.labtools import (
    broker_status,
    configs_applied,
    controller,
    produced,
    replica,
    replicas,
    running_lab,
    state,
    wait_until,
)

pytestmark = pytest.mark.lab
MB = 1024 * 1024


@pytest.fixture
def lab_dir(tmp_path: Path) -> Path:
    return tmp_path / "lab"


def test_election_and_failover_of_the_controller(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=3) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        first = wait_until(lambda: controller(zk), what="a controller")
        assert decode_controller_epoch(zk.get(paths.CONTROLLER_EPOCH).data, "epoch") == 1
        assert zk.get(paths.CONTROLLER).stat.ephemeral_owner != 0
        lab.kill_broker(first)
        second = wait_until(lambda: (c := controller(zk)) not in (None, first) and c, what="a new controller")
        assert second != first
        assert decode_controller_epoch(zk.get(paths.CONTROLLER_EPOCH).data, "epoch") == 2
        figures = wait_until(lambda: (f := broker_status(zk, second)["controller"])["active"] and f,
                             what="the new controller finished its failover")
        assert figures["epoch"] == 2


def test_topic_create_partition_add_and_delete(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=3) as _lab, ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "orders", {0: (1, 2), 1: (2, 3), 2: (3, 1)}, {"retention.ms": "86400000"})
        for p, leader in ((0, 1), (1, 2), (2, 3)):
            s = wait_until(lambda p=p: state(zk, "orders", p), what=f"state of orders-{p}")
            assert s.leader == leader and s.leader_epoch == 0 and len(s.isr) == 2
        wait_until(lambda: (r := replica(zk, 1, "orders", 0)) is not None and r["role"] == "leader",
                   what="broker 1 leads orders-0 in its status (published on its own time)")
        wait_until(lambda: replica(zk, 2, "orders", 0), what="broker 2 follows orders-0")

        tool_writes.add_partitions(zk, "orders", {3: (1, 3)})
        s = wait_until(lambda: state(zk, "orders", 3), what="state of the added partition")
        assert s.leader == 1 and set(s.isr) == {1, 3}

        tool_writes.delete_topic(zk, "orders")
        wait_until(lambda: zk.exists(paths.topic("orders")) is None, what="topic znode removed")
        assert zk.exists(paths.config("topics", "orders")) is None
        assert zk.exists(paths.delete_topic("orders")) is None
        for broker in (1, 2, 3):
            assert not [r for r in broker_status(zk, broker)["replicas"] if r[0] == "orders"]


def test_broker_kill_moves_leaders_to_isr_members(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=3) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        active = wait_until(lambda: controller(zk), what="a controller")
        victim = next(b for b in (1, 2, 3) if b != active)
        others = tuple(b for b in (1, 2, 3) if b != victim)
        tool_writes.create_topic(zk, "events", {p: (victim,) + (others if p % 2 else others[::-1]) for p in range(6)})
        wait_until(lambda: all(state(zk, "events", p) for p in range(6)), what="partitions created")
        lab.kill_broker(victim)
        for p in range(6):
            s = wait_until(lambda p=p: (x := state(zk, "events", p)) and x.leader != victim and x,
                           what=f"events-{p} moves")
            assert s.leader in others and victim not in s.isr and s.leader != -1


def test_controlled_shutdown_moves_leadership_before_exit(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=3) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "jobs", {p: (1, 2, 3) if p % 2 else (1, 3, 2) for p in range(4)})
        wait_until(lambda: all((s := state(zk, "jobs", p)) and s.leader == 1 for p in range(4)), what="led by 1")
        lab.stop_broker(1)
        gone = zk.exists(paths.BROKER_IDS).pzxid  # the zxid of broker 1's deregistration
        for p in range(4):
            s = state(zk, "jobs", p)
            assert s.leader in (2, 3) and 1 not in s.isr
            assert zk.exists(paths.partition_state("jobs", p)).mzxid < gone, "leadership moved after the broker left"


def test_throttled_reassignment_takes_bytes_over_throttle(lab_dir: Path, zk_connect: str) -> None:
    scale, size, rate = 20.0, 200 * MB, 2 * MB  # 100 simulated seconds = 5 real seconds
    with running_lab(lab_dir, zk_connect, brokers=3, time_scale=scale) as _lab, ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "logs", {0: (1, 2)})
        wait_until(lambda: state(zk, "logs", 0), what="partition created")
        wait_until(lambda: produced(zk, "logs", size, 0), what="produce")
        wait_until(lambda: (r := replica(zk, 2, "logs", 0)) and r["end"] == size, what="follower caught up")
        tool_writes.alter_config(zk, "topics", "logs", {"leader.replication.throttled.replicas": "0:1,0:2",
                                                  "follower.replication.throttled.replicas": "0:3"})
        for broker in (1, 3):
            tool_writes.alter_config(zk, "brokers", str(broker), {"leader.replication.throttled.rate": str(rate),
                                                            "follower.replication.throttled.rate": str(rate)})
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("logs", 0, (3, 2))])
        wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, timeout=60, what="reassignment done")
        assert replicas(zk, "logs") == {0: (3, 2)}
        assert state(zk, "logs", 0).leader == 3
        moved = replica(zk, 3, "logs", 0)
        simulated = moved["caught_up_at"] - moved["created_at"]
        expected = size / rate
        print(f"throttled move: {simulated:.1f}s simulated, bytes/throttle {expected:.1f}s")
        assert abs(simulated - expected) <= 0.25 * expected, f"{simulated:.1f}s simulated vs {expected:.1f}s"
        wait_until(lambda: replica(zk, 1, "logs", 0) is None, what="the removed replica is deleted")


def test_new_controller_finishes_a_reassignment_when_the_old_one_dies(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=4, time_scale=20.0) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        active = wait_until(lambda: controller(zk), what="a controller")
        source, target = [b for b in (1, 2, 3, 4) if b != active][:2], None
        target = next(b for b in (1, 2, 3, 4) if b not in source and b != active)
        tool_writes.create_topic(zk, "moving", {0: tuple(source)})
        wait_until(lambda: state(zk, "moving", 0), what="partition created")
        wait_until(lambda: produced(zk, "moving", 100 * MB, 0), what="produce")
        wait_until(lambda: (r := replica(zk, source[1], "moving", 0)) and r["end"] == 100 * MB,
                   what="follower caught up")
        tool_writes.alter_config(zk, "brokers", str(target), {"follower.replication.throttled.rate": str(20 * MB)})
        tool_writes.alter_config(zk, "topics", "moving", {"follower.replication.throttled.replicas": f"0:{target}"})
        configs_applied(zk)
        tool_writes.start_reassignment(zk, [ReassignmentTarget("moving", 0, (target, source[1]))])
        wait_until(lambda: replicas(zk, "moving")[0][0] == target, what="reassignment started")
        lab.kill_broker(active)  # 100 MB at 20 MB/s: 5 simulated seconds, still copying
        wait_until(lambda: controller(zk) not in (None, active), what="a new controller")
        wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, timeout=60, what="reassignment finished")
        assert replicas(zk, "moving") == {0: (target, source[1])}
        s = state(zk, "moving", 0)
        assert s.leader == target and set(s.isr) == {target, source[1]}


def test_isr_shrinks_for_a_lagging_follower_and_expands_when_it_catches_up(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=2, time_scale=20.0, bandwidth=1 * MB) as _lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "busy", {0: (1, 2)})
        wait_until(lambda: state(zk, "busy", 0), what="partition created")
        traffic.set_ingest(zk, "busy", 2 * MB)  # twice what the follower can fetch
        s = wait_until(lambda: (x := state(zk, "busy", 0)) and x.isr == (1,) and x, what="ISR shrink")
        assert s.leader == 1 and s.leader_epoch == 0  # the leader changed the ISR, not the controller
        wait_until(lambda: not zk.children(paths.ISR_CHANGE_NOTIFICATION), what="notification consumed")
        traffic.set_ingest(zk, "busy", 0)
        wait_until(lambda: (x := state(zk, "busy", 0)) and set(x.isr) == {1, 2}, timeout=60, what="ISR expand")


def test_preferred_replica_election(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=2) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "pref", {0: (1, 2)})
        wait_until(lambda: state(zk, "pref", 0), what="partition created")
        lab.stop_broker(1)
        assert state(zk, "pref", 0).leader == 2
        lab.start_broker(1)
        wait_until(lambda: set(state(zk, "pref", 0).isr) == {1, 2}, what="broker 1 back in sync")
        assert state(zk, "pref", 0).leader == 2
        tool_writes.request_preferred_election(zk, [TopicPartition("pref", 0)])
        wait_until(lambda: state(zk, "pref", 0).leader == 1, what="preferred leader elected")
        wait_until(lambda: zk.exists(paths.PREFERRED_REPLICA_ELECTION) is None, what="request znode deleted")


def survivor_controller(zk: ZkClient) -> int | None:
    """The controller, once the other broker is gone; one read, so a change in between cannot mislead."""
    current = controller(zk)
    return current if current in (1, 2) and zk.exists(paths.broker(3 - current)) is None else None


def test_brokers_refuse_a_stale_controller_epoch(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=2) as lab, ZkClient(ZkSettings(zk_connect)) as zk:
        wait_until(lambda: controller(zk), what="a controller")
        lab.kill_broker(controller(zk))  # epoch 2 now reaches the survivor
        survivor = wait_until(lambda: survivor_controller(zk), what="the survivor is controller")
        wait_until(lambda: broker_status(zk, survivor)["controller"]["epoch"] == 2, what="failover done")
        with pytest.raises(RpcError, match="stale controller epoch 1"):
            call_registered_broker(zk, survivor, "controller_batch",
                                   {"controller_id": 9, "controller_epoch": 1, "stop_replica": [["x", 0, True]]})


def test_a_replaced_controller_cannot_write(zk: ZkClient) -> None:
    """ZooKeeper fencing: every multi-op checks /controller_epoch's version."""
    for path in paths.PERSISTENT_PATHS:
        zk.ensure_path(path)
    store = ControllerStore(zk)
    epoch, version = store.register_controller(7)
    assert (epoch, version) == (1, 1)
    tool_writes.create_topic(zk, "t", {0: (7,)})
    ctx, _view = store.load(7, epoch)
    zk.set(paths.CONTROLLER_EPOCH, b"2")  # a successor's election
    effects = Effects(states={TopicPartition("t", 0): LeaderState(7, 0, (7,), 0)},
                      created_states={TopicPartition("t", 0)})
    with pytest.raises(ControllerMoved):
        store.write(ctx, effects, version)
    assert zk.exists(paths.partition_state("t", 0)) is None


def test_lab_down_leaves_no_process(lab_dir: Path, zk_connect: str) -> None:
    with running_lab(lab_dir, zk_connect, brokers=2) as lab:
        pids = list(lab.state().pids.values())
    import os
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive, f"broker pid {pid} survived"
    assert signal.SIGKILL  # lab.down() kills; nothing else to clean


def test_brokers_write_log_dir_snapshots_and_apply_retention(lab_dir: Path, zk_connect: str) -> None:
    from kops.zk_layout.codecs.log_dirs import parse_log_dirs

    with running_lab(lab_dir, zk_connect, brokers=1, time_scale=300.0) as _lab, ZkClient(ZkSettings(zk_connect)) as zk:
        tool_writes.create_topic(zk, "capped", {0: (1,), 1: (1,)}, {"retention.bytes": str(1 * MB)})
        wait_until(lambda: state(zk, "capped", 1), what="partitions created")
        traffic.produce(zk, "capped", 6 * MB)
        wait_until(lambda: (r := replica(zk, 1, "capped", 0)) and r["end"] - r["start"] == MB, what="retention")

        def latest_sizes() -> dict[int, int] | None:
            files = sorted(lab_dir.joinpath("logdirs").glob("broker-1-*.json"),
                           key=lambda p: int(p.stem.rsplit("-", 1)[1]))
            if not files:
                return None
            report = parse_log_dirs(files[-1].read_text(), str(files[-1]))
            sizes = {r.partition: r.size for d in report.brokers[0].log_dirs for r in d.replicas if r.topic == "capped"}
            return sizes if sizes == {0: MB, 1: MB} else None

        assert wait_until(latest_sizes, timeout=30, what="a log-dir snapshot with the retained sizes")


def test_a_raced_state_znode_fails_only_its_own_partition(zk: ZkClient) -> None:
    """A leader's ISR write racing the controller rolls back a whole multi-op; the store resends that batch
    one partition per multi-op so only the raced partition is left to decide again."""
    from kops.lab.controller.store import StateConflict

    for path in paths.PERSISTENT_PATHS:
        zk.ensure_path(path)
    store = ControllerStore(zk, batch_ops=50)
    epoch, version = store.register_controller(1)
    tool_writes.create_topic(zk, "t", {p: (1,) for p in range(40)})
    ctx, _view = store.load(1, epoch)
    created = Effects(states={TopicPartition("t", p): LeaderState(1, 0, (1,), 0) for p in range(40)},
                      created_states={TopicPartition("t", p) for p in range(40)})
    store.write(ctx, created, version)
    zk.set(paths.partition_state("t", 7), b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}')
    bump = Effects(states={TopicPartition("t", p): LeaderState(1, 1, (1,), 0) for p in range(40)})
    with pytest.raises(StateConflict) as raised:
        store.write(ctx, bump, version)
    assert raised.value.partitions == {TopicPartition("t", 7)}
    assert len(raised.value.committed) == 39
    assert zk.get(paths.partition_state("t", 8)).stat.version == 1 and state(zk, "t", 8).leader_epoch == 1


def test_a_paused_broker_does_not_hold_up_the_controllers_other_decisions(tmp_path: Path, zk_connect: str) -> None:
    """Per-broker send queues: a broker that stopped answering (SIGSTOP, its session still alive) delays only
    its own requests. Before, each decision waited up to 30 s for it, so a second election came 30 s late."""
    with running_lab(tmp_path / "lab", zk_connect, brokers=3, time_scale=10.0, session_timeout=60.0) as lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        active = wait_until(lambda: controller(zk), what="a controller")
        quiet = max({1, 2, 3} - {active})  # never the controller: pausing it would stall everything
        a, b = sorted({1, 2, 3} - {quiet})
        tool_writes.create_topic(zk, "e", {0: (b, a), 1: (b, a)})
        wait_until(lambda: all(state(zk, "e", p) for p in (0, 1)), what="created")
        wait_until(lambda: all(set(state(zk, "e", p).isr) == {a, b} for p in (0, 1)), what="in sync")
        for p in (0, 1):  # make a the leader while b stays preferred: reorder, elect, reorder back
            tool_writes.start_reassignment(zk, [ReassignmentTarget("e", p, (a, b))])
            wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="reordered")
            tool_writes.request_preferred_election(zk, [TopicPartition("e", p)])
            wait_until(lambda p=p: state(zk, "e", p).leader == a, what="a leads")
            wait_until(lambda: zk.exists(paths.PREFERRED_REPLICA_ELECTION) is None, what="election done")
            tool_writes.start_reassignment(zk, [ReassignmentTarget("e", p, (b, a))])
            wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="preferred b again")
        assert all(state(zk, "e", p).leader == a for p in (0, 1))
        lab.pause_broker(quiet)  # holds nothing of "e", but every decision sends it UpdateMetadata
        try:
            for p in (0, 1):
                wait_until(lambda: zk.exists(paths.PREFERRED_REPLICA_ELECTION) is None, timeout=10, what="no election")
                tool_writes.request_preferred_election(zk, [TopicPartition("e", p)])
                wait_until(lambda p=p: state(zk, "e", p).leader == b, timeout=10,
                           what=f"e-{p}'s preferred leader elected while broker {quiet} is paused")
        finally:
            lab.resume_broker(quiet)
