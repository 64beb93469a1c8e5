"""kops through Kafka's Admin API (`-b`): real Kafka 4 in KRaft mode, and real Kafka 3.9 whose brokers serve the
same API. Kafka is the judge: layouts, configs and throttles are read back through the Admin API, execution
records and the lock through the `__kops` topic kops keeps them in.

One cluster per engine for the whole module, emptied between tests (tests/engines.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource

from kops.cli.main import main
from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.connection import AdminSettings
from kops.executor.journal import Journal
from kops.executor.record import ExecutionRecord
from kops.lab.kafka_client import create_topics, first_answer, layout
from kops.model import plan_format
from kops.model.plan import Plan
from kops.model.throttle_keys import ALL_KEYS
from tests.engines import EngineLab, fill_real
from tests.integration.test_executor import ORIGINAL, kops, targets
from tests.integration.test_executor import make_plan as plan_live
from tests.labtools import settles, wait_until

pytestmark = pytest.mark.lab
MB = 1024 * 1024

def kafka4_only(admin_engine: EngineLab, request: pytest.FixtureRequest, why: str) -> str:
    """The bootstrap servers of the emptied Kafka 4 cluster; skipped on other engines (before anything is reset)."""
    if admin_engine.engine != "kafka-4":
        pytest.skip(why)
    cluster: EngineLab = request.getfixturevalue("admin_cluster")
    assert cluster.bootstrap is not None
    return cluster.bootstrap


def create_and_fill(bootstrap: str, megabytes: float) -> None:
    spec = {name: {"assignments": {p: list(r) for p, r in a.items()}} for name, a in ORIGINAL.items()}
    create_topics(bootstrap, spec)
    fill_real(bootstrap, ORIGINAL, megabytes)


def replicas(bootstrap: str) -> dict[str, dict[int, tuple[int, ...]]]:
    return {t: {p: row["replicas"] for p, row in parts.items()}  # type: ignore[misc]  # plain JSON rows
            for t, parts in layout(bootstrap).items() if t in ORIGINAL}


def throttles(bootstrap: str) -> dict[str, dict[str, str]]:
    """Every throttle config in force, as Kafka reports it."""
    return first_answer(bootstrap, throttles_of)


def throttles_of(client: KafkaAdminClient) -> dict[str, dict[str, str]]:
    """Every throttle config in force, as this client's broker reports it."""
    brokers = [str(b["broker_id"]) for b in client.describe_cluster()["brokers"]]
    resources = [ConfigResource("TOPIC", t) for t in client.list_topics() if not t.startswith("__")]
    resources += [ConfigResource("BROKER", b) for b in brokers]
    found: dict[str, dict[str, str]] = {}
    for kind, entities in client.describe_configs(resources).items():
        for name, values in entities.items():
            keys = {k: str(v["value"]) for k, v in values.items() if k in ALL_KEYS
                    and v.get("config_source", "").startswith("DYNAMIC") and v.get("value") not in (None, "")}
            if keys:
                found[f"{kind}/{name}"] = keys
    return found


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    found = first_answer(bootstrap, lambda c: c.describe_configs([ConfigResource("TOPIC", topic)]))
    return {k: str(v["value"]) for k, v in found["topic"][topic].items()
            if v.get("config_source") == "DYNAMIC_TOPIC_CONFIG"}


def latest_record(bootstrap: str) -> ExecutionRecord | None:
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        return Journal(port.records()).latest()
    finally:
        port.close()


def lock_holder_pid(bootstrap: str) -> int | None:
    """The pid of the process holding kops's lease in `__kops`, as a reader with no claim of its own sees it."""
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        holder = port.holder()
        return None if holder is None else holder.get("pid")
    finally:
        port.close()


def make_plan(tmp_path: Path, bootstrap: str, throttle: str) -> tuple[Path, Plan]:
    return plan_live(tmp_path, bootstrap, throttle, flag="-b")


def apply_in_flight(tmp_path: Path, bootstrap: str, megabytes: float, throttle: str,
                    *options: str) -> tuple[Path, Plan, subprocess.Popen]:
    """Topics filled, planned, and `kops apply -b` running in the background with a batch in flight."""
    create_and_fill(bootstrap, megabytes)
    plan_file, plan = make_plan(tmp_path, bootstrap, throttle)
    applying = kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2", *options)
    wait_in_flight(bootstrap, applying)
    return plan_file, plan, applying


def wait_in_flight(bootstrap: str, process: subprocess.Popen | None = None) -> None:
    def moving() -> bool:
        assert process is None or process.poll() is None, process.communicate() if process else ""
        return bool(first_answer(bootstrap, lambda c: c.list_partition_reassignments()))

    wait_until(moving, timeout=90, what="a batch in flight")


def test_apply_rollback_and_rollback_of_the_rollback(tmp_path: Path, admin_cluster: EngineLab, capsys) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    create_and_fill(bootstrap, 1)
    first_answer(bootstrap, lambda c: c.alter_configs(  # the operator's own throttle, above ours: it stays
        [ConfigResource("BROKER", "1", configs={"leader.replication.throttled.rate": ("SET", "104857600")})],
        incremental=True, raise_on_unknown=False))
    plan_file, plan = make_plan(tmp_path, bootstrap, "4MiB/s")
    assert len(plan.batches) >= 2 and plan.connect == f"kafka://{bootstrap}"
    assert main(["status", "-b", bootstrap]) == 0 and latest_record(bootstrap) is None and \
        "__kops" not in first_answer(bootstrap, lambda c: c.list_topics())  # reads never create kops's topic
    capsys.readouterr()
    assert main(["apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [e["event"] for e in events].count("batch_done") == len(plan.batches)
    assert any(e["event"] == "progress" and e["bytes_done"] > 0 for e in events)  # DescribeLogDirs: bytes, not guesses
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="Kafka's metadata at the targets")
    assert settles(lambda: topic_config(bootstrap, "pay"), {"retention.ms": "86400000"})
    assert settles(lambda: throttles(bootstrap), {"broker/1": {"leader.replication.throttled.rate": "104857600"}})
    leaders = {(m.topic, m.partition): m.to_replicas[0] for m in plan.moves}
    wait_until(lambda: all(layout(bootstrap)[t][p]["leader"] == leader for (t, p), leader in leaders.items()),
               what="preferred leaders as planned (ElectLeaders)")
    record = latest_record(bootstrap)
    assert record is not None and record.status == "done" and (tmp_path / f"plan.{record.id}.execution.json").exists()

    # rollback from the plan alone: the cluster is named in it (kafka://...), so no -b is needed
    assert main(["rollback", str(plan_file), "--yes", "--format", "json", "--poll", "0.2"]) == 0
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout, replica order included")
    assert settles(lambda: topic_config(bootstrap, "pay"), {})
    assert settles(lambda: throttles(bootstrap), {"broker/1": {"leader.replication.throttled.rate": "104857600"}})
    rolled = latest_record(bootstrap)
    assert rolled is not None and rolled.kind == "rollback" and rolled.of == record.id and rolled.status == "done"

    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--execution", rolled.id, "--format", "json",
                 "--poll", "0.2"]) == 0
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the plan again")


def test_kill_9_mid_batch_then_resume_waits_for_the_lease(tmp_path: Path, admin_engine: EngineLab,
                                                         request: pytest.FixtureRequest) -> None:
    bootstrap = kafka4_only(admin_engine, request, "the lease is the same on every engine; tested once, on Kafka 4")
    plan_file, plan, applying = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s", "--session-timeout", "6")
    applying.send_signal(signal.SIGKILL)
    applying.communicate(timeout=30)
    # the killed holder's lease is still live: the resume waits for it (a live holder elsewhere would be exit 5)
    assert main(["apply", "--resume", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"]) == 0
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the targets")
    assert settles(lambda: throttles(bootstrap), {})
    record = latest_record(bootstrap)
    assert record is not None and record.status == "done"


def test_two_applies_race_exactly_one_runs(tmp_path: Path, admin_engine: EngineLab,
                                           request: pytest.FixtureRequest) -> None:
    bootstrap = kafka4_only(admin_engine, request, "the lease is the same on every engine; tested once, on Kafka 4 "
                                                   "(the KIP-455 cancel on Kafka 3.9: test_cancel_now_...)")
    create_and_fill(bootstrap, 1)
    plan_file, _plan = make_plan(tmp_path, bootstrap, "128KiB/s")
    racers = [kops("apply", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2")
              for _ in range(2)]
    wait_until(lambda: any(r.poll() is not None for r in racers), timeout=90, what="one racer to give up")
    loser = next(r for r in racers if r.poll() is not None)
    winner = next(r for r in racers if r is not loser)
    _out, err = loser.communicate()
    assert loser.returncode == 5, err
    assert "the cluster is locked by" in err and "pid" in err
    wait_in_flight(bootstrap, winner)
    winner.send_signal(signal.SIGINT)
    winner.send_signal(signal.SIGINT)  # twice: cancel the batch in flight
    winner.communicate(timeout=120)
    assert winner.returncode == 3
    # the rollback at a rate of its own (the plan's 128 KiB/s took half a minute for what the winner had moved)
    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2",
                 "--throttle", "20MiB/s"]) == 0
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout")


def test_a_paused_holder_loses_its_lease_and_stops(tmp_path: Path, admin_engine: EngineLab,
                                                   request: pytest.FixtureRequest) -> None:
    bootstrap = kafka4_only(admin_engine, request, "the lease is the same on every engine; tested once, on Kafka 4")
    plan_file, plan, holder = apply_in_flight(tmp_path, bootstrap, 1, "256KiB/s", "--session-timeout", "3")
    assert lock_holder_pid(bootstrap) == holder.pid, "the paused apply holds the lease"
    holder.send_signal(signal.SIGSTOP)
    try:
        wait_until(lambda: lock_holder_pid(bootstrap) is None, timeout=30, what="the paused holder's lease to lapse")
        successor = kops("apply", "--resume", str(plan_file), "-b", bootstrap, "--yes", "--format", "json",
                         "--poll", "0.2", "--throttle", "20MiB/s")
        wait_until(lambda: lock_holder_pid(bootstrap) == successor.pid, timeout=60, what="the successor's lease")
    finally:
        holder.send_signal(signal.SIGCONT)
    _out, err = holder.communicate(timeout=60)
    assert holder.returncode == 1 and "the cluster lock was lost" in err, err
    out, err = successor.communicate(timeout=180)
    assert successor.returncode == 0, err
    wait_until(lambda: replicas(bootstrap) == targets(plan), timeout=30, what="the targets")
    assert settles(lambda: throttles(bootstrap), {})


def test_rebalance_through_the_admin_api(tmp_path: Path, admin_cluster: EngineLab, capsys) -> None:
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    create_and_fill(bootstrap, 0.2)  # brokers 1-3 hold everything, broker 4 nothing
    plan_file = tmp_path / "rebalance.json"
    capsys.readouterr()
    assert main(["rebalance", "-b", bootstrap, "--max-moves", "4", "--throttle", "20MiB/s", "--out", str(plan_file),
                 "--apply", "--yes", "--format", "json", "--poll", "0.2"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["status"] == "applied" and report["moves"] == 4
    assert sum(4 in r for parts in replicas(bootstrap).values() for r in parts.values()) == 4
    # without --sizes, the sizes the cluster reports (DescribeLogDirs), as kops plan reads them: no move of 0 B
    planned = plan_format.loads(plan_file.read_bytes(), str(plan_file))
    assert all(m.bytes > 0 for m in planned.moves) and planned.summary.estimated_seconds, planned.moves
    assert main(["rollback", str(plan_file), "-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2"]) == 0
    wait_until(lambda: replicas(bootstrap) == ORIGINAL, timeout=30, what="the original layout")


def test_topic_writes_through_the_port_are_answers_not_failures(admin_engine: EngineLab,
                                                                request: pytest.FixtureRequest) -> None:
    """What apply and resume rely on: creating a topic that exists says so (no retry round), adding partitions
    that exist adds nothing, deleting a topic already gone is done. On Kafka 4 only: Kafka 3.9's brokers
    auto-create a topic that metadata requests name right after its deletion, which left it behind for the
    next test's reset."""
    bootstrap = kafka4_only(admin_engine, request, "KRaft only: see the docstring")
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        assert port.create_topic("port", {0: (1, 2), 1: (2, 3)}, {"retention.ms": "3600000"}) is True
        wait_until(lambda: len(layout(bootstrap).get("port", {})) == 2, what="topic created")
        assert port.create_topic("port", {0: (1, 2), 1: (2, 3)}, {}) is False
        assert port.add_partitions("port", {2: (3, 1)}) is True
        wait_until(lambda: len(layout(bootstrap).get("port", {})) == 3, what="partition added")
        assert port.add_partitions("port", {2: (3, 1)}) is False
        assert port.read_config("topics", "port") == {"retention.ms": "3600000"}
        port.delete_topic("port")
        wait_until(lambda: "port" not in layout(bootstrap), timeout=60, what="topic deleted")
        port.delete_topic("port")
    finally:
        port.close()


def test_reads_show_kops_writes_whichever_broker_answers_and_a_later_foreign_change_wins(
        admin_cluster: EngineLab) -> None:
    """Each broker answers a topic's DescribeConfigs from its own view, updated asynchronously, and kafka-python
    asks whichever node is least loaded: a throttle list written and restored batch after batch must read
    back as written (else a batch takes its predecessor's list for "what was there" and restores it at its
    end). Someone else's change after kops's write is taken as the truth once it persists."""
    bootstrap = admin_cluster.bootstrap
    assert bootstrap is not None
    create_and_fill(bootstrap, 0.01)
    key = "leader.replication.throttled.replicas"
    port = AdminCluster(AdminSettings(bootstrap))
    try:
        for n in range(12):  # a write, a restore: what each batch does, as fast as kops does it
            written = f"{n % 6}:{1 + n % 3}"
            port.alter_config("topics", "pay", {key: written})
            assert port.snapshot({"pay"}).topics["pay"].config.get(key) == written
            port.alter_config("topics", "pay", {key: None})
            assert key not in port.snapshot({"pay"}).topics["pay"].config
            assert key not in port.read_config("topics", "pay")
        port.alter_config("topics", "pay", {key: "0:1"})
        first_answer(bootstrap, lambda c: c.alter_configs(  # an operator's change after kops's
            [ConfigResource("TOPIC", "pay", configs={key: ("SET", "5:3")})], incremental=True, raise_on_unknown=False))
        wait_until(lambda: port.read_config("topics", "pay").get(key) == "5:3", timeout=30,
                   what="the operator's value read as the truth")
        assert port.snapshot({"pay"}).topics["pay"].config.get(key) == "5:3"
    finally:
        port.close()


def test_sasl_credentials_come_from_the_command_config_and_a_wrong_password_is_one_line(
        tmp_path: Path, admin_engine: EngineLab, capsys) -> None:
    """The lab's brokers also listen with SASL_PLAINTEXT (PLAIN): kops reads through it with the client properties
    Kafka's own tools take, and a wrong password is one line, exit 1, with no secret in it."""
    from kops.lab.kafka_config import LAB_PASSWORD, LAB_USER

    sasl = admin_engine.lab.sasl_bootstrap()
    assert sasl, "the lab's brokers have a SASL listener"
    right, wrong = tmp_path / "client.properties", tmp_path / "wrong.properties"
    jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{}\" password=\"{}\";"
    for file, password in ((right, LAB_PASSWORD), (wrong, "not-the-password")):
        file.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                        f"sasl.jaas.config={jaas.format(LAB_USER, password)}\n")
    capsys.readouterr()
    assert main(["state", "-b", sasl, "--command-config", str(right), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["brokers"] == 4
    assert main(["state", "-b", sasl, "--command-config", str(wrong), "--connect-timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "not-the-password" not in err, err
    assert "authentication" in err.lower(), err
