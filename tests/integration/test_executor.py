"""`kops apply` / `status` / `cancel` / `rollback` on every lab engine: the kops engine and real Kafka 3.9.

Same test, same assertions; on real Kafka, Kafka is the judge: the layout kops reached is read back through
Kafka's Admin API too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.model import plan_format
from kops.model.plan import Batch, Plan
from kops.model.throttle_keys import ALL_KEYS
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.engines import EngineLab
from tests.labtools import state, wait_until, wait_while_running

pytestmark = pytest.mark.lab
MB = 1024 * 1024

ORIGINAL = {
    "pay": {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 2), 4: (2, 3), 5: (3, 1)},
    "logs": {0: (2, 1), 1: (3, 2), 2: (1, 3)},
}
PLAYBOOK = """- hosts: all
  topics:
    - {name: pay, replication_factor: 3, config: {retention.ms: "86400000"}}
    - {name: logs, replication_factor: 3}
  brokers: {decommission: [3]}
  execution: {throttle: 4MiB/s, batch: {max_partitions: 3}}
"""


def layout(zk: ZkClient) -> dict[str, dict[int, tuple[int, ...]]]:
    snap = read_snapshot(zk)
    return {name: {p: part.replicas for p, part in t.partitions.items()} for name, t in snap.topics.items()}


def throttle_configs(zk: ZkClient) -> dict[str, dict[str, str]]:
    snap = read_snapshot(zk)
    found = {f"topics/{n}": {k: v for k, v in t.config.items() if k in ALL_KEYS} for n, t in snap.topics.items()}
    found.update({f"brokers/{b}": {k: v for k, v in c.items() if k in ALL_KEYS} for b,
                  c in snap.broker_configs.items()})
    return {k: v for k, v in found.items() if v}


def judged(cluster: EngineLab, zk: ZkClient, expected: dict[str, dict[int, tuple[int, ...]]]) -> bool:
    """The layout in ZooKeeper is `expected`, and on real Kafka, Kafka's own metadata says so too."""
    assert layout(zk) == expected, layout(zk)
    if cluster.real:
        wait_until(lambda: cluster.judge_layout() == expected, timeout=30, what="Kafka's metadata to agree")
    return True


def make_plan(tmp_path: Path, zk_connect: str, throttle: str = "4MiB/s", playbook: str = PLAYBOOK,
              flag: str = "-z", *extra: str) -> tuple[Path, Plan]:
    """The playbook planned live against the cluster (`flag` -b: the same through the Admin API)."""
    pb = tmp_path / "pb.yml"
    pb.write_text(playbook.replace("4MiB/s", throttle))
    out = tmp_path / "plan.json"
    assert main(["plan", str(pb), flag, zk_connect, "-o", str(out), "--format", "json", *extra]) == 0
    return out, plan_format.loads(out.read_bytes(), str(out))


def targets(plan: Plan) -> dict[str, dict[int, tuple[int, ...]]]:
    out = {name: dict(a) for name, a in ORIGINAL.items()}
    for m in plan.moves:
        out[m.topic][m.partition] = m.to_replicas
    return out


def kops(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kops.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_multi_batch_plan_applies_end_to_end_then_rolls_back_exactly(tmp_path: Path, engine_lab, capsys) -> None:
    with engine_lab(time_scale=20.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        zk_connect = cluster.zk_connect
        cluster.create_and_fill(zk, ORIGINAL, 2)
        # the operator's own, above ours
        tool_writes.alter_config(zk, "brokers", "1", {"leader.replication.throttled.rate": "104857600"})
        plan_file, plan = make_plan(tmp_path, zk_connect)
        assert len(plan.batches) >= 2
        capsys.readouterr()
        assert main(["apply", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2"]) == 0
        events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        kinds = [e["event"] for e in events]
        assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("batch_done") == len(plan.batches)
        # bytes: KIP-179 lag on the kops engine; through ZooKeeper real Kafka reports no lag (partitions only)
        assert any(e["event"] == "progress" and (e["bytes_total"] > 0 or cluster.real) for e in events)
        assert judged(cluster, zk, targets(plan))
        assert tool_writes.read_config(zk, "topics", "pay")[0] == {"retention.ms": "86400000"}
        assert throttle_configs(zk) == {"brokers/1": {"leader.replication.throttled.rate": "104857600"}}  # kept
        leaders = {(m.topic, m.partition): m.to_replicas[0] for m in plan.moves}
        wait_until(lambda: all(state(zk, t, p).leader == leader for (t, p), leader in leaders.items()),
                   what="preferred leaders as planned")
        record = Journal(ZkRecords(zk)).latest()
        assert record.status == "done" and all(b.status == "done" for b in record.batches)
        assert (tmp_path / f"plan.{record.id}.execution.json").exists()
        assert zk.exists(paths.KOPS_LOCK) is None

        # rollback after a full apply: the exact original layout, replica order included
        assert main(["rollback", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2"]) == 0
        assert judged(cluster, zk, ORIGINAL)
        assert tool_writes.read_config(zk, "topics", "pay")[0] == {}  # the config found before is back
        assert throttle_configs(zk) == {"brokers/1": {"leader.replication.throttled.rate": "104857600"}}
        rolled = Journal(ZkRecords(zk)).latest()
        assert rolled.kind == "rollback" and rolled.of == record.id and rolled.status == "done"

        # a rollback of the rollback is the plan again
        assert main(["rollback", str(plan_file), "-z", zk_connect, "--yes", "--execution", rolled.id,
                     "--format", "json", "--poll", "0.2"]) == 0
        assert judged(cluster, zk, targets(plan))


def test_drift_lock_and_confirmation(tmp_path: Path, engine_lab, capsys) -> None:
    with engine_lab(time_scale=20.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        zk_connect = cluster.zk_connect
        cluster.create_and_fill(zk, ORIGINAL, 1)
        plan_file, _plan = make_plan(tmp_path, zk_connect)
        # without a terminal and without --yes: exit 1, nothing written
        assert main(["apply", str(plan_file), "-z", zk_connect]) == 1
        assert "pass --yes" in capsys.readouterr().err
        assert zk.exists(paths.KOPS_EXECUTIONS) is None or not zk.children(paths.KOPS_EXECUTIONS)
        # another holder: exit 5, naming it
        zk.ensure_path(paths.KOPS_ROOT)
        zk.create(paths.KOPS_LOCK,
                  json.dumps({"host": "elsewhere", "user": "ops", "pid": 1, "plan": "x.json"}).encode(),
                  ephemeral=True)
        assert main(["apply", str(plan_file), "-z", zk_connect, "--yes"]) == 5
        assert "ops@elsewhere" in capsys.readouterr().err
        zk.delete(paths.KOPS_LOCK)
        # a KRaft migration, or another cluster: exit 1
        zk.create(paths.MIGRATION, b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,'
                                   b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":-1}')
        assert main(["apply", str(plan_file), "-z", zk_connect, "--yes"]) == 1
        assert "migrating to KRaft" in capsys.readouterr().err
        zk.delete(paths.MIGRATION)
        other = plan_file.with_name("other.json")
        doc = json.loads(plan_file.read_text())
        doc["cluster_id"] = "AAAAAAAAAAAAAAAAAAAAAA"
        other.write_text(json.dumps(doc))
        assert main(["apply", str(other), "-z", zk_connect, "--yes"]) == 1
        assert "the plan was edited: header changed" in capsys.readouterr().err
        assert main(["apply", str(other), "-z", zk_connect, "--yes", "--accept-edited-plan"]) == 1
        assert "the plan is for AAAAAAAAAAAAAAAAAAAAAA" in capsys.readouterr().err
        # drift: exit 4, naming what changed
        tool_writes.add_partitions(zk, "logs", {3: (1, 2)})
        assert main(["apply", str(plan_file), "-z", zk_connect, "--yes"]) == 4
        assert "topic logs changed" in capsys.readouterr().err


def apply_in_background(plan_file: Path, zk_connect: str, *extra: str) -> subprocess.Popen:
    return kops("apply", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                "--session-timeout", "4", *extra)


def first_batch_running(process: subprocess.Popen, zk: ZkClient) -> None:
    """Wait up to 90 s (a kops apply starting under a load average of 20 once took over 30) for the first
    batch's reassignment znode; an apply that ends first, or never gets there, fails the test with its output."""
    wait_while_running(process, lambda: zk.exists(paths.REASSIGN_PARTITIONS) is not None, what="first batch running")


def resume(plan_file: Path, zk_connect: str) -> int:
    """The rest of an interrupted execution, at a rate that makes it quick: what a test checks after a resume is
    where the layout and the throttles end up, not how long the rest of the plan takes."""
    return main(["apply", "--resume", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                 "--session-timeout", "4", "--throttle", "20MiB/s"])


def batch_status(zk: ZkClient, index: int) -> str | None:
    record = Journal(ZkRecords(zk)).latest()
    return None if record is None else record.batch(index).status


@pytest.fixture
def slow_lab(tmp_path: Path, engine_lab):
    """4 brokers (kops engine at 2×) with 4 MB partitions under a 1 MiB/s throttle (real Kafka: 1 MB under
    256 KiB/s): a batch takes seconds. (At 4× a batch on the kops engine ended before a loaded machine's mid-batch
    checks did.)"""
    with engine_lab(time_scale=2.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        # real Kafka: a quarter of the bytes under a quarter of the throttle (a batch as long, 4× less to produce)
        cluster.create_and_fill(zk, ORIGINAL, 1 if cluster.real else 4)
        plan_file, plan = make_plan(tmp_path, cluster.zk_connect, throttle="256KiB/s" if cluster.real else "1MiB/s")
        yield cluster, zk, plan_file, plan


def test_sigint_once_stops_at_the_checkpoint_and_resume_finishes(engine: str, request: pytest.FixtureRequest) -> None:
    if engine != "kops":
        pytest.skip("a checkpoint stop is the executor's alone; on real Kafka, test_sigint_twice and the lost-lock "
                    "and health-stop tests stop at checkpoints too")
    cluster, zk, plan_file, plan = request.getfixturevalue("slow_lab")
    zk_connect = cluster.zk_connect
    proc = apply_in_background(plan_file, zk_connect)
    first_batch_running(proc, zk)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    record = Journal(ZkRecords(zk)).latest()
    assert record.status == "stopped" and record.batches[0].status == "done"
    assert all(b.status == "pending" for b in record.batches[1:])
    assert throttle_configs(zk) == {}  # restored at the checkpoint
    assert resume(plan_file, zk_connect) == 0
    assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}


def test_sigint_twice_cancels_the_batch_in_flight(slow_lab) -> None:
    cluster, zk, plan_file, plan = slow_lab
    zk_connect = cluster.zk_connect
    proc = apply_in_background(plan_file, zk_connect)
    first_batch_running(proc, zk)
    proc.send_signal(signal.SIGINT)
    seen = []
    for line in proc.stdout:  # the executor acknowledges the first interrupt at its next poll
        seen.append(line)
        if "interrupt again to cancel it" in line:
            break
    assert proc.poll() is None and zk.exists(paths.REASSIGN_PARTITIONS) is not None, "the batch is still in flight"
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    _out = "".join(seen) + rest
    assert proc.returncode == 3, err
    record = Journal(ZkRecords(zk)).latest()
    if cluster.real:  # Kafka 2.4+ cannot cancel through ZooKeeper: the batch finished, kops stopped at the checkpoint
        assert "cannot be cancelled" in _out and record.batches[0].status == "done"
        assert all(b.status == "pending" for b in record.batches[1:])
    else:
        assert record.batches[0].status == "cancelled"
    assert zk.exists(paths.REASSIGN_PARTITIONS) is None and throttle_configs(zk) == {}
    assert not read_snapshot(zk).in_flight()
    assert resume(plan_file, zk_connect) == 0
    assert judged(cluster, zk, targets(plan))


@pytest.mark.parametrize("when", ["mid-batch", "after-batch-before-checkpoint", "between-batches"])
def test_kill_9_then_resume_reaches_the_planned_layout(engine: str, request: pytest.FixtureRequest, when: str) -> None:
    if engine != "kops" and when != "mid-batch":
        pytest.skip("the record's three moments are the same on every engine: real Kafka takes the one in flight")
    cluster, zk, plan_file, plan = request.getfixturevalue("slow_lab")
    zk_connect = cluster.zk_connect
    first = {m.tp: m.to_replicas for m in plan.batches[0].moves}
    proc = apply_in_background(plan_file, zk_connect)
    if when == "mid-batch":
        first_batch_running(proc, zk)
    elif when == "after-batch-before-checkpoint":
        wait_until(lambda: all(layout(zk)[tp.topic][tp.partition] == r for tp, r in first.items()),
                   timeout=60, what="first batch's partitions at their targets")
    else:
        wait_until(lambda: batch_status(zk, 1) == "done", timeout=60, what="first batch recorded done")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert resume(plan_file, zk_connect) == 0
    assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}
    assert Journal(ZkRecords(zk)).latest().status == "done"


def test_resume_with_a_new_throttle_rethrottles_the_batch_in_flight(engine: str, tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    """`--resume --throttle` changes the rest of the execution, the batch that was in flight included (as
    re-running Kafka's tool with a new --throttle does): its brokers show the new rate while it still runs."""
    if engine != "kops":
        pytest.skip("the executor rewrites the rates through the same cluster port on every engine")
    with request.getfixturevalue("engine_lab")(time_scale=2.0) as cluster, \
            ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, ORIGINAL, 4)
        plan_file, plan = make_plan(tmp_path, cluster.zk_connect, throttle="256KiB/s")  # batch 1: 12 MB, ~24 s
        proc = apply_in_background(plan_file, cluster.zk_connect)
        first_batch_running(proc, zk)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        faster = str(plan.throttle_rate * 4)
        brokers = {f"brokers/{b}" for m in plan.batches[0].moves for b in m.from_replicas + m.adding}

        def rethrottled_in_flight() -> bool:
            found = throttle_configs(zk)
            return batch_status(zk, 1) == "running" and zk.exists(paths.REASSIGN_PARTITIONS) is not None and all(
                found.get(key, {}).get(name) == faster for key in brokers
                for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"))

        resumed = apply_in_background(plan_file, cluster.zk_connect, "--resume", "--throttle", faster)
        wait_until(rethrottled_in_flight, what="the batch in flight at the new rate")
        out, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err
        said = [json.loads(line).get("text", "") for line in out.splitlines() if line.startswith("{")]
        assert any("for the rest of this execution" in text and "3 moves in flight re-throttled" in text
                   for text in said), said
        assert Journal(ZkRecords(zk)).latest().rate == int(faster)
        assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}


def test_throttles_while_a_batch_runs_and_status_shows_them(slow_lab, tmp_path: Path, capsys) -> None:
    """Planned with a Cruise Control capacity file giving broker 4, which receives, a network in as large as the
    throttle: its limit (0.8 of it) caps broker 4's follower rate, written so while every other rate is the plan's."""
    cluster, zk, _plan_file, plan = slow_lab
    zk_connect = cluster.zk_connect
    rate = plan.throttle_rate
    assert rate is not None
    capacity = tmp_path / "capacity.json"
    capacity.write_text(json.dumps({"brokerCapacities": [{"brokerId": "4", "capacity": {"NW_IN": rate / 1024}}]}))
    (tmp_path / "capped").mkdir()
    plan_file, plan = make_plan(tmp_path / "capped", zk_connect, f"{rate // 1024}KiB/s", PLAYBOOK, "-z",
                                "--capacity", str(capacity))
    assert plan.batches[0].throttle.caps == {4: int(0.8 * rate)}
    proc = apply_in_background(plan_file, zk_connect)
    first_batch_running(proc, zk)
    mid_batch_checks(throttle_configs(zk), ("topics", "brokers"), plan.batches[0], str(plan_file),
                     ["-z", zk_connect], capsys)
    assert main(["cancel", "-z", zk_connect]) == 0  # stop at the next checkpoint
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert "kops cancel" in Journal(ZkRecords(zk)).latest().stop_reason and throttle_configs(zk) == {}


def mid_batch_checks(found: dict[str, dict[str, str]], kinds: tuple[str, str], batch: Batch, plan_file: str,
                     connection: list[str], capsys) -> None:
    """While `batch` runs: exactly its throttles are in force (`found`, keyed `KIND/entity`, with the transport's
    names for topic and broker entities in `kinds`), `kops status` shows the execution, a second apply is refused."""
    topic_kind, broker_kind = kinds
    for topic in {m.topic for m in batch.moves}:
        moves = [m for m in batch.moves if m.topic == topic]
        keys = found[f"{topic_kind}/{topic}"]
        assert set(keys["leader.replication.throttled.replicas"].split(",")) == {
            f"{m.partition}:{b}" for m in moves for b in m.from_replicas}
        assert set(keys["follower.replication.throttled.replicas"].split(",")) == {
            f"{m.partition}:{b}" for m in moves for b in m.adding}
    brokers = {b for m in batch.moves for b in m.from_replicas + m.adding}
    assert {int(k.split("/")[1]) for k in found if k.startswith(f"{broker_kind}/")} == brokers
    assert all(found[f"{broker_kind}/{b}"]["follower.replication.throttled.rate"]
               == str(batch.throttle.caps.get(b, batch.throttle.rate)) for b in brokers)
    assert all(found[f"{broker_kind}/{b}"]["leader.replication.throttled.rate"] == str(batch.throttle.rate)
               for b in brokers)
    capsys.readouterr()
    assert main(["status", *connection, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lock"]["plan"] == plan_file and doc["execution"]["status"] == "running"
    assert doc["in_flight"] and all(t["set_by"].startswith("kops ") for t in doc["throttles"])
    assert main(["apply", plan_file, *connection, "--yes"]) == 5  # two applies at once
    assert "applying" in capsys.readouterr().err


def test_a_broker_killed_mid_batch_is_a_health_stop_and_resume_finishes_after_it_returns(slow_lab) -> None:
    cluster, zk, plan_file, plan = slow_lab
    zk_connect = cluster.zk_connect
    proc = apply_in_background(plan_file, zk_connect)
    first_batch_running(proc, zk)
    victim = next(b for m in plan.batches[0].moves for b in m.adding)
    cluster.lab.kill_broker(victim)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    reason = Journal(ZkRecords(zk)).latest().stop_reason
    # the stop names the partitions of the batch that wait on the departed broker (those not at their target yet)
    named = re.search(rf"health stop in batch 1: broker {victim} of the batch left the cluster; \d+ partition\(s\) "
                      r"of the batch wait on it: (.+?)(, \.\.\. \(first 5\))?; the batch stays", reason)
    assert named is not None, reason
    assert set(named[1].split(", ")) <= {str(m.tp) for m in plan.batches[0].moves if victim in m.to_replicas}, reason
    cluster.lab.start_broker(victim)
    wait_until(lambda: victim in read_snapshot(zk).live_broker_ids, what="broker back")
    assert resume(plan_file, zk_connect) == 0
    assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}
    assert not read_snapshot(zk).offline()


def test_controller_failover_mid_batch_does_not_disturb_the_execution(slow_lab) -> None:
    cluster, zk, plan_file, plan = slow_lab
    zk_connect = cluster.zk_connect
    proc = apply_in_background(plan_file, zk_connect)
    first_batch_running(proc, zk)
    epoch = read_snapshot(zk).controller.epoch
    zk.delete(paths.CONTROLLER)  # the controller resigns; the brokers elect a new one, which resumes the moves
    wait_until(lambda: (c := read_snapshot(zk).controller).epoch is not None and c.epoch > epoch, what="new controller")
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}


def test_cancel_now_cancels_the_batch_in_flight_and_rollback_after_a_partial_apply(slow_lab, capsys) -> None:
    cluster, zk, plan_file, _plan = slow_lab
    zk_connect = cluster.zk_connect
    proc = apply_in_background(plan_file, zk_connect)
    wait_until(lambda: batch_status(zk, 1) == "done", timeout=90, what="first batch done")
    wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is not None, what="second batch running")
    assert main(["cancel", "-z", zk_connect, "--now"]) == 0
    said = capsys.readouterr().err
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    record = Journal(ZkRecords(zk)).latest()
    if cluster.real:  # no KIP-236 on real Kafka: `--now` says so, the batch finishes, kops stops at the checkpoint
        assert "cannot cancel a batch in flight" in said
        assert record.batches[1].status == "done" and "kops cancel" in record.stop_reason
    else:
        assert record.batches[1].status == "cancelled" and "KIP-236" in record.stop_reason
    assert zk.exists(paths.REASSIGN_PARTITIONS) is None and throttle_configs(zk) == {}
    # the rollback at a rate of its own (the apply's 256 KiB/s would take a minute on real Kafka)
    assert main(["rollback", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"]) == 0
    assert Journal(ZkRecords(zk)).latest().rate == 20 * MB
    assert judged(cluster, zk, ORIGINAL) and throttle_configs(zk) == {}


def test_an_apply_that_lost_its_lock_stops_writing_and_the_new_holder_finishes(slow_lab) -> None:
    cluster, zk, plan_file, plan = slow_lab
    zk_connect = cluster.zk_connect
    first = apply_in_background(plan_file, zk_connect)  # session timeout 4 s
    first_batch_running(first, zk)
    owner = zk.exists(paths.KOPS_LOCK).ephemeral_owner
    assert batch_status(zk, 1) == "running", "the first apply is mid-batch when it is paused"
    os.kill(first.pid, signal.SIGSTOP)  # a long GC pause: its session expires, and the lock with it
    try:
        wait_until(lambda: (s := zk.exists(paths.KOPS_LOCK)) is None or s.ephemeral_owner != owner, timeout=30,
                   what="the paused apply's lock to expire")
        second = apply_in_background(plan_file, zk_connect, "--resume", "--throttle", "20MiB/s")  # quick, as resume()
        wait_until(lambda: (s := zk.exists(paths.KOPS_LOCK)) is not None and s.ephemeral_owner != owner,
                   what="the second apply to take the lock")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _out, err = first.communicate(timeout=120)
    assert first.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "the cluster lock was lost" in lines[0] and "kops apply --resume" in lines[0], err
    _out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    record = Journal(ZkRecords(zk)).latest()
    assert record.status == "done" and all(b.status == "done" for b in record.batches)
    assert judged(cluster, zk, targets(plan)) and throttle_configs(zk) == {}
    assert zk.exists(paths.KOPS_LOCK) is None


def test_a_batch_without_progress_stops_naming_what_each_partition_waits_for(tmp_path: Path, zk_connect: str,
                                                                             capsys, monkeypatch) -> None:
    """A hung broker (SIGSTOP, its ZooKeeper session kept alive by a long timeout): registered, copying nothing.
    kops status (run in this process) calls a batch stalled after 10 quiet seconds instead of its 30, and the apply
    stops after 16 instead of 35: the same events in the same order, 6 s apart (5 before), 20 s sooner."""
    from tests.engines import EngineLab
    from tests.labtools import running_lab

    monkeypatch.setattr("kops.cli.status.STALLED_AFTER_SECONDS", 10)

    with running_lab(tmp_path / "lab", zk_connect, brokers=4, time_scale=4.0, session_timeout=120.0) as lab, \
            ZkClient(ZkSettings(zk_connect)) as zk:
        EngineLab("kops", lab, zk_connect).create_and_fill(zk, ORIGINAL, 4)
        plan_file, plan = make_plan(tmp_path, zk_connect, throttle="1MiB/s")
        first = plan.batches[0].moves
        # Broker 4 holds no replica yet, so hanging it under-replicates nothing outside the batch (that would be a
        # health stop, not a stall); it must not be the controller, which has to act on the request.
        victim = 4
        _controller_other_than(zk, victim)
        stuck_tps = {str(m.tp) for m in first if victim in m.adding}
        assert stuck_tps
        slow = kops("apply", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                    "--stall-timeout", "16")
        first_batch_running(slow, zk)
        assert batch_status(zk, 1) == "running"
        lab.pause_broker(victim)
        try:
            wait_until(lambda: _stalled_while_running(slow, zk_connect, capsys), timeout=240,
                       what="kops status to call the batch stalled")
            out, err = slow.communicate(timeout=120)
        finally:
            lab.resume_broker(victim)
        assert slow.returncode == 3, err
        record = Journal(ZkRecords(zk)).latest()
        assert "stalled: no progress for" in record.stop_reason
        assert throttle_configs(zk)  # the batch stays with the controller, throttled, until resume or rollback
        stuck = [json.loads(line)["text"] for line in out.splitlines() if '"stalled"' in line]
        assert {line.split(":")[0] for line in stuck} == stuck_tps, stuck
        assert all(f"waits for broker {victim} to join the ISR (broker {victim} is alive)" in line for line in stuck)
        assert resume(plan_file, zk_connect) == 0 and layout(zk) == targets(plan) and throttle_configs(zk) == {}


def _controller_other_than(zk: ZkClient, broker: int) -> None:
    """Make the controller resign until another broker wins the election."""
    from tests.labtools import controller

    for _attempt in range(20):
        current = wait_until(lambda: controller(zk), what="a controller")
        if current != broker:
            return
        epoch = read_snapshot(zk).controller.epoch
        zk.delete(paths.CONTROLLER)
        wait_until(lambda before=epoch: (c := read_snapshot(zk).controller).epoch is not None and c.epoch > before,
                   what="a new controller")
    raise AssertionError(f"broker {broker} won 20 controller elections in a row")


def _stalled_while_running(apply: subprocess.Popen, zk_connect: str, capsys) -> int | None:
    """kops status's stalled_seconds, while the apply still runs. The quiet starts when the batch's other moves
    finish copying (tens of seconds on a loaded machine), so only the apply's own stop bounds the wait."""
    stalled = _status(zk_connect, capsys)["execution"].get("stalled_seconds")
    if stalled is None and apply.poll() is not None:
        raise AssertionError(f"the apply ended (exit {apply.returncode}) before kops status called the batch stalled")
    return stalled


def _status(zk_connect: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["status", "-z", zk_connect, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)
