"""No acknowledged record is lost while kops moves partitions, even when a leader is killed in the middle.

As Kafka's own reassignment system test: an acks=all, idempotent producer (librdkafka) writes records numbered
per partition while `kops apply` runs; a leader of the batch in flight is killed with SIGKILL; the apply
stops at a checkpoint (health stop), the broker comes back, the apply resumes and finishes; a consumer
(kafka-python) then reads every partition: nothing acknowledged is missing, order is kept per partition.

On Kafka 3.9 through ZooKeeper, and on Kafka 4 (KRaft) through the Admin API in batches and rolling: one cluster
of each per module. The lab's fills (kops/lab/kafka_client.py) are judged here too: a window of records
unacknowledged at most, every record landed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTP

from kops.cli.main import main
from kops.cluster.zookeeper import ZkRecords
from kops.executor.journal import Journal
from kops.lab.kafka_client import create_topics, fill, first_answer, layout, send_bounded
from kops.zk_layout import paths, tool_writes
from kops.zk_layout.client import ZkClient, ZkSettings
from kops.zk_layout.reader import read_snapshot
from tests.delivery import Acks, SequenceProducer, compare, read_back
from tests.engines import EngineLab, kafka4_cluster, reset_admin_cluster, reset_real_cluster
from tests.integration.test_admin_transport import throttles
from tests.integration.test_executor import (
    apply_in_background,
    first_batch_running,
    judged,
    kops,
    make_plan,
    resume,
    throttle_configs,
)
from tests.labtools import settles, state, wait_until, wait_while_running

pytestmark = pytest.mark.lab
LEDGER = {"ledger": {p: ((p % 3) + 1, ((p + 1) % 3) + 1, ((p + 2) % 3) + 1) for p in range(6)}}
PLAYBOOK = """- hosts: all
  topics:
    - {name: ledger, config: {min.insync.replicas: "2"}}
  brokers: {decommission: [3]}
  execution: {throttle: 1MiB/s, batch: {max_partitions: 2}}
"""


def test_no_acknowledged_record_is_lost_through_a_leader_kill_a_stop_and_a_resume(kafka39: EngineLab,
                                                                                   tmp_path: Path) -> None:
    cluster = kafka39
    reset_real_cluster(cluster.lab, cluster.zk_connect)
    assert cluster.bootstrap is not None
    with ZkClient(ZkSettings(cluster.zk_connect)) as zk:
        cluster.create_and_fill(zk, LEDGER, 3)
        tool_writes.alter_config(zk, "topics", "ledger", {"min.insync.replicas": "2"})
        plan_file, plan = make_plan(tmp_path, cluster.zk_connect, playbook=PLAYBOOK)
        producer = SequenceProducer(cluster.bootstrap, "ledger", 6, rate=400).start()
        wait_until(lambda: producer.acks.count > 200, timeout=60, what="records acknowledged before the apply")

        proc = apply_in_background(plan_file, cluster.zk_connect)
        first_batch_running(proc, zk)
        first = plan.batches[0].moves
        victim = state(zk, first[0].topic, first[0].partition).leader  # the leader serving the copy
        assert zk.exists(paths.REASSIGN_PARTITIONS) is not None, "the batch is still in flight when the leader dies"
        cluster.lab.kill_broker(victim)
        _out, err = proc.communicate(timeout=180)
        assert proc.returncode == 3, err  # a health stop, at a checkpoint
        assert "health stop" in Journal(ZkRecords(zk)).latest().stop_reason

        cluster.lab.start_broker(victim)
        wait_until(lambda: victim in read_snapshot(zk).live_broker_ids, timeout=60, what="the broker back")
        wait_until(lambda: not read_snapshot(zk).under_replicated(), timeout=120, what="in sync again")
        assert resume(plan_file, cluster.zk_connect) == 0
        acks = producer.stop()
        expected = {"ledger": dict(LEDGER["ledger"])}
        for m in plan.moves:
            expected["ledger"][m.partition] = m.to_replicas
        assert judged(cluster, zk, expected) and throttle_configs(zk) == {}

    nothing_lost(acks, cluster.bootstrap)


def nothing_lost(acks: Acks, bootstrap: str) -> None:
    verdict = compare(acks, read_back(bootstrap, "ledger", 6))
    assert verdict.acknowledged > 1000
    assert verdict.lost == 0 and verdict.out_of_order == 0 and verdict.duplicates == 0, verdict


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineLab]:
    """Real Kafka 4 in KRaft, beside the module's 3.9: broker 1 is also its single quorum controller."""
    with kafka4_cluster(tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


def ledger_on_kafka4(cluster: EngineLab) -> str:
    """The emptied cluster's bootstrap, with the ledger topic created (min.insync.replicas 2), leaders elected."""
    bootstrap = cluster.bootstrap
    assert bootstrap is not None
    reset_admin_cluster(cluster.lab, bootstrap)
    spec = {"ledger": {"assignments": {p: list(r) for p, r in LEDGER["ledger"].items()},
                       "configs": {"min.insync.replicas": "2"}}}
    create_topics(bootstrap, spec)
    wait_until(lambda: all(row["leader"] != -1
                           for row in layout(bootstrap).get("ledger", {0: {"leader": -1}}).values()),
               what="every leader elected")
    return bootstrap


def moving(bootstrap: str) -> list[tuple[str, int]]:
    return sorted(first_answer(bootstrap, lambda c: c.list_partition_reassignments()))


def victim(bootstrap: str) -> int:
    """A leader serving a copy in flight, else another of its replicas: never broker 1, Kafka 4's quorum
    controller (the first batch may be two partitions it leads)."""
    rows = [layout(bootstrap)[t][p] for t, p in moving(bootstrap)]
    candidates = [row["leader"] for row in rows] + [b for row in rows for b in row["replicas"]]
    return next(b for b in candidates if b != 1)


@pytest.mark.parametrize("mode", ["batches", "rolling"])
def test_on_kafka_4_through_the_admin_api_no_acknowledged_record_is_lost(kafka4: EngineLab, tmp_path: Path,
                                                                         mode: str) -> None:
    bootstrap = ledger_on_kafka4(kafka4)
    fill(bootstrap, {"ledger": dict.fromkeys(LEDGER["ledger"], 3 * 1024 * 1024)})
    playbook = PLAYBOOK if mode == "batches" else PLAYBOOK.replace("max_partitions: 2}",
                                                                   "max_partitions: 2}, mode: rolling")
    plan_file, plan = make_plan(tmp_path, bootstrap, playbook=playbook, flag="-b")
    assert (plan.rolling is not None) == (mode == "rolling")
    producer = SequenceProducer(bootstrap, "ledger", 6, rate=400).start()
    wait_until(lambda: producer.acks.count > 200, timeout=60, what="records acknowledged before the apply")

    # a lease longer than Kafka takes to fail the victim over (it may lead __kops): the apply must health-stop,
    # not lose its lock (docs/design/transports.md)
    where = ["-b", bootstrap, "--yes", "--format", "json", "--poll", "0.2", "--session-timeout", "30"]
    applying = kops("apply", str(plan_file), *where)
    wait_while_running(applying, lambda: bool(moving(bootstrap)), what="a move in flight")
    killed = victim(bootstrap)
    kafka4.lab.kill_broker(killed)
    out, err = applying.communicate(timeout=180)
    # a checkpoint stop: the health check, the next batch or move needing the broker that is gone, or (the kill
    # landing as the last batch finished) its throttles, which only it answers for, not yet removed
    # on failure, the stop's own lines: the last events name why the apply stopped
    stops = ("health stop", "not registered", "could not be restored")
    assert applying.returncode == 3 and any(stop in out for stop in stops), \
        f"exit {applying.returncode}; last events: {out[-2500:]}\n{err}"

    kafka4.lab.start_broker(killed)
    wait_until(lambda: all(set(row["isr"]) == set(row["replicas"]) for row in layout(bootstrap)["ledger"].values()),
               timeout=120, what="in sync again")
    assert main(["apply", "--resume", str(plan_file), *where, "--throttle", "20MiB/s"]) == 0
    acks = producer.stop()
    expected = dict(LEDGER["ledger"]) | {m.partition: m.to_replicas for m in plan.moves}
    wait_until(lambda: {p: row["replicas"] for p, row in layout(bootstrap)["ledger"].items()} == expected,
               timeout=30, what="Kafka's metadata at the targets")
    assert settles(lambda: throttles(bootstrap), {})
    nothing_lost(acks, bootstrap)


class Watched(KafkaProducer):
    """A real producer that notes the most records it had unacknowledged at any send."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=20, batch_size=256 * 1024)
        self.futures: list[Any] = []
        self.peak = 0

    def send(self, *args: Any, **kwargs: Any) -> Any:
        future = super().send(*args, **kwargs)
        self.futures.append(future)
        self.peak = max(self.peak, sum(1 for f in self.futures if not f.is_done))
        return future


def test_a_fill_keeps_a_window_unacknowledged_and_every_record_lands(kafka4: EngineLab) -> None:
    """The lab's fill waits for acknowledgements past a window: sent all at once (before), a fill that the
    cluster took longer than the producer's delivery timeout (120 s) to accept expired its last batches
    (bench/rolling.py's 560 MiB at its defaults), since every batch waited for all those before it."""
    bootstrap = ledger_on_kafka4(kafka4)
    out = Watched(bootstrap)
    try:
        written = send_bounded(out, {("ledger", p): 128 for p in LEDGER["ledger"]}, 16384, window=1024 * 1024)
    finally:
        out.close(timeout=10)
    assert written == 768 and out.peak <= 64 + 1  # the old fill: all 768 at once
    reader = KafkaConsumer(bootstrap_servers=bootstrap.split(","))
    try:
        ends = reader.end_offsets([KafkaTP("ledger", p) for p in LEDGER["ledger"]])
    finally:
        reader.close()
    assert set(ends.values()) == {128}
