"""A fleet on real clusters (issue 39): two lab clusters at once in one inventory group, real Kafka 4 through
the Admin API and Kafka 3.9 through ZooKeeper. Planned across both (two plans, each naming its cluster), applied
with `--serial 1`: a failure on the first (its broker stopped) stops the fleet before the second starts;
`--resume` after the broker returns finishes both; `kops rollback DIR` undoes both. Kafka is the judge: each
cluster's replicas as its own Admin API reports them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.lab.kafka_client import first_answer, layout
from tests.engines import EngineLab, fill_real, kafka4_cluster
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


def _replicas(bootstrap: str) -> dict[int, tuple[int, ...]]:
    return {p: tuple(row["replicas"]) for p, row in layout(bootstrap).get(TOPIC, {}).items()}


def _create(bootstrap: str) -> None:
    spec = {TOPIC: {"assignments": {p: list(r) for p, r in ORIGINAL.items()}}}
    first_answer(bootstrap, lambda c: c.create_topics(spec))
    fill_real(bootstrap, {TOPIC: ORIGINAL}, 1)


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

    # a bounded rebalance of the fleet: the orders sit on brokers 1 and 2 of each cluster again
    rebalanced = tmp_path / "rebalance"
    assert main(["rebalance", "-i", str(inventory), "-l", "fleet", "--max-moves", "2", "--min-improvement", "0.01",
                 "--out-dir", str(rebalanced)]) == 0, capsys.readouterr().err
    written = {path.name: json.loads(path.read_text()) for path in rebalanced.glob("*.plan.json")}
    assert sorted(written) == ["a-kafka4.plan.json", "b-kafka39.plan.json"]
    assert all(plan["cluster"] == name.split(".")[0] and plan["batches"] for name, plan in written.items())
    assert "REBALANCE RECAP" in capsys.readouterr().out


def test_a_fleet_is_rehearsed_one_cluster_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kops rehearse DIR --snapshot-dir SNAPS`: each plan on a kops-engine clone of its own snapshot, one after
    the other, a report per cluster and a recap (the golden decommission, as two clusters)."""
    golden = Path(__file__).resolve().parents[1] / "golden" / "decommission"
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
