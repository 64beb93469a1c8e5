"""`kops rebalance` on a cluster with absent brokers, end to end through the command line over the in-memory
cluster (tests/memory_cluster.py, the port's second implementation; the same runs on real Kafka 4:
tests/integration/test_heal.py). Found by an outside check on Kafka 4.3.1, brokers 1-4 on racks a, a, b, b:

- two brokers gone, `__kops` (replication factor 3, min.insync.replicas 2) below its min.insync.replicas: every
  run failed (exit 1) on writing its absence note, even a plan-only run without --heal-after. A run without
  --heal-after writes nothing; a healing run whose note the unhealthy cluster cannot take is refused (exit 3),
  naming the absent brokers and the cluster's state, in its JSON too (docs/design/healing.md §1);
- a healing run's text said nothing of healing, and the live brokers' imbalance rising with their new replicas
  read as the rebalance making things worse; a goal list's table was printed twice.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Collection
from contextlib import nullcontext
from pathlib import Path

import pytest

from kops.cli.connection import Connection
from kops.cli.healing import healed_declared
from kops.cli.main import main
from kops.errors import ConnectionFailed
from kops.model import plan_format
from kops.planner.heal import HEAL_REASON
from kops.planner.planner import Policy
from tests.memory_cluster import MemoryCluster, MemoryKafka, MemoryRecords
from tests.unit.test_declare_playbooks import load

RACKS = {1: "a", 2: "a", 3: "b", 4: "b"}
# Replication factor 3 over brokers 1-4; `__kops` on 1, 3 and 4, so with 3 and 4 gone it is below its
# min.insync.replicas (2) and takes no acks=all write, as Kafka answers NotEnoughReplicas.
PAY = {0: (1, 2, 3), 1: (2, 3, 4), 2: (3, 4, 1), 3: (4, 1, 2), 4: (1, 3, 4), 5: (2, 4, 1), 6: (3, 1, 2),
       7: (4, 2, 3)}
KOPS = "__kops"


class KopsTopicRecords(MemoryRecords):
    """The records as `__kops` keeps them (kops/cluster/admin/kops_log.py): a write needs min.insync.replicas of
    the topic's replicas in sync, or Kafka refuses it and kops says `cannot write to __kops`."""

    def note_absent(self, absent: Collection[int]) -> tuple[dict[int, int], int]:
        part = self.port.kafka.topics[KOPS][0]
        if len(part.isr) < 2:
            raise ConnectionFailed(f"cannot write to {KOPS}: [Error 19] NotEnoughReplicasError: None",
                                   where=self.port.where, hint=f"check the brokers holding {KOPS} (kops status)")
        return super().note_absent(absent)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> MemoryCluster:
    """Brokers 1-4 on racks a, a, b, b, the `pay` topic and `__kops`; `kops rebalance -b memory:9092` reaches it."""
    kafka = MemoryKafka(RACKS)
    kafka.create_topic("pay", PAY, {"min.insync.replicas": "2"})
    kafka.create_topic(KOPS, {0: (1, 3, 4)}, {"min.insync.replicas": "2", "cleanup.policy": "compact"})
    kafka.produce("pay", 1_000_000)
    port = MemoryCluster(kafka)
    port._records = KopsTopicRecords(port)
    monkeypatch.setattr(importlib.import_module("kops.cli.rebalance"), "open_cluster",
                        lambda connection, address: nullcontext(port))
    return port


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_two_brokers_gone_a_plan_only_run_writes_nothing_and_is_refused(cluster: MemoryCluster, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    cluster.kafka.stop_broker(3)
    cluster.kafka.stop_broker(4)
    prom = tmp_path / "run.prom"
    assert main(["rebalance", "-b", "memory:9092", "--metrics-file", str(prom)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: memory:9092: not rebalancing: ") and "(nothing was done" in err
    assert "9 partition(s) under-replicated (__kops-0, pay-0" in err
    assert "replicas on broker(s) [3, 4], which are not registered" in err
    assert "--heal-after re-homes the replicas of absent broker(s) 3, 4" in err
    assert cluster.writes == []  # not even an absence note
    assert "kops_last_run_exit_code{" in prom.read_text() and 'outcome="refused"} 1.0' in prom.read_text()

    assert main(["rebalance", "-b", "memory:9092", "--format", "json"]) == 3
    doc = _last_json(capsys.readouterr().out)
    assert doc["status"] == "refused" and "exit_code" not in doc
    assert doc["absent"] == [{"broker": 3, "seconds": None}, {"broker": 4, "seconds": None}]


def test_two_brokers_gone_a_healing_run_whose_note_kops_cannot_write_is_refused_naming_them(
        cluster: MemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.kafka.stop_broker(3)
    cluster.kafka.stop_broker(4)
    prom = tmp_path / "run.prom"
    assert main(["rebalance", "-b", "memory:9092", "--heal-after", "10s", "--format", "json",
                 "--metrics-file", str(prom)]) == 3
    captured = capsys.readouterr()
    doc = _last_json(captured.out)
    assert doc["status"] == "refused" and "exit_code" not in doc and "error" not in doc
    assert doc["absent"] == [{"broker": 3, "seconds": None}, {"broker": 4, "seconds": None}]
    reason = doc["reason"]
    assert "replicas on broker(s) [3, 4], which are not registered" in reason
    assert "2 brokers absent (3, 4), more than --heal-max-brokers 1" in reason
    assert reason.endswith("broker(s) 3, 4 absent since a time kops could not note (cannot write to __kops: "
                           "__kops-0 has 1 in-sync replica(s), below its min.insync.replicas 2): not healing")
    assert captured.err.strip() == f"error: memory:9092: not rebalancing: {reason} (nothing was done; the next " \
                                   f"run tries again)"
    assert "kops_last_run_brokers_absent{" in prom.read_text() and cluster.writes == []


def test_a_note_that_fails_on_a_healthy_records_partition_is_still_an_error(cluster: MemoryCluster,
                                                                             capsys: pytest.CaptureFixture[str]
                                                                             ) -> None:
    """Only the cluster's health turns the failed note into a refusal: `__kops` in sync and the write refused
    anyway (an authorization, say) stays exit 1, which cron alerts on."""
    cluster.kafka.stop_broker(2)
    cluster.kafka.topics[KOPS][0].isr = [1]  # refused though its brokers are live: not the cluster's health
    cluster.kafka.topics[KOPS][0].replicas = [1]
    cluster.kafka.configs[f"topics/{KOPS}"]["min.insync.replicas"] = "1"  # in sync, as Kafka judges it
    assert main(["rebalance", "-b", "memory:9092", "--heal-after", "10s"]) == 1
    assert "cannot write to __kops" in capsys.readouterr().err


def test_a_healing_run_says_it_heals_and_what_the_imbalance_owes_to_healing(cluster: MemoryCluster, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    cluster.kafka.stop_broker(4)
    args = ["rebalance", "-b", "memory:9092", "--heal-after", "2m"]
    assert main([*args, "-o", str(tmp_path / "first.json")]) == 3  # the first sighting, noted
    assert "broker 4 absent for 0 s (heals after 120 s)" in capsys.readouterr().err
    assert cluster.writes == ["absence noted absent/4"]
    cluster.kafka.clock.sleep(138)
    assert main([*args, "-o", str(tmp_path / "heal1.json")]) == 0
    out = capsys.readouterr().out
    plan = plan_format.loads((tmp_path / "heal1.json").read_bytes(), "heal1.json")
    healed = [m for m in plan.moves if m.reason.startswith(HEAL_REASON)]
    assert len(healed) == sum(1 for r in [*PAY.values(), (1, 3, 4)] if 4 in r)  # pay's and __kops's
    text = " ".join(out.split())  # the lines as said, whatever the terminal's width
    said = (f"healing absent broker 4 (absent 138 s), past --heal-after 120 s: {len(healed)} under-replicated "
            f"partition(s) get a new replica on a live broker heal, then rebalance replicas: imbalance of the live "
            f"brokers ")
    assert said in text  # the healing line, then the summary line saying what healing did to the imbalance
    summary = text[text.index(said) + len(said):]
    assert " from healing's new replicas" in summary
    tail = "".join(summary.split())  # a long path wraps anywhere
    assert tail.endswith(f"planned:applywith:kopsapply{tmp_path / 'heal1.json'}")


def test_a_healing_run_with_a_goal_list_prints_its_goal_table_once(cluster: MemoryCluster, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = _healed_after(cluster, tmp_path, capsys, ["--goals", "replicas,leaders"], 61)
    assert out.count("Goals") == 1 and "Lower bound" in out
    text = " ".join(out.split())
    assert "healing absent broker 4 (absent 61 s), past --heal-after 60 s:" in text
    assert "heal, then rebalance replicas,leaders: imbalance after healing" in text


def test_the_healing_line_counts_what_the_budget_leaves_for_the_next_run(cluster: MemoryCluster, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    doc = _last_json(_healed_after(cluster, tmp_path, capsys, ["--max-moves", "2", "--format", "json"], 60))
    assert doc["healed"] == [4] and doc["moves"] == 2 and doc["absent"] == [{"broker": 4, "seconds": 60.0}]
    assert main(["rebalance", "-b", "memory:9092", "--heal-after", "1m", "--max-moves", "2",
                 "-o", str(tmp_path / "heal2.json")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    held = sum(1 for r in [*PAY.values(), (1, 3, 4)] if 4 in r)
    assert (f"get a new replica on a live broker; {held - 2} more wait for the next run (this run's limits are "
            f"spent)") in out
    assert "no balancing move worth --min-improvement 0.05 within the limits" in out


def test_kops_plan_of_a_healing_playbook_plans_it_as_it_stands_when_the_note_is_refused(
        cluster: MemoryCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kops plan` of a playbook with `heal_after` notes as a healing rebalance does; a note the unhealthy cluster
    cannot take is a warning naming the brokers, and the playbook is planned as it stands (docs/design/healing.md
    §5), not an error."""
    monkeypatch.setattr(importlib.import_module("kops.cli.healing"), "open_cluster",
                        lambda connection, address: nullcontext(cluster))
    cluster.kafka.stop_broker(3)
    cluster.kafka.stop_broker(4)
    asks = load(tmp_path, "- hosts: prod\n  rebalance: {heal_after: 1s}\n").desired["prod"]
    assert healed_declared(asks, cluster.snapshot(), Connection(bootstrap_server="memory:9092"), {}, Policy()) is None
    err = " ".join(capsys.readouterr().err.split())
    assert ("broker(s) 3, 4 absent since a time kops could not note (cannot write to __kops: __kops-0 has 1 "
            "in-sync replica(s), below its min.insync.replicas 2), not healed: the playbook is planned as it "
            "stands") in err
    assert cluster.writes == []


def _healed_after(cluster: MemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                  seconds: float) -> str:
    """Broker 4 stopped, a first run with --heal-after 1m noting it (refused), `seconds` later the healing run
    with `extra`: its output."""
    cluster.kafka.stop_broker(4)
    args = ["rebalance", "-b", "memory:9092", "--heal-after", "1m"]
    assert main([*args, "-o", str(tmp_path / "first.json")]) == 3
    cluster.kafka.clock.sleep(seconds)
    capsys.readouterr()
    assert main([*args, *extra, "-o", str(tmp_path / "heal.json")]) == 0
    return capsys.readouterr().out


def test_kops_status_shows_the_cluster_when_kops_records_cannot_be_read(
        cluster: MemoryCluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """With `__kops` offline its records cannot be read: kops status exited 1 and showed nothing, not even the
    offline partitions, just when it is asked. Now the lock and the last execution are unknown, and said so."""
    def unreadable() -> None:
        raise ConnectionFailed(f"no broker answered to reach {KOPS}", where="memory:9092")

    monkeypatch.setattr(cluster, "holder", unreadable)
    monkeypatch.setattr(importlib.import_module("kops.cli.status"), "open_cluster",
                        lambda connection, address: nullcontext(cluster))
    for broker in (1, 3, 4):
        cluster.kafka.stop_broker(broker)
    assert main(["status", "-b", "memory:9092", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lock"] is None and doc["execution"] is None and "no broker answered" in doc["records_unread"]
    assert any(row["topic"] == KOPS for row in doc["offline"]), doc["offline"]
    assert main(["status", "-b", "memory:9092"]) == 0
    said = capsys.readouterr()
    assert "kops's records cannot be read now" in said.err and "__kops-0 has no live leader" in said.out
