"""The executor's lab tests through the Admin API (`-b`), twins of test_executor.py and test_rebalance.py:
checkpoints, refusals, throttles and status mid-batch, health stops, controller failover and rebalance, on real
Kafka 4 (KRaft) and on real Kafka 3.9 reached through its brokers. Kafka is the judge: layouts, configs and
throttles are read back through the Admin API, records through the `__kops` topic.

One cluster per engine for the whole module, emptied between tests (tests/conftest.py: admin_engine).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from kafka import TopicPartition as KafkaTP

from kops.cli.main import main
from kops.lab.kafka_client import create_topics, first_answer, layout
from kops.model.plan import Move
from kops.zk_layout.client import ZkClient, ZkSettings
from tests.engines import EngineLab
from tests.integration.test_admin_transport import (
    apply_in_flight,
    create_and_fill,
    kafka4_only,
    latest_record,
    make_plan,
    replicas,
    throttles,
    topic_config,
    wait_in_flight,
)
from tests.integration.test_executor import ORIGINAL, kops, mid_batch_checks, targets, throttle_configs
from tests.integration.test_rebalance import SKEWED
from tests.labtools import settles, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024


def resume(plan_file: Path, bootstrap: str) -> int:
    return main(["apply", "--resume", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"])


def in_flight(bootstrap: str) -> bool:
    return bool(first_answer(bootstrap, lambda c: c.list_partition_reassignments()))


def test_sigint_once_stops_at_the_checkpoint_and_resume_finishes(tmp_path: Path, admin_engine: EngineLab,
                                                                 request: pytest.FixtureRequest) -> None:
    bootstrap = kafka4_only(admin_engine, request, "a checkpoint stop is the executor's, through the same transport "
                                                   "on every engine: tested once, on Kafka 4")
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s")
    assert latest_record(bootstrap).batches[0].status == "running"  # type: ignore[union-attr]  # in flight
    applying.send_signal(signal.SIGINT)
    _out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3, err
    record = latest_record(bootstrap)
    assert record is not None and record.status == "stopped" and record.batches[0].status == "done"
    assert all(b.status == "pending" for b in record.batches[1:])
    assert not in_flight(bootstrap) and settles(lambda: throttles(bootstrap), {})  # restored at the checkpoint
    assert resume(plan_file, bootstrap) == 0
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the targets")
    assert settles(lambda: throttles(bootstrap), {})


def test_refusals_confirmation_another_cluster_and_drift(tmp_path: Path, admin_cluster: EngineLab, capsys) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    create_and_fill(bootstrap, 0.2)
    plan_file, _plan = make_plan(tmp_path, bootstrap, "4MiB/s")
    # without a terminal and without --yes: exit 1, nothing written (no record, no lease)
    assert main(["apply", str(plan_file), "-b", bootstrap]) == 1
    assert "pass --yes" in capsys.readouterr().err
    assert latest_record(bootstrap) is None and not in_flight(bootstrap)
    # another cluster: exit 1, naming the plan's
    other = plan_file.with_name("other.json")
    doc = json.loads(plan_file.read_text())
    doc["cluster_id"] = "AAAAAAAAAAAAAAAAAAAAAA"
    other.write_text(json.dumps(doc))
    assert main(["apply", str(other), "-b", bootstrap, "--yes", "--accept-edited-plan"]) == 1
    assert "the plan is for AAAAAAAAAAAAAAAAAAAAAA" in capsys.readouterr().err
    # drift: exit 4, naming what changed, and nothing moved
    before = replicas(bootstrap)
    first_answer(bootstrap, lambda c: c.create_partitions({"logs": _new_partitions(4, [[1, 2]])}))
    wait_until(lambda: len(layout(bootstrap)["logs"]) == 4, what="a partition added behind the plan's back")
    assert main(["apply", str(plan_file), "-b", bootstrap, "--yes"]) == 4
    assert "topic logs changed" in capsys.readouterr().err
    assert {t: a for t, a in replicas(bootstrap).items() if t == "pay"} == {"pay": before["pay"]}
    assert not in_flight(bootstrap) and settles(lambda: throttles(bootstrap), {})


def _new_partitions(total: int, assignments: list[list[int]]):  # type: ignore[no-untyped-def]  # kafka-python's type
    from kafka.admin import NewPartitions

    return NewPartitions(total_count=total, new_assignments=assignments)


def test_throttles_while_a_batch_runs_status_shows_them_and_cancel_stops_at_the_checkpoint(
        tmp_path: Path, admin_cluster: EngineLab, capsys) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s")
    mid_batch_checks(throttles(bootstrap), ("topic", "broker"), plan.batches[0], str(plan_file), ["-b", bootstrap],
                     capsys)
    assert main(["cancel", "-b", bootstrap]) == 0  # stop at the next checkpoint
    _out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3, err
    record = latest_record(bootstrap)
    assert record is not None and "kops cancel" in (record.stop_reason or "") and record.batches[0].status == "done"
    assert not in_flight(bootstrap) and settles(lambda: throttles(bootstrap), {})


def test_a_broker_killed_mid_batch_is_a_health_stop_and_resume_finishes_after_it_returns(
        tmp_path: Path, admin_cluster: EngineLab) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s", "--session-timeout", "30")
    # a destination of the batch in flight, not broker 1 (Kafka 4's single quorum controller)
    victim = next(b for m in plan.batches[0].moves for b in m.adding if b != 1)
    admin_cluster.lab.kill_broker(victim)
    out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3 and ("health stop" in out or "not registered" in out), err
    admin_cluster.lab.start_broker(victim)
    wait_until(lambda: all(set(row["isr"]) == set(row["replicas"]) for t in ORIGINAL
                           for row in layout(bootstrap)[t].values()), timeout=120, what="in sync again")
    assert resume(plan_file, bootstrap) == 0
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the targets")
    assert settles(lambda: throttles(bootstrap), {})


def test_controller_failover_mid_batch_does_not_disturb_the_execution(tmp_path: Path, admin_engine: EngineLab,
                                                                     request: pytest.FixtureRequest) -> None:
    """Kafka 3.9: the ZooKeeper controller resigns mid-batch; the new one carries the KIP-455 moves on, and kops,
    which only talks to brokers, never notices. (Kafka 4's lab has a single quorum controller.)"""
    if admin_engine.engine != "kafka-3.9":
        pytest.skip("the lab's Kafka 4 runs one quorum controller: nothing to fail over to")
    from kops.zk_layout import paths
    from kops.zk_layout.client import ZkClient, ZkSettings
    from kops.zk_layout.reader import read_snapshot

    cluster: EngineLab = request.getfixturevalue("admin_cluster")
    bootstrap = cluster.bootstrap
    assert bootstrap is not None
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s")
    with ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        epoch = read_snapshot(zk).controller.epoch
        assert epoch is not None and in_flight(bootstrap)
        zk.delete(paths.CONTROLLER)
        wait_until(lambda: (e := read_snapshot(zk).controller.epoch) is not None and e > epoch, what="new controller")
    _out, err = applying.communicate(timeout=180)
    assert applying.returncode == 0, err
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the targets")
    assert settles(lambda: throttles(bootstrap), {})


def _fill_skewed(bootstrap: str, megabytes: float) -> None:
    from kops.lab.kafka_client import produce

    spec = {name: {"assignments": {p: list(r) for p, r in a.items()}} for name, a in SKEWED.items()}
    create_topics(bootstrap, spec)
    wait_until(lambda: all(p["leader"] >= 0 for p in layout(bootstrap).get("pay", {0: {"leader": -1}}).values()),
               timeout=60, what="leaders elected")
    for p in SKEWED["pay"]:
        wait_until(lambda p=p: produce(bootstrap, "pay", int(megabytes * MB), p) > 0, timeout=60,
                   what=f"pay-{p} produced")


def _throttle_foreign_move(bootstrap: str, rate: str | None) -> None:
    """Another operator's throttle on pay-0's new replica on broker 4 (`rate` None: removed)."""
    from kafka.admin import ConfigResource

    op = ("SET", rate) if rate else ("DELETE", None)
    first_answer(bootstrap, lambda c: c.alter_configs([
        ConfigResource("TOPIC", "pay", configs={"follower.replication.throttled.replicas": (op[0], rate and "0:4")}),
        ConfigResource("BROKER", "4", configs={"follower.replication.throttled.rate": op})],
        incremental=True, raise_on_unknown=False))


def _apply_refused_through_zookeeper(zk_connect: str, tmp_path: Path, capsys) -> None:
    """A plan of another partition applied through ZooKeeper while a reassignment made through the Admin API runs
    (which kops through -z sees in pay-0's topic znode only, not in /admin/reassign_partitions): refused before
    anything is written, as the two would share the brokers' throttle rates and restore each other's."""
    proposal, plan_file = tmp_path / "other.json", tmp_path / "other-plan.json"
    proposal.write_text(json.dumps({"version": 1, "partitions": [{"topic": "pay", "partition": 1,
                                                                  "replicas": [4, 3]}]}))
    assert main(["plan", "--import-kafka", str(proposal), "-z", zk_connect, "-o", str(plan_file),
                 "--allow-in-flight"]) == 0
    capsys.readouterr()
    assert main(["apply", str(plan_file), "-z", zk_connect, "--yes"]) == 1
    err = capsys.readouterr().err
    assert "that is not this execution's is in progress (pay-0 among them)" in err, err
    with ZkClient(ZkSettings(zk_connect)) as zk:  # the other operator's throttle only: nothing of kops's
        assert throttle_configs(zk) == {"topics/pay": {"follower.replication.throttled.replicas": "0:4"},
                                        "brokers/4": {"follower.replication.throttled.rate": "1024"}}


def test_rebalance_noop_refusal_while_reassigning_and_sigterm(tmp_path: Path, admin_cluster: EngineLab,
                                                               capsys) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    _fill_skewed(bootstrap, 1)
    base = ["rebalance", "-b", bootstrap, "--format", "json"]
    # below the threshold: 2 moves buy 2/16 = 0.125 < 0.2
    assert main([*base, "--max-moves", "2", "--min-improvement", "0.2"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["status"] == "noop" and doc["plan"] is None and "below --min-improvement 0.2" in doc["reason"]
    # a reassignment someone else started, held back by their own throttle (more than one fetch of data, or the
    # first fetch, which no quota stops, would finish it): refused, nothing written
    from kops.lab.kafka_client import produce

    wait_until(lambda: produce(bootstrap, "pay", 4 * MB, 0) > 0, timeout=60, what="pay-0 grown past one fetch")
    _throttle_foreign_move(bootstrap, "1024")
    wait_until(lambda: throttles(bootstrap).get("broker/4", {}).get("follower.replication.throttled.rate") == "1024",
               what="their throttle in force on broker 4")
    first_answer(bootstrap, lambda c: c.alter_partition_reassignments({KafkaTP("pay", 0): [4, 2]}))
    try:
        wait_until(lambda: in_flight(bootstrap), what="their reassignment in flight")
        out_file = tmp_path / "refused.json"
        assert main([*base, "--min-improvement", "0.01", "-o", str(out_file)]) == 3
        captured = capsys.readouterr()
        assert json.loads(captured.out.strip().splitlines()[-1])["status"] == "refused"
        assert "is in flight (pay-0)" in captured.err and not out_file.exists()
        if admin_cluster.zk_connect:  # through ZooKeeper, a KIP-455 reassignment is in the topic znode alone
            _apply_refused_through_zookeeper(admin_cluster.zk_connect, tmp_path, capsys)
    finally:
        _throttle_foreign_move(bootstrap, None)
    wait_until(lambda: not in_flight(bootstrap), timeout=120, what="their reassignment done")
    # SIGTERM mid-batch (cron's stop): the batch finishes, then a checkpoint stop; resume finishes the rest
    plan_file = tmp_path / "cron.json"
    proc = kops("rebalance", "-b", bootstrap, "--apply", "--yes", "--format", "json", "--poll", "0.2",
                "--throttle", "256KiB/s", "--batch-size", "1", "--min-improvement", "0.01", "-o", str(plan_file))
    wait_in_flight(bootstrap, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 3, err
    assert json.loads(out.strip().splitlines()[-1])["status"] == "stopped"
    record = latest_record(bootstrap)
    assert record is not None and record.status == "stopped"
    statuses = [b.status for b in record.batches]
    done = statuses.count("done")
    assert done >= 1 and statuses == ["done"] * done + ["pending"] * (len(statuses) - done), statuses
    assert not in_flight(bootstrap) and settles(lambda: throttles(bootstrap), {})
    assert resume(plan_file, bootstrap) == 0
    assert settles(lambda: throttles(bootstrap), {})



def back_in_order(bootstrap: str, moves: list[Move]) -> list[Move]:
    """Kafka's view after a cancellation: each of `moves` at its target (completed) or on its original replicas in
    their original order, led by its preferred (first) replica. The moves not at their target."""
    now = layout(bootstrap)
    back = [m for m in moves if now[m.topic][m.partition]["replicas"] != m.to_replicas]
    assert {m.tp: now[m.topic][m.partition]["replicas"] for m in back} == {m.tp: m.from_replicas for m in back}, \
        "original replicas, in their original order"
    assert all(now[m.topic][m.partition]["leader"] == m.from_replicas[0] for m in back), \
        "each led by its preferred (first) replica"
    return back


def order_restored(out: str) -> dict:
    """The one `order_restored` event of a run's JSON lines."""
    said = [e for e in map(json.loads, (line for line in out.splitlines() if line.startswith("{")))
            if e["event"] == "order_restored"]
    assert len(said) == 1 and not said[0]["left"], out
    return said[0]


def test_cancel_now_leaves_each_partition_in_its_original_order_led_by_its_preferred_leader_then_rollback(
        tmp_path: Path, admin_cluster: EngineLab) -> None:
    """KIP-455 returns a cancelled partition to its original replica set but not to its order (Kafka keeps the
    order the reassignment had: logs-1 [3, 2] came back as [2, 3] on both engines before kops put it back); kops
    restores the order (a leader-only reassignment) and elects the preferred leaders before it reports the stop."""
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "128KiB/s")
    assert main(["cancel", "-b", bootstrap, "--now"]) == 0
    out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3, err
    assert "cancelled in flight (KIP-455)" in out + err
    assert not in_flight(bootstrap)
    cancelled = back_in_order(bootstrap, list(plan.batches[0].moves))
    assert cancelled, "a throttled batch of 1 MB partitions is still copying when it is cancelled"
    assert order_restored(out)["partitions"] == len(cancelled)
    assert settles(lambda: throttles(bootstrap), {})  # the cancelled batch's throttles went with it
    record = latest_record(bootstrap)
    assert record is not None and record.status == "stopped"
    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"]) == 0  # a rate of its own: the apply's 128 KiB/s is slow
    rolled = latest_record(bootstrap)
    assert rolled is not None and rolled.kind == "rollback" and rolled.rate == 20 * MB
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout")
    assert settles(lambda: throttles(bootstrap), {}) and settles(lambda: topic_config(bootstrap, "pay"), {})


def test_a_rolling_cancel_now_and_a_rollback_of_a_killed_apply_keep_replica_order(
        tmp_path: Path, admin_engine: EngineLab, request: pytest.FixtureRequest) -> None:
    """The other two KIP-455 cancellations: the rolling executor's (`kops cancel --now`) and a rollback's step 0
    (the apply killed with a batch in flight). Kafka 4 only: the cancellation is one function, tested on both
    engines above."""
    bootstrap = kafka4_only(admin_engine, request, "the same cancellation as test_cancel_now_leaves_..., on Kafka 4")
    create_and_fill(bootstrap, 1)
    plan_file, plan = make_plan(tmp_path, bootstrap, "128KiB/s")
    applying = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                    "--rolling", "--max-moves-per-broker", "2")
    wait_in_flight(bootstrap, applying)
    assert main(["cancel", "-b", bootstrap, "--now"]) == 0
    out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3 and "cancelled in flight (KIP-455)" in out + err, err
    back_in_order(bootstrap, list(plan.moves))
    assert order_restored(out)["partitions"] >= 1 and settles(lambda: throttles(bootstrap), {})
    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"]) == 0
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout")
    # a batch apply killed mid-batch: the rollback cancels the batch it left in flight, in order, first
    (tmp_path / "second").mkdir()
    plan_file, _plan = make_plan(tmp_path / "second", bootstrap, "120KiB/s")  # another plan: the first was stopped
    killed = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                  "--session-timeout", "6")
    wait_in_flight(bootstrap, killed)
    killed.kill()
    killed.wait()
    rollback = kops("rollback", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                    "--throttle", "20MiB/s")
    out, err = rollback.communicate(timeout=180)
    assert rollback.returncode == 0, err
    assert order_restored(out)["partitions"] >= 1
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout")
    assert settles(lambda: throttles(bootstrap), {})
