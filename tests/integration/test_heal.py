"""`kops rebalance --heal-after` on a broker killed for real (issue 38, docs/design/healing.md): a first run sees
the broker absent but not long enough and moves nothing; a second run, in another process with no local state in
common, heals it once the duration has passed (the first sighting is kept in the cluster: `/kops/absent/<id>`
through ZooKeeper, `absent/<id>` in `__kops` through the Admin API); every partition is back at its replication
factor and in sync, as Kafka itself reports; a rollback while the broker is still gone is refused; the broker
started again gets nothing back, and the next run forgets it. The healing run's one plan also balances the live
brokers with what healing left alone (docs/design/healing.md §3b). Through ZooKeeper on the kops engine and real
Kafka 3.9 (`engine_lab`); through the Admin API on real Kafka 4 and 3.9 under acks=all produce load, no
acknowledged record lost, and with a broker paused (SIGSTOP) instead of killed (`admin_cluster`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kops.cli.main import main
from kops.model import plan_format
from kops.zk_layout import paths
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.delivery import SequenceProducer, compare, read_back
from tests.engines import EngineLab
from tests.integration.test_executor import judged, layout
from tests.labtools import wait_until
from tests.unit.test_run_metrics import only, parsed

pytestmark = pytest.mark.lab
HEAL_AFTER = 6.0  # seconds: the first run sees the broker gone a moment ago, the second waits past it
# Replication factor 2 over brokers 1-4; broker 4 holds a replica of half the partitions, leading two of them.
SPREAD = {"heal": {0: (4, 1), 1: (1, 4), 2: (2, 3), 3: (4, 2), 4: (3, 4), 5: (1, 2)}}
# Through the Admin API: replication factor 3, min.insync.replicas 2, so acks=all writes go on without broker 4.
LEDGER = {0: [4, 1, 2], 1: [1, 4, 3], 2: [2, 3, 4], 3: [3, 4, 1], 4: [1, 2, 3], 5: [2, 3, 1]}
Layouts = dict[str, dict[int, tuple[int, ...]]]


def summary(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def healing_metrics(prom: Path) -> tuple[float, float, float]:
    metrics = parsed(prom.read_text())
    return (only(metrics["kops_last_run_exit_code"]), only(metrics["kops_last_run_brokers_absent"]),
            only(metrics["kops_last_run_brokers_healed"]))


def first_run_waits(args: list[str], tmp_path: Path, capsys: Any) -> None:
    """Broker 4 absent a moment, not long enough: refused (exit 3), said how long; its first sighting is kept."""
    assert main([*args, "-o", str(tmp_path / "first.json")]) == 3
    captured = capsys.readouterr()
    doc = summary(captured.out)
    assert doc["status"] == "refused" and doc["healed"] == [] and [a["broker"] for a in doc["absent"]] == [4]
    assert doc["absent"][0]["seconds"] < HEAL_AFTER
    assert f"(heals after {HEAL_AFTER:g} s)" in captured.err
    assert healing_metrics(Path(args[args.index("--metrics-file") + 1])) == (3, 1, 0)


def second_run_heals(args: list[str], tmp_path: Path, before: Layouts, current: Callable[[], Layouts]) -> Layouts:
    """After the duration, another process with another state folder (another cron host): one plan heals broker
    4's partitions, each back at its replication factor without broker 4, then balances the live brokers with
    partitions healing left alone (docs/design/healing.md §3b); Kafka reaches the plan's targets. The layout."""
    time.sleep(HEAL_AFTER)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "other-host")}
    done = subprocess.run([sys.executable, "-m", "kops.cli.main", *args, "-o", str(tmp_path / "heal.json")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = summary(done.stdout)
    assert doc["status"] == "applied" and doc["healed"] == [4] and doc["absent"][0]["seconds"] >= HEAL_AFTER
    (topic,) = before
    plan = plan_format.loads((tmp_path / "heal.json").read_bytes(), "heal.json")
    heals = {m.partition for m in plan.moves if m.reason == "heal absent broker(s) 4"}
    assert heals == {p for p, r in before[topic].items() if 4 in r} and doc["moves"] == plan.summary.moves
    balanced = {m.partition: m for m in plan.moves if m.partition not in heals}
    assert all(m.reason.startswith("rebalance ") for m in balanced.values())
    healed = current()
    for p, replicas in healed[topic].items():
        assert 4 not in replicas and len(replicas) == len(before[topic][p]), (p, replicas)
        if 4 not in before[topic][p] and p not in balanced:
            assert replicas == before[topic][p]  # nothing else moved
    assert all(set(healed[topic][m.partition]) == set(m.to_replicas) for m in plan.moves)
    assert healing_metrics(Path(args[args.index("--metrics-file") + 1])) == (0, 1, 1)
    return healed


def rollback_refused_then_forgotten(args: list[str], tmp_path: Path, capsys: Any, restart: Callable[[], None]
                                    ) -> None:
    """Undoing the healing while broker 4 is gone is refused, naming it; once it is back, the next run forgets it
    (nothing to heal, nothing worth balancing above the threshold)."""
    where = args[1:3]
    capsys.readouterr()
    assert main(["rollback", str(tmp_path / "heal.json"), *where, "--yes", "--format", "json"]) == 1
    assert "back on broker(s) 4, which are not registered" in capsys.readouterr().err
    restart()
    assert main([*args, "--min-improvement", "0.9", "-o", str(tmp_path / "third.json")]) == 0
    doc = summary(capsys.readouterr().out)
    assert doc["status"] == "noop" and doc["absent"] == [], doc
    assert healing_metrics(Path(args[args.index("--metrics-file") + 1])) == (0, 0, 0)


def rebalance_args(flag: str, where: str, tmp_path: Path) -> list[str]:
    return ["rebalance", flag, where, "--heal-after", f"{HEAL_AFTER:g}s", "--apply", "--yes", "--format", "json",
            "--poll", "0.2", "--metrics-file", str(tmp_path / "kops-rebalance.prom")]


def test_a_killed_broker_is_healed_only_after_the_duration(engine_lab, tmp_path: Path, capsys) -> None:
    with engine_lab(time_scale=4.0) as cluster, ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, SPREAD, 1)
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=60, what="every partition in sync")
        cluster.lab.kill_broker(4)
        wait_until(lambda: 4 not in read_snapshot(zk).live_broker_ids, timeout=60, what="broker 4 unregistered")
        wait_until(lambda: not any(4 in p.isr for t in read_snapshot(zk).topics.values()
                                   for p in t.partitions.values()), timeout=60, what="broker 4 out of every ISR")
        before = layout(zk)
        # with a goal list: healing first, then the walk with what is left (--goal's path: the Admin-API tests below)
        args = rebalance_args("-z", cluster.zk_connect, tmp_path) + ["--goals", "replicas,leaders"]

        first_run_waits(args, tmp_path, capsys)
        assert layout(zk) == before and zk.exists(f"{paths.KOPS_ABSENT}/4") is not None
        healed = second_run_heals(args, tmp_path, before, lambda: layout(zk))
        assert judged(cluster, zk, healed)  # on real Kafka, its own metadata agrees
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=120, what="every partition in sync")

        def restart() -> None:
            cluster.lab.start_broker(4)
            wait_until(lambda: 4 in read_snapshot(zk).live_broker_ids, timeout=90, what="broker 4 back")

        rollback_refused_then_forgotten(args, tmp_path, capsys, restart)
        assert layout(zk) == healed and zk.exists(f"{paths.KOPS_ABSENT}/4") is None  # broker 4 got nothing back


def test_through_the_admin_api_under_produce_load_no_acknowledged_record_is_lost(admin_cluster: EngineLab,
                                                                                 tmp_path: Path, capsys) -> None:
    from kops.lab.kafka_client import create_topics, live_brokers
    from kops.lab.kafka_client import layout as kafka_layout

    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None

    def rows() -> dict[int, Any]:
        """The ledger's partitions as one broker's metadata has them (empty until it knows the topic): read once
        per check, since two reads may reach two brokers and the second may not know the topic yet."""
        return kafka_layout(bootstrap).get("ledger", {})

    def replicas() -> Layouts:
        return {"ledger": {p: tuple(row["replicas"]) for p, row in rows().items()}}  # type: ignore[call-overload]  # JSON rows

    create_topics(bootstrap, {"ledger": {"assignments": LEDGER, "configs": {"min.insync.replicas": "2"}}})

    def elected(found: dict[int, Any]) -> bool:
        return len(found) == 6 and all(row["leader"] != -1 for row in found.values())

    wait_until(lambda: elected(rows()), what="every leader elected")
    producer = SequenceProducer(bootstrap, "ledger", 6, rate=300).start()
    wait_until(lambda: producer.acks.count > 200, timeout=60, what="records acknowledged before the kill")
    admin_cluster.lab.kill_broker(4)
    wait_until(lambda: 4 not in (live_brokers(bootstrap) or {4}), timeout=90, what="broker 4 gone")
    wait_until(lambda: not any(4 in row["isr"] for row in rows().values()),
               timeout=90, what="broker 4 out of every ISR")
    before = replicas()
    args = rebalance_args("-b", bootstrap, tmp_path)

    first_run_waits(args, tmp_path, capsys)
    assert replicas() == before
    second_run_heals(args, tmp_path, before, replicas)
    wait_until(lambda: all(set(row["isr"]) == set(row["replicas"])
                           for row in rows().values()), timeout=120, what="full ISR")
    acks = producer.stop()
    verdict = compare(acks, read_back(bootstrap, "ledger", 6))
    assert verdict.acknowledged > 200 and verdict.lost == 0 and verdict.out_of_order == 0, verdict

    def restart() -> None:
        admin_cluster.lab.start_broker(4)
        wait_until(lambda: 4 in (live_brokers(bootstrap) or set()), timeout=120, what="broker 4 back")

    healed = replicas()
    rollback_refused_then_forgotten(args, tmp_path, capsys, restart)
    assert replicas() == healed  # broker 4 got nothing back


# Replication factor 2 over brokers 1-4, broker 4 in half of them: no load, the point is how it goes away.
PAUSED = {0: [4, 1], 1: [2, 4], 2: [3, 1], 3: [4, 3]}


def ids(value: object) -> tuple[int, ...]:
    """Broker ids from a JSON row's list."""
    return tuple(int(b) for b in value) if isinstance(value, list | tuple) else ()


def test_a_paused_broker_is_absent_once_kafka_drops_it_and_is_healed(admin_cluster: EngineLab, tmp_path: Path,
                                                                     capsys) -> None:
    """SIGSTOP: alive, sockets open, answering nothing. Kafka's own failure detection drops it (KRaft fences it
    after broker.session.timeout.ms; through ZooKeeper its session expires after zookeeper.session.timeout.ms,
    6 s in the lab), and from then on it is absent like a dead broker: noted, healed past the duration, while
    the runs' clients keep finding the brokers that answer; resumed, it registers again, is forgotten, and gets
    nothing back (docs/design/healing.md §6)."""
    from kops.lab.kafka_client import create_topics, live_brokers
    from kops.lab.kafka_client import layout as kafka_layout

    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None

    def replicas() -> Layouts:
        found = kafka_layout(bootstrap).get("paused", {})
        return {"paused": {p: ids(row["replicas"]) for p, row in found.items()}}

    create_topics(bootstrap, {"paused": {"assignments": PAUSED}})
    wait_until(lambda: len(replicas()["paused"]) == 4, what="the topic known")
    lab = admin_cluster.lab
    lab.pause_broker(4)
    try:
        wait_until(lambda: 4 not in (live_brokers(bootstrap) or {4}), timeout=90, what="broker 4 dropped by Kafka")
        wait_until(lambda: not any(4 in ids(row["isr"]) for row in kafka_layout(bootstrap).get("paused", {}).values()),
                   timeout=90, what="broker 4 out of every ISR")
        before = replicas()
        args = rebalance_args("-b", bootstrap, tmp_path)
        first_run_waits(args, tmp_path, capsys)
        healed = second_run_heals(args, tmp_path, before, replicas)

        def resume() -> None:
            lab.resume_broker(4)
            wait_until(lambda: 4 in (live_brokers(bootstrap) or set()), timeout=120, what="broker 4 back")

        rollback_refused_then_forgotten(args, tmp_path, capsys, resume)
    finally:
        if lab.paused(4):
            lab.resume_broker(4)
    assert replicas() == healed  # broker 4 got nothing back


def test_two_brokers_gone_every_run_is_refused_naming_them_and_a_dead_first_server_costs_nothing(
        admin_cluster: EngineLab, tmp_path: Path, capsys) -> None:
    """Two of four brokers killed, both holding `__kops` (replication factor 3, min.insync.replicas 2): it takes
    no write. Every run used to fail (exit 1) on its absence note, `cannot write to __kops: NotEnoughReplicasError`,
    a plan-only run without --heal-after too. Now a run without --heal-after writes nothing and a healing run's
    failed note is a refusal (exit 3) naming the absent brokers, after what is wrong with the cluster
    (docs/design/healing.md §1). The first `-b` server refuses connections (a stopped broker): the `__kops`
    consumer and producer pass it over instead of retrying it for --connect-timeout each."""
    import socket

    from kops.cluster.admin.adapter import AdminCluster
    from kops.cluster.admin.connection import AdminSettings
    from kops.lab.kafka_client import create_topics, first_answer, live_brokers

    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    create_topics(bootstrap, {"ledger": {"assignments": LEDGER, "configs": {"min.insync.replicas": "2"}}})
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        port.log.ensure_topic()  # as kops's first write makes it
    finally:
        port.close()

    def records() -> dict[str, Any]:
        described = first_answer(bootstrap, lambda client: client.describe_topics(["__kops"]))
        return described[0]["partitions"][0] if described and described[0]["partitions"] else {"leader_id": -1}

    def led() -> dict[str, Any] | None:  # one read: a second may reach a broker whose answer lacks the replicas
        found = records()
        return found if found["leader_id"] not in (-1, None) and found.get("replica_nodes") else None

    led_by = wait_until(led, what="__kops led")
    assert led_by is not None
    gone = sorted(b for b in led_by["replica_nodes"] if b != 1)[:2]  # broker 1: Kafka 4's one controller
    for broker in gone:
        admin_cluster.lab.kill_broker(broker)
    wait_until(lambda: not set(gone) & (live_brokers(bootstrap) or set(gone)), timeout=90, what="both brokers gone")
    wait_until(lambda: not set(gone) & set(records().get("isr_nodes", gone)), timeout=90, what="__kops's ISR shrunk")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        stopped = f"127.0.0.1:{probe.getsockname()[1]}"
    args = ["rebalance", "-b", f"{stopped},{bootstrap}", "--connect-timeout", "30", "--format", "json"]

    assert main(args) == 3
    doc = summary(capsys.readouterr().out)
    assert doc["status"] == "refused" and doc["absent"] == [{"broker": b, "seconds": None} for b in gone], doc
    assert f"--heal-after re-homes the replicas of absent broker(s) {gone[0]}, {gone[1]}" in doc["reason"]

    prom = tmp_path / "kops-rebalance.prom"
    assert main([*args, "--heal-after", "10s", "--metrics-file", str(prom)]) == 3
    doc = summary(capsys.readouterr().out)
    assert doc["status"] == "refused" and "exit_code" not in doc, doc
    assert f"replicas on broker(s) {gone}, which are not registered" in doc["reason"]
    assert f"2 brokers absent ({gone[0]}, {gone[1]}), more than --heal-max-brokers 1" in doc["reason"]
    assert "absent since a time kops could not note (cannot write to __kops" in doc["reason"]
    assert healing_metrics(prom) == (3, 2, 0)
    # the stopped first server is passed over at once, not retried for --connect-timeout by the __kops consumer
    # and producer: tests/unit/test_kops_log_bootstrap.py, on real sockets
