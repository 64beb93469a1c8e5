"""`kops rebalance` as cron runs it (no terminal), on every lab engine: the kops engine and real Kafka 3.9."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.model import plan_format
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.codecs.admin_requests import ReassignmentTarget
from kops.zk_layout.reader import read_snapshot
from tests.integration.test_executor import judged, kops, layout, throttle_configs
from tests.labtools import wait_until
from tests.unit.test_run_metrics import only, parsed

pytestmark = pytest.mark.lab
MB = 1024 * 1024
# Brokers 1-3 hold everything, broker 4 (rack r0, with broker 1) holds nothing.
SKEWED = {"pay": {p: ((p % 3) + 1, ((p + 1) % 3) + 1) for p in range(8)}}


def summary(out: str) -> dict:
    """The last line of stdout: the run's one JSON object."""
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def skewed_lab(engine_lab):
    with engine_lab(time_scale=4.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, SKEWED, 2)
        yield cluster, zk


def ended(prom: Path, outcome: str, exit_code: int, **labels: str) -> dict:
    """The metrics file (--metrics-file) of the last run, which ended as said."""
    metrics = parsed(prom.read_text())
    assert only(metrics["kops_last_run_outcome"], outcome=outcome, **labels) == 1
    assert only(metrics["kops_last_run_exit_code"]) == exit_code
    return metrics


def imbalance(metrics: dict) -> tuple[float, float]:
    return (only(metrics["kops_last_run_imbalance_before_ratio"], goal="replicas"),
            only(metrics["kops_last_run_imbalance_after_ratio"], goal="replicas"))


def replica_counts(zk: ZkClient) -> dict[int, int]:
    counts: dict[int, int] = {}
    for assignment in layout(zk).values():
        for replicas in assignment.values():
            for b in replicas:
                counts[b] = counts.get(b, 0) + 1
    return counts


def test_noop_below_threshold_refusal_while_reassigning_then_a_bounded_apply(skewed_lab, tmp_path: Path,
                                                                             capsys) -> None:
    cluster, zk = skewed_lab
    lab, zk_connect = cluster.lab, cluster.zk_connect
    before = layout(zk)
    base = ["rebalance", "-z", zk_connect, "--format", "json"]

    # Below the threshold: 16 replicas, 4 above the fair share; 2 moves buy 2/16 = 0.125 < 0.2.
    prom = tmp_path / "kops-rebalance.prom"
    base += ["--metrics-file", str(prom)]
    assert main(base + ["--max-moves", "2", "--min-improvement", "0.2"]) == 0
    doc = summary(capsys.readouterr().out)
    assert doc["status"] == "noop" and doc["applied"] is False and doc["moves"] == 0 and doc["plan"] is None
    assert doc["imbalance_before"] == 0.25 and "below --min-improvement 0.2" in doc["reason"]
    assert layout(zk) == before
    assert imbalance(ended(prom, "noop", 0, cluster=zk_connect, command="rebalance")) == (0.25, 0.25)

    # A reassignment in flight (someone else's, onto a broker that is down, so it cannot finish under us):
    # refused with exit 3 and the reason, nothing written.
    lab.stop_broker(4)
    tool_writes.start_reassignment(zk, [ReassignmentTarget("pay", 0, (4, 2))])
    wait_until(lambda: read_snapshot(zk).in_flight(), what="a reassignment running")
    out_file = tmp_path / "refused.json"
    assert main(base + ["-o", str(out_file)]) == 3
    captured = capsys.readouterr()
    assert summary(captured.out)["status"] == "refused" and "is in flight (pay-0)" in captured.err
    assert not out_file.exists() and zk.exists(paths.KOPS_LOCK) is None
    assert "kops_last_run_imbalance_before_ratio" not in ended(prom, "refused", 3)  # refused before measuring
    lab.start_broker(4)
    wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, timeout=60, what="their reassignment done")
    wait_until(lambda: not read_snapshot(zk).under_replicated(), what="in sync")

    # Within limits, applied: at most 2 replica moves, then the summary object.
    plan_file = tmp_path / "rebalance.json"
    counts_before = replica_counts(zk)
    assert main(base + ["--max-moves", "2", "--min-improvement", "0.01", "--apply", "--yes", "--poll", "0.2",
                        "-o", str(plan_file)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    doc = json.loads(lines[-1])
    assert json.loads(lines[0])["event"] == "start"  # the executor's event lines come first
    assert doc["status"] == "applied" and doc["applied"] is True and 1 <= doc["moves"] <= 2
    assert doc["imbalance_after"] < doc["imbalance_before"] and doc["duration_seconds"] > 0
    assert doc["plan"] == str(plan_file) and doc["execution"] == Journal(ZkRecords(zk)).latest().id
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert plan.summary.moves == doc["moves"]
    counts_after = replica_counts(zk)
    assert counts_after.get(4, 0) - counts_before.get(4, 0) == doc["moves"]
    assert throttle_configs(zk) == {} and zk.exists(paths.KOPS_LOCK) is None
    metrics = ended(prom, "applied", 0)
    assert [only(metrics[f"kops_last_run_{n}_moves"], kind="replica") for n in ("planned", "completed")] == [
        doc["moves"]] * 2 and imbalance(metrics) == (doc["imbalance_before"], doc["imbalance_after"])

    # It can be rolled back like any plan, and applied again with kops apply.
    assert main(["rollback", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                 "--metrics-file", str(prom)]) == 0
    assert replica_counts(zk) == counts_before
    assert judged(cluster, zk, layout(zk))
    assert only(ended(prom, "applied", 0, command="rollback")["kops_last_run_completed_moves"], kind="replica") == doc[
        "moves"]  # the rollback's own moves: each one back
    prom = tmp_path / "kops-apply.prom"
    assert main(["apply", str(plan_file), "-z", zk_connect, "--yes", "--format", "json", "--poll", "0.2",
                 "--metrics-file", str(prom)]) == 0
    assert replica_counts(zk) == counts_after
    metrics = ended(prom, "applied", 0, command="apply")
    assert only(metrics["kops_last_run_completed_moves"], kind="replica") == doc["moves"]
    assert "kops_last_run_imbalance_before_ratio" not in metrics


def test_sigterm_stops_at_the_next_checkpoint(skewed_lab, tmp_path: Path) -> None:
    cluster, zk = skewed_lab
    zk_connect = cluster.zk_connect
    plan_file = tmp_path / "cron.json"
    # One partition per batch at 1 MiB/s: the first batch takes a few real seconds; SIGTERM arrives in it.
    prom = tmp_path / "kops-rebalance.prom"
    proc = kops("rebalance", "-z", zk_connect, "--apply", "--yes", "--format", "json", "--poll", "0.2",
                "--throttle", "1MiB/s", "--batch-size", "1", "--min-improvement", "0.01", "-o", str(plan_file),
                "--metrics-file", str(prom))
    wait_until(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is not None, timeout=90, what="first batch running")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    doc = summary(out)
    assert doc["status"] == "stopped" and doc["applied"] is False and doc["moves"] >= 2
    record = Journal(ZkRecords(zk)).latest()
    statuses = [b.status for b in record.batches]
    finished = statuses.count("done")
    # Stopped at a checkpoint: the batches up to the signal done, every later one never started.
    assert record.status == "stopped" and finished >= 1 and statuses == ["done"] * finished + ["pending"] * (
        len(statuses) - finished), statuses
    assert throttle_configs(zk) == {} and zk.exists(paths.KOPS_LOCK) is None
    completed = ended(prom, "stopped", 3)["kops_last_run_completed_moves"]  # the batches done before the stop
    assert only(completed, kind="replica") == sum(len(m.adding) for b in record.batches if b.status == "done"
                                                  for m in b.moves) >= 1
    now = layout(zk)
    for index in range(finished):
        assert all(now[m.topic][m.partition] == m.to_replicas for m in record_moves(plan_file, index))
    # Resuming finishes the rest, like any apply.
    assert main(["apply", "--resume", str(plan_file), "-z", zk_connect, "--yes", "--format", "json",
                 "--poll", "0.2", "--throttle", "20MiB/s"]) == 0
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    expected = {t: dict(a) for t, a in SKEWED.items()}
    for m in plan.moves:
        expected[m.topic][m.partition] = m.to_replicas
    assert judged(cluster, zk, expected)


def record_moves(plan_file: Path, batch: int):
    return plan_format.loads(plan_file.read_bytes(), str(plan_file)).batches[batch].moves


def test_a_goal_list_applied_then_the_same_goals_move_nothing(skewed_lab, tmp_path: Path, capsys) -> None:
    """`kops rebalance --goals disk,replicas --apply` on the skewed cluster (broker 4 empty), the layout read back
    (and, on Kafka, as Kafka reports it), then the same goals again: nothing left to move (docs/design/goals.md §5:
    the walk ends at a fixed point)."""
    cluster, zk = skewed_lab
    sizes = tmp_path / "sizes.json"  # what create_and_fill wrote: 2 MiB per partition
    sizes.write_text(json.dumps({f"pay-{p}": 2 * MB for p in SKEWED["pay"]}))
    base = ["rebalance", "-z", cluster.zk_connect, "--sizes", str(sizes), "--goals", "disk,replicas",
            "--min-improvement", "0", "--format", "json"]
    plan_file = tmp_path / "goals.json"
    assert main(base + ["--apply", "--yes", "--poll", "0.2", "-o", str(plan_file)]) == 0
    doc = summary(capsys.readouterr().out)
    goals = {g["name"]: g for g in doc["goals"]}
    assert doc["status"] == "applied" and doc["moves"] >= 1 and list(goals) == ["disk", "replicas"]
    assert goals["disk"]["after"] < goals["disk"]["before"] and goals["replicas"]["after"] <= goals["replicas"][
        "before"]
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    expected = {t: dict(a) for t, a in SKEWED.items()}
    for m in plan.moves:
        expected[m.topic][m.partition] = m.to_replicas
    assert judged(cluster, zk, expected) and replica_counts(zk).get(4, 0) == doc["moves"] > 0
    assert throttle_configs(zk) == {} and zk.exists(paths.KOPS_LOCK) is None
    wait_until(lambda: not read_snapshot(zk).under_replicated(), what="in sync")
    assert main(base) == 0
    again = summary(capsys.readouterr().out)
    assert again["status"] == "noop" and again["moves"] == 0 and again["plan"] is None, again
    assert layout(zk) == expected


def _led_elsewhere(zk: ZkClient) -> set[tuple[str, int]]:
    """Partitions led by another replica than their first."""
    snap = read_snapshot(zk)
    return {(name, n) for name, t in snap.topics.items() for n, p in t.partitions.items()
            if p.state is not None and p.state.leader != p.replicas[0]}


def test_preferred_leaders_are_elected_back_after_a_broker_restart(skewed_lab, tmp_path: Path, capsys) -> None:
    """Broker 1 stopped and started again: the controller moved its leaderships away and leaves them there.
    `kops rebalance --goals preferred_leaders --apply` elects each first replica again, moving no data, and its plan
    says the rollback cannot undo that (docs/design/goals.md §3, kops/planner/preferred.py)."""
    cluster, zk = skewed_lab
    cluster.lab.stop_broker(1)
    wait_until(lambda: all(1 not in (p.state.leader,) for t in read_snapshot(zk).topics.values()
                           for p in t.partitions.values() if p.state is not None), what="broker 1 leads nothing")
    cluster.lab.start_broker(1)
    wait_until(lambda: not read_snapshot(zk).under_replicated(), what="broker 1 back in sync")
    away = _led_elsewhere(zk)
    assert {p for t, p in away} == {p for p, r in SKEWED["pay"].items() if r[0] == 1}
    plan_file = tmp_path / "preferred.json"
    assert main(["rebalance", "-z", cluster.zk_connect, "--goals", "preferred_leaders", "--min-improvement", "0",
                 "--apply", "--yes", "--poll", "0.2", "--format", "json", "-o", str(plan_file)]) == 0
    doc = summary(capsys.readouterr().out)
    preferred = doc["goals"][0]
    assert doc["status"] == "applied" and doc["moves"] == 0 and doc["elections"] == len(away)
    assert preferred["before"] == pytest.approx(100 * len(away) / len(SKEWED["pay"])) and preferred["after"] == 0
    plan = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert not plan.batches and {(tp.topic, tp.partition) for tp in plan.election} == away
    assert any("preferred leader" in line for line in plan.rollback.irreversible)
    wait_until(lambda: not _led_elsewhere(zk), what="every partition led by its first replica")
