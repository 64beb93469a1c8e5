"""A fleet on real clusters (issue 39): two lab clusters at once in one inventory group, real Kafka 4 through
the Admin API and Kafka 3.9 through ZooKeeper. Planned across both (two plans, each naming its cluster), applied
with `--serial 1`: a failure on the first (its broker stopped) stops the fleet before the second starts;
`--resume` after the broker returns finishes both; `kops rollback DIR` undoes both; `kops rebalance --out-dir DIR
--apply` plans and applies both. Kafka is the judge: each
cluster's replicas as its own Admin API reports them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.lab.kafka_client import create_topics, layout
from tests.engines import EngineLab, fill_real, kafka4_cluster, reset_admin_cluster, reset_real_cluster
from tests.integration.test_admin_transport import wait_in_flight
from tests.labtools import wait_until

pytestmark = pytest.mark.lab

TOPIC = "fleet-orders"
ORIGINAL = {0: (1, 2), 1: (2, 1)}
TARGET = {0: (3, 4), 1: (4, 3)}

PLAYBOOK = f"""\
- name: move the orders
  hosts: fleet
  topics:
    - name: {TOPIC}
      partitions: 2
      replication_factor: 2
      placement:
        strategy: static
        assignments: {{0: [3, 4], 1: [4, 3]}}
"""


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineLab]:
    with kafka4_cluster(tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


_SPAWNED: list[subprocess.Popen] = []  # background applies, stopped after each test


@pytest.fixture(autouse=True)
def _emptied(request: pytest.FixtureRequest) -> Iterator[None]:
    """Both clusters emptied before each test, and a background apply a failed test left running killed after it,
    so a rerun starts from what the first attempt found (it once failed on its own topic, left by the first)."""
    if "kafka4" in request.fixturenames:
        kafka4, kafka39 = request.getfixturevalue("kafka4"), request.getfixturevalue("kafka39")
        reset_admin_cluster(kafka4.lab, kafka4.bootstrap)
        reset_real_cluster(kafka39.lab, kafka39.zk_connect)
    yield
    while _SPAWNED:
        process = _SPAWNED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def _replicas(bootstrap: str, topic: str = TOPIC) -> dict[int, tuple[int, ...]]:
    return {p: tuple(row["replicas"]) for p, row in layout(bootstrap).get(topic, {}).items()}


def _create(bootstrap: str, topic: str = TOPIC) -> None:
    spec = {topic: {"assignments": {p: list(r) for p, r in ORIGINAL.items()}}}
    create_topics(bootstrap, spec)
    fill_real(bootstrap, {topic: ORIGINAL}, 1)


def _judged(bootstrap: str, expected: dict[int, tuple[int, ...]], what: str) -> None:
    wait_until(lambda: _replicas(bootstrap) == expected, timeout=60, what=what)


def test_a_fleet_planned_applied_serially_stopped_resumed_and_rolled_back(
        tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = kafka4.bootstrap, kafka39.bootstrap
    assert first and second
    for bootstrap in (first, second):
        _create(bootstrap)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  children:\n    fleet:\n      hosts:\n"
                         f"        a-kafka4: {{bootstrap_servers: '{first}'}}\n"
                         f"        b-kafka39: {{zookeeper: '{kafka39.zk_connect}'}}\n")
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK)
    plans = tmp_path / "plans"
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "fleet", "--out-dir", str(plans),
                 "--detailed-exitcode"]) == 2, capsys.readouterr().err
    names = {path.name: json.loads(path.read_text())["cluster"] for path in plans.glob("*.plan.json")}
    assert names == {"a-kafka4.plan.json": "a-kafka4", "b-kafka39.plan.json": "b-kafka39"}
    assert json.loads((plans / "b-kafka39.plan.json").read_text())["connect"] == kafka39.zk_connect
    capsys.readouterr()

    apply = ["apply", str(plans), "-i", str(inventory), "--serial", "1", "--yes", "--poll", "0.2",
             "--stall-timeout", "20", "--format", "json"]
    kafka4.lab.stop_broker(3)
    try:
        code = main(apply)
        out = capsys.readouterr().out
        assert code in (1, 3, 4), out  # refused (its brokers changed), or stopped: a failure either way
        total = json.loads(out.strip().splitlines()[-1])["total"]
        assert total["skipped"] == 1 and total["stopped"] + total["failed"] == 1, out
        record = json.loads((plans / "fleet.json").read_text())
        assert [c["status"] for c in record["clusters"]][1] == "pending"
        assert _replicas(second) == ORIGINAL  # the second never started
    finally:
        kafka4.lab.start_broker(3)

    code = main([*apply, "--resume"])
    assert code == 0, capsys.readouterr()
    capsys.readouterr()
    _judged(first, TARGET, "Kafka 4 at the targets")
    _judged(second, TARGET, "Kafka 3.9 at the targets")
    record = json.loads((plans / "fleet.json").read_text())
    assert [c["status"] for c in record["clusters"]] == ["changed", "changed"]
    assert all(c["execution"] for c in record["clusters"])

    assert main(["rollback", str(plans), "-i", str(inventory), "--yes", "--poll", "0.2"]) == 0, capsys.readouterr()
    _judged(first, ORIGINAL, "Kafka 4 back on its original replicas")
    _judged(second, ORIGINAL, "Kafka 3.9 back on its original replicas")
    out = capsys.readouterr().out
    assert out.index("b-kafka39: ") < out.index("a-kafka4: ")  # the last applied rolled back first
    recap = out[out.index("ROLLBACK RECAP"):]
    assert "changed=2" in recap and "failed=0" in recap

    _rebalance_both(tmp_path, inventory, {"a-kafka4": first, "b-kafka39": second}, capsys)


def _rebalance_both(tmp_path: Path, inventory: Path, bootstraps: dict[str, str],
                    capsys: pytest.CaptureFixture[str]) -> None:
    """A bounded rebalance of the fleet (the orders sit on brokers 1 and 2 of each cluster again): planned into a
    folder, then planned and applied at once (`--apply`, as kops apply DIR would), judged by each cluster's Kafka."""
    rebalanced = tmp_path / "rebalance"
    assert main(["rebalance", "-i", str(inventory), "-l", "fleet", "--max-moves", "2", "--min-improvement", "0.01",
                 "--out-dir", str(rebalanced)]) == 0, capsys.readouterr().err
    written = {path.name: json.loads(path.read_text()) for path in rebalanced.glob("*.plan.json")}
    assert sorted(written) == ["a-kafka4.plan.json", "b-kafka39.plan.json"]
    assert all(plan["cluster"] == name.split(".")[0] and plan["batches"] for name, plan in written.items())
    said = capsys.readouterr()
    assert "REBALANCE RECAP" in said.out
    # without --sizes, the cluster reached through the Admin API plans with its own sizes, as alone (its moves had
    # shown 0 B and no estimate); ZooKeeper has none to give
    assert said.err.count("from the cluster (DescribeLogDirs)") == 1, said.err

    applied = tmp_path / "rebalance-applied"
    assert main(["rebalance", "-i", str(inventory), "-l", "fleet", "--max-moves", "2", "--min-improvement", "0.01",
                 "--out-dir", str(applied), "--apply", "--yes", "--serial", "1", "--poll", "0.2"]) == 0, \
        capsys.readouterr()
    out = capsys.readouterr().out
    assert out.index("REBALANCE RECAP") < out.index("FLEET RECAP"), out
    assert [c["status"] for c in json.loads((applied / "fleet.json").read_text())["clusters"]] == ["changed"] * 2
    for name, bootstrap in bootstraps.items():
        moves = {(m["topic"], m["partition"]): tuple(m["to"]) for b in json.loads(
            (applied / f"{name}.plan.json").read_text())["batches"] for m in b["moves"]
            if not m["topic"].startswith("__")}  # layout() reports the user topics
        assert moves, name

        def moved(bootstrap: str = bootstrap, moves: dict[tuple[str, int], tuple[int, ...]] = moves) -> bool:
            found = layout(bootstrap)
            return all(tuple(found[topic][p]["replicas"]) == to for (topic, p), to in moves.items())

        wait_until(moved, timeout=60, what=f"{name} rebalanced as its plan says")


def test_a_fleet_is_rehearsed_one_cluster_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kops rehearse DIR --snapshot-dir SNAPS`: each plan on a kops-engine clone of its own snapshot, one after
    the other, a report per cluster and a recap (the golden rf-up, as two clusters: one batch, whose rehearsal takes
    a quarter of the golden decommission's six, and the fleet's order is what is under test)."""
    golden = Path(__file__).resolve().parents[1] / "golden" / "rf-up"
    plans, snaps = tmp_path / "plans", tmp_path / "snaps"
    snaps.mkdir()
    assert main(["plan", str(golden / "playbook.yml"), "-i", str(golden / "inventory.yml"), "--snapshot",
                 str(golden / "snapshot.json"), "--sizes", str(golden / "sizes.json"), "-o",
                 str(plans / "one.plan.json")]) == 0
    (plans / "two.plan.json").write_bytes((plans / "one.plan.json").read_bytes())
    for name in ("one", "two"):
        (snaps / f"{name}.json").write_bytes((golden / "snapshot.json").read_bytes())
    capsys.readouterr()
    code = main(["rehearse", str(plans), "--snapshot-dir", str(snaps), "--report-dir", str(tmp_path / "reports"),
                 "--format", "json", "--scale", "60"])
    out = capsys.readouterr().out
    assert code in (0, 2), out  # the estimates hold, or some are off: the rehearsal ran on both
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["one.json", "two.json"]
    total = json.loads(out.strip().splitlines()[-1])["total"]
    assert total["ok"] == 2 and total["failed"] == 0, out


def _fleet_of_two(tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab, topic: str, execution: str = "") -> Path:
    """The orders' move of the first test for `topic`, on both clusters, planned into tmp_path/plans; `execution`
    is the playbook's execution section (indented two spaces)."""
    for bootstrap in (kafka4.bootstrap, kafka39.bootstrap):
        assert bootstrap
        _create(bootstrap, topic)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  children:\n    fleet:\n      hosts:\n"
                         f"        a-kafka4: {{bootstrap_servers: '{kafka4.bootstrap}'}}\n"
                         f"        b-kafka39: {{zookeeper: '{kafka39.zk_connect}'}}\n")
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(PLAYBOOK.replace(TOPIC, topic) + execution)
    assert main(["plan", str(playbook), "-i", str(inventory), "-l", "fleet", "--out-dir", str(tmp_path / "plans")]) == 0
    return inventory


def test_ctrl_c_stops_the_fleet_at_a_checkpoint_and_resume_finishes_it(
        tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGINT to a running `kops apply DIR`: the running cluster stops after its batch in flight (exit 3), the
    next never starts, the fleet record names the stopped execution; `kops status DIR` shows both; `--resume`
    finishes the fleet. One partition a batch and a slow throttle keep the first cluster's batch in flight."""
    topic, first, second = "fleet-signal", kafka4.bootstrap, kafka39.bootstrap
    assert first and second
    inventory, plans, applying = _applying(tmp_path, kafka4, kafka39, topic)
    applying.send_signal(signal.SIGINT)
    _stopped_first(applying, plans, (first, second), topic)

    capsys.readouterr()
    assert main(["status", str(plans), "-i", str(inventory), "--format", "json"]) == 0
    rows = {r["cluster"]: r for r in json.loads(capsys.readouterr().out)["clusters"]}
    assert rows["a-kafka4"]["fleet_status"] == "stopped" and rows["a-kafka4"]["execution"]["status"] == "stopped"
    assert rows["b-kafka39"]["fleet_status"] == "pending" and not rows["b-kafka39"]["lock"]

    assert main(["apply", str(plans), "-i", str(inventory), "--yes", "--poll", "0.2", "--resume",
                 "--throttle", "20MiB/s", "--format", "json"]) == 0, capsys.readouterr()
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert any(e.get("event") == "fleet_progress" and "eta" in e and "bytes_total" in e for e in events)
    wait_until(lambda: _replicas(first, topic) == TARGET, timeout=60, what="Kafka 4 at the targets")
    wait_until(lambda: _replicas(second, topic) == TARGET, timeout=60, what="Kafka 3.9 at the targets")
    assert [c["status"] for c in json.loads((plans / "fleet.json").read_text())["clusters"]] == ["changed"] * 2


def _applying(tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab, topic: str,
              *options: str) -> tuple[Path, Path, subprocess.Popen]:
    """`kops apply DIR --serial 1` of the two clusters running in the background, the first's batch in flight (one
    partition a batch and a slow throttle keep it there): the inventory, the folder and the process."""
    inventory = _fleet_of_two(tmp_path, kafka4, kafka39, topic,
                              "  execution:\n    throttle: 256KiB/s\n    batch: {max_partitions: 1}\n")
    plans = tmp_path / "plans"
    applying = subprocess.Popen([sys.executable, "-m", "kops.cli.main", "apply", str(plans), "-i", str(inventory),
                                 "--serial", "1", "--yes", "--poll", "0.2", "--format", "json", *options],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _SPAWNED.append(applying)
    assert kafka4.bootstrap
    wait_in_flight(kafka4.bootstrap, applying)
    return inventory, plans, applying


def _stopped_first(applying: subprocess.Popen, plans: Path, bootstraps: tuple[str, str], topic: str) -> None:
    """The fleet stopped: exit 3, the first cluster stopped at a checkpoint (a batch done, one not) with its
    execution in the record, the second never started."""
    out, err = applying.communicate(timeout=180)
    assert applying.returncode == 3, err
    record = json.loads((plans / "fleet.json").read_text())
    assert [(c["status"], bool(c["execution"])) for c in record["clusters"]] == [("stopped", True), ("pending", False)]
    assert json.loads(out.strip().splitlines()[-1])["total"]["skipped"] == 1
    moved = _replicas(bootstraps[0], topic)
    assert moved != TARGET and any(moved[p] == TARGET[p] for p in TARGET), moved
    assert _replicas(bootstraps[1], topic) == ORIGINAL


def test_cancel_of_a_fleet_stops_its_running_cluster_and_starts_no_other(
        tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab, capsys: pytest.CaptureFixture[str]) -> None:
    """`kops cancel DIR` while `kops apply DIR` runs: the running cluster stops at its checkpoint, and the fleet
    starts no further cluster though --max-fail-percentage 50 would have let it; `--resume` finishes both."""
    topic, first, second = "fleet-cancel", kafka4.bootstrap, kafka39.bootstrap
    assert first and second
    inventory, plans, applying = _applying(tmp_path, kafka4, kafka39, topic, "--max-fail-percentage", "50")
    assert main(["cancel", str(plans), "-i", str(inventory)]) == 0, capsys.readouterr()
    assert "a-kafka4: asked execution" in capsys.readouterr().err
    _stopped_first(applying, plans, (first, second), topic)
    assert main(["apply", str(plans), "-i", str(inventory), "--yes", "--poll", "0.2", "--resume",
                 "--throttle", "20MiB/s"]) == 0, capsys.readouterr()
    assert not (plans / "fleet.cancel").exists()
    wait_until(lambda: _replicas(first, topic) == TARGET, timeout=60, what="Kafka 4 at the targets")
    wait_until(lambda: _replicas(second, topic) == TARGET, timeout=60, what="Kafka 3.9 at the targets")


def test_serial_2_runs_both_clusters_at_once(tmp_path: Path, kafka4: EngineLab, kafka39: EngineLab,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """--serial 2: both clusters start together, so the first's failure (a broker stopped) cannot keep the
    second from running to the end, as it does with --serial 1 (the first test); Kafka 3.9 is at the targets."""
    topic, second = "fleet-pair", kafka39.bootstrap
    assert second
    inventory = _fleet_of_two(tmp_path, kafka4, kafka39, topic)
    capsys.readouterr()
    kafka4.lab.stop_broker(3)
    try:
        code = main(["apply", str(tmp_path / "plans"), "-i", str(inventory), "--serial", "2", "--yes", "--poll",
                     "0.2", "--stall-timeout", "20", "--format", "json"])
        out = capsys.readouterr().out
    finally:
        kafka4.lab.start_broker(3)
    assert code in (1, 3, 4), out
    statuses = [c["status"] for c in json.loads((tmp_path / "plans" / "fleet.json").read_text())["clusters"]]
    assert statuses[0] in ("stopped", "failed") and statuses[1] == "changed", out
    wait_until(lambda: _replicas(second, topic) == TARGET, timeout=60, what="Kafka 3.9 at the targets")
